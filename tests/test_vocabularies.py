"""One vocabulary per concept (issue 58): the op families and the elementwise ops are
written once and every package that names them reads that one table. A family or an op
added in one place and missing from another fails here."""

from __future__ import annotations

import torch

from agents.offline import templates
from agents.offline.ir import vocabulary
from agents.offline.ir.expr import Expr, const
from agents.offline.match import dispatch, fingerprint
from agents.offline.templates import ops
from knowledge_base import model, problem_identity
from sandbox.verdict import ops as judge_ops
from taxonomy import op_families


def test_the_judge_reads_the_one_table() -> None:
    assert judge_ops.FAMILIES == {n: (f.weight, set(f.ops)) for n, f in op_families.FAMILIES.items()}
    for name, fam in op_families.FAMILIES.items():
        for op in fam.ops:
            assert judge_ops.family(op) == (name, fam.weight)


def test_the_knowledge_base_files_every_op_and_spelling_under_the_tables_family() -> None:
    assert model.FAMILIES == op_families.NAMES
    for name, fam in op_families.FAMILIES.items():
        for op in fam.ops | fam.spellings:
            assert problem_identity.op_families({"ops": {op: 1}}) == [name], op
    # a recurrent reference is "rnn" for the knowledge base as for the judge (it was "other")
    assert problem_identity.op_families({"ops": {"mkldnn_rnn_layer": 1}})[0] == "rnn"


def test_every_engine_template_family_does_the_work_of_one_op_family() -> None:
    assert set(templates.NAMES) == set(op_families.TEMPLATES)
    assert set(op_families.TEMPLATES.values()) <= set(op_families.NAMES)


def test_every_elementwise_op_the_ir_names_is_written_and_evaluated() -> None:
    x = Expr("input", "x", shape=(4, 3), dtype="float32")
    value = torch.randn(4, 3, dtype=torch.float64).abs() + 0.5  # in every op's domain
    for op in vocabulary.ELEMENTWISE:
        node = Expr("op", op, op=op, args=(x,), shape=(4, 3), dtype="float32")
        if op in vocabulary.PARAMETRIC:
            node = Expr("op", op, op=op, args=(x, *(const(0.5 if d in (None, vocabulary.REQUIRED) else d)
                                                    for _, d in vocabulary.PARAMETRIC[op])), shape=(4, 3))
        elif op in vocabulary.BINARY:
            node = Expr("op", op, op=op, args=(x, x), shape=(4, 3), dtype="float32")
        assert ops.supported_elementwise(node) is None, op
        out = fingerprint.evaluate(node, {id(x): value})
        assert out.shape == (4, 3) and torch.isfinite(out).all(), op
    assert set(dispatch._OPS_UNARY) <= vocabulary.UNARY
