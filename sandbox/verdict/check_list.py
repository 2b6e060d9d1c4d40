"""Every check the judge reports, listed once: its place in the result, whether
its failure means the numbers are wrong, and where a coder reads it in the
verifier's feedback. The judge's result order, ``EvalResult.correct`` and the
verifier's feedback are all read from here (docs/architecture.md, "Adding a
judge check")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckSpec:
    name: str
    numeric: bool = False  # a failure means the numbers are wrong (``correct`` is False)
    feedback: int | None = None  # rank in the coder's feedback (None: left to the reasons)


# In the order the result lists them.
CHECKS = (
    CheckSpec("compile", feedback=0),
    CheckSpec("signature", feedback=1),
    CheckSpec("source_policy", feedback=2),
    CheckSpec("runtime", feedback=3),
    CheckSpec("correctness", numeric=True, feedback=5),
    CheckSpec("perturbed_sizes", numeric=True, feedback=6),
    CheckSpec("domain_inputs", numeric=True, feedback=6),
    CheckSpec("output_format", numeric=True, feedback=4),
    CheckSpec("output_layout", feedback=4),
    CheckSpec("fresh_outputs", feedback=4),
    CheckSpec("finite", numeric=True, feedback=7),
    CheckSpec("inputs_unchanged", numeric=True, feedback=8),
    CheckSpec("deterministic", numeric=True),
    CheckSpec("post_timing", numeric=True, feedback=9),
    CheckSpec("kernel_launched", feedback=10),
    CheckSpec("kernel_provenance", feedback=11),
    CheckSpec("sampled_provenance", feedback=11),
    CheckSpec("kernel_does_work", feedback=12),
    CheckSpec("no_reference_ops", feedback=13),
    CheckSpec("no_stray_work"),
    CheckSpec("no_tampering"),
    CheckSpec("timer_corroborated"),
    CheckSpec("within_physical_limits"),
)

ORDER = tuple(c.name for c in CHECKS)
NUMERIC = tuple(c.name for c in CHECKS if c.numeric)
FEEDBACK_ORDER = tuple(c.name for c in sorted((c for c in CHECKS if c.feedback is not None),
                                              key=lambda c: c.feedback or 0))
