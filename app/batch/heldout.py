"""Held-out sizes: does a kernel that passed stay correct at sizes the agent never saw?

During the search the judge runs every candidate at the reference's default
sizes and at two shrinks (x3/4, odd and proportional). Here the best kernel is
judged once more against a copy of the reference whose module-level size
constants (int literals >= 8) are *grown* instead: first to an odd x1.25
(breaks power-of-two and divisibility assumptions, and exceeds any size the
search used), and, when the reference itself cannot run at those sizes (for
instance channels that must stay divisible by a group count), to x2, which
keeps every divisibility relation between sizes. The copy is made by editing
the syntax tree (`ast`); nothing is executed here. Constants derived by
arithmetic from other constants follow their inputs. The held-out judge checks
correctness only (``held_out_options``): no timed pass, which is the final
evaluation's, of the same code.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sandbox import EvalOptions, ProblemError

SCALES: tuple[tuple[str, Callable[[int], int]], ...] = (
    ("x1.25 odd", lambda v: round(v * 1.25) | 1),
    ("x2", lambda v: v * 2),
)
# A problem scaled down by --fit-memory: growing it would leave the budget the user
# set (a 1 GB call grown x1.25 per size is 1.6 GB, and the judge grows one size more),
# so its held-out sizes are shrinks the search never used (it saw x3/4).
SHRINK_SCALES: tuple[tuple[str, Callable[[int], int]], ...] = (
    ("x0.8 odd", lambda v: round(v * 0.8) | 1),
    ("x0.5", lambda v: max(8, v // 2)),
)
# judge(reference_source, reference_name, candidate_source) -> the judge's result JSON;
# raises ProblemError when the reference is unusable at those sizes.
JudgeFn = Callable[[str, str, str], dict[str, Any]]


def scaled_source(source: str, scale: Callable[[int], int]) -> tuple[str, dict[str, int]] | None:
    """The reference with its literal size constants scaled, and the new values;
    None when it has no such constant (its sizes are not ours to change)."""
    tree = ast.parse(source)
    changed: dict[str, int] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        value = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Constant)):
            continue
        if type(value.value) is int and value.value >= 8:
            new = scale(value.value)
            node.value = ast.copy_location(ast.Constant(new), value)
            changed[target.id] = new
    if not changed:
        return None
    return ast.unparse(tree) + "\n", changed


def held_out_options(options: EvalOptions) -> EvalOptions:
    """The judge's options for a held-out size: correctness only, untimed. The speed, and the
    checks only a timed pass makes (the outside clock, the outputs after timing), are the
    final evaluation's, of the same code; at a GB a call the timing was most of the cost."""
    return replace(options, trials=3, time_reps=0, timing_sets=0, compile_baseline=False)


def held_out(judge: JudgeFn, reference: str, name: str, candidate: str,
             scales: tuple[tuple[str, Callable[[int], int]], ...] = SCALES) -> dict[str, Any]:
    """`status`: pass | fail | unavailable (no size constants, or the reference
    cannot run at any held-out size); `sizes` are the held-out constants used."""
    tried: list[dict[str, Any]] = []
    for label, scale in scales:
        scaled = scaled_source(reference, scale)
        if scaled is None:
            return {"status": "unavailable", "why": "the reference has no module-level size constants", "tried": []}
        source, sizes = scaled
        try:
            result = judge(source, f"{name}_heldout.py", candidate)
        except ProblemError as exc:
            tried.append({"scale": label, "sizes": sizes, "why": str(exc)[:500]})
            continue
        return {"status": "pass" if result.get("verdict") == "pass" else "fail", "scale": label, "sizes": sizes,
                "also_judged_at": result.get("perturbed_sizes", []), "reasons": result.get("reasons", []),
                "tried": tried}
    return {"status": "unavailable", "why": "the reference cannot run at any held-out size", "tried": tried}
