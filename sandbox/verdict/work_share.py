"""Shares of the reference's work done by the candidate's kernels and by torch.

The runner records, for the reference's forward and for each of the
candidate's correctness trials, the same dispatch-level data flow
(``sandbox/runner/measure/provenance.py``): the reference's compute ops with their
FLOPs and bytes, and for the candidate the torch compute ops whose results
the returned values depend on. Here, in the judge, on plain numbers:

    torch share  = torch FLOPs the candidate's outputs depend on / reference FLOPs
    kernel share = 1 - torch share (0 if some output was not written by a kernel)

and the same in bytes. The FLOPs torch did in the call at all count too, where
more (``all_torch``): a kernel handed an address in a form the data flow cannot
follow (two 32-bit halves, an offset from another tensor) would otherwise have
torch's work credited to it; an honest candidate's torch work feeds its outputs.
The check (``kernel_provenance``) is decided on FLOPs:
torch may do at most ``TORCH_SHARE_MAX`` of the reference's FLOPs as glue (a
bias add after a kernel's matmul, an affine after a kernel's normalisation).
Bytes are reported, not enforced: a bias add moves as many bytes as the
product it follows writes.
"""

from __future__ import annotations

from typing import Any

# At most this share of the reference's FLOPs may be torch work that the
# returned values depend on; the kernels must do the rest.
TORCH_SHARE_MAX = 0.25


def _share(part: float, whole: float) -> float:
    if whole <= 0:
        return 0.0 if part <= 0 else 1.0
    return part / whole


def shares(ref_work: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    """Kernel and torch shares of one trial (see the module docstring)."""
    torch_work = prov.get("torch") or {}
    all_work = prov.get("all_torch") or {}
    if float(all_work.get("flops", 0.0)) > float(torch_work.get("flops", 0.0)):
        torch_work = all_work
    outputs = prov.get("outputs") or []
    from_kernels = bool(outputs) and all(o.get("kernel") and not o.get("unrecorded") for o in outputs)
    out: dict[str, Any] = {"outputs_from_kernels": from_kernels, "torch_share_max": TORCH_SHARE_MAX}
    for unit in ("flops", "bytes"):
        t = min(1.0, _share(float(torch_work.get(unit, 0.0)), float(ref_work.get(unit, 0.0))))
        out[f"torch_share_{unit}"] = round(t, 4)
        out[f"kernel_share_{unit}"] = round(1.0 - t, 4) if from_kernels else 0.0
    out["reference"] = {k: ref_work.get(k) for k in ("flops", "bytes", "by_op")}
    out["torch"] = {k: torch_work.get(k) for k in ("flops", "bytes", "by_op")}
    out["kernel_launches"] = prov.get("kernel_launches", 0)
    return out


def problems(ref_work: dict[str, Any], prov: dict[str, Any] | None) -> list[str]:
    """Why one trial's outputs do not come from the kernels (empty if they do)."""
    if not prov:
        return ["no record of where the outputs came from"]
    found = []
    for k, o in enumerate(prov.get("outputs") or []):
        if o.get("unrecorded"):
            found.append(f"output {k} holds values made outside every recorded torch op and kernel "
                         "(dispatch switched off, numpy, or memory from an earlier call)")
        elif not o.get("kernel"):
            found.append(f"output {k} was not written by any custom kernel in this call: torch made its values "
                         "(the kernels touch it only through control: a flag, a scale of 1, a zero added), or a "
                         "kernel that was handed it left it as it was")
    s = shares(ref_work, prov)
    if s["torch_share_flops"] > TORCH_SHARE_MAX:
        ops = sorted((s["torch"].get("by_op") or {}).items(), key=lambda kv: -kv[1][0])
        named = ", ".join(f"aten::{op} {v[0]:.3g} FLOPs" for op, v in ops[:5])
        found.append(f"torch computed {s['torch_share_flops']:.0%} of the reference's FLOPs in the call (at "
                     f"most {TORCH_SHARE_MAX:.0%} may be glue), whether or not the outputs are seen to depend on "
                     f"it: {named}")
    return found


def describe(s: dict[str, Any]) -> str:
    """One line: 'kernels 100% of FLOPs / 98% of bytes, torch 0% / 2%'."""
    return (f"kernels did {s['kernel_share_flops']:.0%} of the reference's FLOPs "
            f"({s['kernel_share_bytes']:.0%} of its bytes), torch {s['torch_share_flops']:.0%} "
            f"({s['torch_share_bytes']:.0%})")


def fewest_launches(work: dict[str, Any], post: dict[str, Any] | None) -> int:
    """The fewest kernel launches any recorded call made: the first default trial's
    (``work``, from ``shares``) and each timed call replayed under the recorder."""
    counts = [int(work.get("kernel_launches") or 0)] if work else []
    counts += [int(rep.get("kernel_launches") or 0) for rep in (post or {}).get("provenance_reps") or []
               if isinstance(rep, dict) and rep]
    return min(counts) if counts else 0
