"""The tuning pass, judge side: many variants of a proposal timed cheaply, fastest first.

The search hands over the variants (candidate files with native C sources); the
judge reads each one's text policy, builds every source in one build job (on
every granted CPU; cached per machine like any build) and runs one ``tune``
job (``runner/phases/tune.py``): the variants' outputs compared with the reference's
on one input set, then the right ones and eager timed set by set. Nothing here
is a verdict or a reported speedup: the search sends the fastest few to the
full judge (``Judge.evaluate``), which decides from scratch.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from . import native_sources
from .drivers.base import JobOutcome, SandboxError
from .errors import ProblemError
from .native import build as native_build
from .native_sources import NativeSource
from .policy import native as policy_native
from .policy import python as policy
from .problem import load_problem, parse_source
from .verdict import tolerances

# Seconds of timing per tuning pass (all variants and eager together), and input sets.
TUNE_BUDGET_S = 5.0
TUNE_SETS = 9
# Seconds for the whole pass in its job (checks and timing): past it, the variants not yet
# checked are left out, the first ones (the engine's preferred) always in (``runner/phases/tune.py``).
TUNE_PASS_BUDGET_S = 20.0
STATUSES = ("timed", "wrong", "error", "policy", "build", "skipped")


@dataclass
class Tuned:
    index: int
    status: str = "error"          # STATUSES: timed, or why not
    median_ms: float | None = None
    times_ms: list[float] = field(default_factory=list)
    detail: str = ""


@dataclass
class TuneResult:
    variants: list[Tuned]
    eager_ms: float | None = None
    elapsed_s: float = 0.0
    build_s: float = 0.0
    label: str = ""

    def order(self) -> list[int]:
        """Variant indices, the timed ones fastest first, then the rest as given
        (the full judge tells those why)."""
        timed = sorted((v for v in self.variants if v.status == "timed"), key=lambda v: v.median_ms or 0.0)
        rest = [v for v in self.variants if v.status != "timed"]
        return [v.index for v in timed + rest]

    def to_json(self) -> dict[str, Any]:
        counts = {s: sum(1 for v in self.variants if v.status == s) for s in STATUSES}
        return {"variants": [asdict(v) for v in self.variants], "eager_ms": self.eager_ms,
                "elapsed_s": round(self.elapsed_s, 3), "build_s": round(self.build_s, 3), "label": self.label,
                "counts": counts, "order": self.order()}


def _sources(source: str, filename: str, tuned: Tuned) -> list[NativeSource]:
    """The variant's native sources, or [] with ``tuned`` saying why it cannot be tuned."""
    try:
        tree = parse_source(source, filename, require=("ModelNew",))
    except ProblemError as exc:
        tuned.detail = str(exc)
        return []
    extracted = native_sources.extract(tree, filename)
    if not extracted.sources:
        tuned.detail = "no native sources: only native CPU kernels are tuned"
        return []
    found = policy.findings(source, filename, tree) + extracted.findings \
        + [f for rules in policy_native.check_sources(extracted.sources, filename) for f in rules]
    if found:
        tuned.status, tuned.detail = "policy", found[0]
        return []
    return extracted.sources


def tune(run: Callable[[dict[str, Any]], JobOutcome], specs: dict[str, str] | None, reference: str,
         variants: list[str], reference_name: str, threads: int | None,
         tolerance: tuple[float, float] | None, budget_s: float = TUNE_BUDGET_S, seed: int = 0,
         judged: int = 0) -> TuneResult:
    """``run`` runs one job in the warm sandbox (the judge's); ``specs`` are the
    sandbox's compiler specs (its ready frame's ``native``). ``judged``: how many of the
    first variants the caller judges in full anyway; a pass whose budget cannot rank more
    than those stops after its first check (``runner/phases/tune._ranks_nothing``)."""
    started = time.monotonic()
    problem = load_problem(reference_name, reference)
    result = TuneResult([Tuned(i) for i in range(len(variants))])
    names = [f"variant_{i}.py" for i in range(len(variants))]
    wanted = {i: _sources(src, names[i], result.variants[i]) for i, src in enumerate(variants)}
    everything = [s for srcs in wanted.values() for s in srcs]
    built = native_build.build_sources(everything, specs, set(), run, "cpu") if everything \
        else native_build.Built()
    result.build_s = time.monotonic() - started
    prebuilt: dict[str, str] = {}
    job_variants = []
    for i, srcs in wanted.items():
        if not srcs:
            continue
        keys = [native_build.key_of(s, specs) for s in srcs]
        if not all(k in built.prebuilt for k in keys):
            result.variants[i].status = "build"
            result.variants[i].detail = "did not build (or the source policy refused what compiled)"
            continue
        prebuilt.update({k: built.prebuilt[k] for k in keys})
        job_variants.append({"index": i, "source": variants[i], "filename": names[i]})
    if job_variants:
        job = {"role": "tune", "source": problem.run_source, "filename": reference_name, "device": "cpu",
               "defaults": problem.literal_dims,
               "threads": threads, "variants": job_variants, "native_prebuilt": prebuilt, "sets": TUNE_SETS,
               "budget_s": budget_s, "pass_budget_s": max(TUNE_PASS_BUDGET_S, 4 * budget_s), "seed": seed,
               "judged": judged,
               "tolerances": {k: [v["atol"], v["rtol"]] for k, v in tolerances.describe().items()},
               "tolerance": list(tolerance) if tolerance else None}
        try:
            outcome = run(job)
        except SandboxError as exc:
            raise ProblemError(f"the sandbox failed while tuning: {exc}") from exc
        _read(outcome, result)
    result.elapsed_s = time.monotonic() - started
    return result


def _read(outcome: JobOutcome, result: TuneResult) -> None:
    by_index = {v.index: v for v in result.variants}
    for frame in outcome.of_kind("variant"):
        v = by_index.get(frame.get("index"))
        if v is not None and frame.get("status") in ("wrong", "error", "skipped"):
            v.status, v.detail = frame["status"], str(frame.get("detail", ""))[:2000]
    for frame in outcome.of_kind("tuned"):
        times = [float(t) for t in frame.get("times_ms") or []]
        if not times:
            continue
        if frame.get("name") == "eager":
            result.eager_ms = statistics.median(times)
            continue
        v = by_index.get(int(frame["name"])) if str(frame.get("name", "")).isdigit() else None
        if v is not None:
            v.status, v.median_ms, v.times_ms = "timed", statistics.median(times), times
    meta = outcome.first("tune_meta") or {}
    if meta:
        result.label = (f"cpu: {meta.get('cpu_model', 'unknown CPU')}, {meta.get('threads', '?')} thread(s); "
                        f"{meta.get('sets', '?')} input sets per variant, cache flushed before each call; "
                        "advisory ranking, not a judged speedup")
    err = outcome.first("error")
    missing = [v for v in result.variants if v.status == "error" and not v.detail]
    why = outcome.ended()
    for v in missing:
        v.detail = str(err.get("message")) if err else \
            "the tuning job ended before reaching it" + (f": it {why}" if why else "")
