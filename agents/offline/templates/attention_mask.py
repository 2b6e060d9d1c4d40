"""The causal mask a hand-written attention reads from a buffer (``ir/attention.py``),
checked by the candidate before its causal kernel runs, on either backend.

The reference masks its scores with ``masked_fill(bias[..., :L, :L] == 0, -inf)``, and
its constructor makes ``bias`` the lower triangle of ones: the kernel's causal loop is that
mask. A buffer changed since (another state_dict loaded into the model) is refused with
an error, never ignored.
"""

from __future__ import annotations

from typing import Any

HOST = '''def causal_mask_holds(mask: torch.Tensor, n: int) -> bool:
    """Whether mask[..., :n, :n] is nonzero exactly on and below the diagonal."""
    cut = mask[..., :n, :n]
    lower = torch.ones(n, n, dtype=torch.bool, device=cut.device).tril()
    return bool(torch.equal(cut != 0, lower.expand(cut.shape)))
'''


def checked(spec: dict[str, Any], ctx: Any, call: str) -> tuple[list[str], list[str]]:
    """forward's lines for ``call`` (the mask checked first when the match reads one) and the
    host code they need."""
    if not spec.get("mask"):
        return [call], []
    why = f"{spec['mask']} is not the causal mask this kernel computes (not the lower triangle of ones)"
    return [f"if not causal_mask_holds({ctx.param_access(spec['mask'])}, {ctx.leaf_arg(spec['q'])}.shape[-2]):",
            f"    raise ValueError({why!r})", call], [HOST]
