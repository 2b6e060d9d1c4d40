"""Which torch ops count as "the main computation" of a reference.

Ops are grouped into families (a candidate calling ``einsum`` where the
reference calls ``mm`` still hands the matmul to torch). The reference's main
families are those of its highest weight. A candidate fails if it runs any op
of a main family of weight >= 2, or any op of a family heavier than the
reference's heaviest (a row mean done by ``torch.mv``, a reduction inside an
elementwise problem); for purely elementwise references (weight 1) it also
fails if it runs every op the reference runs. Products (weight 3: matmul,
convolution, attention) stand in for each other -- attention is two batched
products, a convolution an unfolded one -- so where the reference's heaviest
work is a product, a candidate running a product of any of those families
hands it to torch (attention written out as matmul + softmax done by torch's
``scaled_dot_product_attention``; a convolution done by ``mm`` on an unfold).
Elementwise work spelled with
other ops (``clamp`` for ``relu``) is left to the ``kernel_does_work`` check,
which re-runs forward with the kernels skipped.
"""

from __future__ import annotations

from taxonomy import op_families

# The judge's view of the one table (taxonomy/op_families.py): weight and aten ops per family.
FAMILIES: dict[str, tuple[int, set[str]]] = {name: (f.weight, set(f.ops)) for name, f in op_families.FAMILIES.items()}
PRODUCTS = op_families.PRODUCTS
_BY_OP = {op: (name, weight) for name, (weight, ops) in FAMILIES.items() for op in ops}


def family(op: str) -> tuple[str, int]:
    """(family, weight); an op of no listed family is its own family of weight 1."""
    return _BY_OP.get(op, (op, 1))


def main_families(reference_ops: set[str]) -> tuple[int, set[str]]:
    if not reference_ops:
        return 0, set()
    tagged = [family(op) for op in reference_ops]
    top = max(w for _, w in tagged)
    return top, {name for name, w in tagged if w == top}


def handed_off(reference_ops: set[str], candidate_ops: set[str]) -> list[str]:
    """The candidate ops that do the reference's main computation (empty if none)."""
    weight, mains = main_families(reference_ops)
    heavier = {op for op in candidate_ops
               if family(op)[1] >= 2 and (family(op)[1] > weight or family(op)[1] >= weight >= PRODUCTS)}
    if weight >= 2:
        return sorted(heavier | {op for op in candidate_ops if family(op)[0] in mains})
    if reference_ops and reference_ops <= candidate_ops:
        return sorted(heavier | reference_ops)
    return sorted(heavier)
