"""The judge: runs a reference and a candidate in sandboxed runners and
decides, on plain tensors, whether the candidate is correct and how fast it is.

The judge process never imports either file. It reads the reference's syntax
tree for its size constants, asks one runner child to execute the reference
(fresh seeds per trial, default and perturbed sizes, unseen timing inputs) and
another to execute the candidate on those inputs, then runs every check.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from . import baseline_cache, native_sources, tuning
from .cost import Spent
from .drivers import get_driver
from .drivers.base import JobOutcome, RunnerSession, SandboxError
from .errors import ProblemError
from .native import build as native_build
from .native import cache as native_cache
from .policy import native as policy_native
from .policy import python as policy
from .problem import Problem, derived_values, input_bytes, load_problem, parse_source, read_sources
from .result import EvalResult, timing_summary
from .verdict import check_list, compare, runner_clock
from .verdict import checks as C

CHECK_ORDER = check_list.ORDER


# Native kernels on the CPU: repetitions per timed model, and the time budget of each.
NATIVE_CPU_REPS = 50
NATIVE_CPU_BUDGET_S = 4.0
# Seconds added to the reference job's timeout when torch.compile is a baseline
# (its compilation took 60 s on a loaded 2-CPU machine; a short --timeout is for the candidate).
COMPILE_ALLOWANCE_S = 180.0


@dataclass
class EvalOptions:
    device: str = "auto"
    sandbox: str = "process"
    timeout: float = 120.0
    memory_mb: int = 4096
    max_procs: int = 64
    trials: int = 5
    timing_sets: int | None = None  # fresh input sets timed, one repetition each (None: as many as time_reps)
    time_reps: int | None = None
    compile_baseline: bool | None = None
    baseline_cache: bool = True  # native CPU timing: reuse baselines timed on this machine before
    tolerance: tuple[float, float] | None = None
    threads: int | None = None  # on the CPU: threads of candidate and baselines alike (None: every CPU granted)
    interleave: bool = True  # native CPU timing: baselines and candidate timed by turns, set by set
    # One search's candidates: the reference's correctness trials (default and perturbed sizes)
    # run once per warm judge and are replayed for the next candidates of the same reference,
    # same seeds; timing sets and baselines stay fresh per candidate (see ``Judge._kept``).
    reuse_reference: bool = False


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ProblemError(f"unknown device {device!r}: use auto, cpu or cuda")
    import torch

    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise ProblemError("--device cuda was asked for, but no CUDA device is visible to the judge")
    return device if device != "auto" else ("cuda" if available else "cpu")


def cuda_failure(cuda: dict[str, Any], sandbox: str) -> str:
    """Why a cuda runner cannot serve jobs, from what its probe children found (``runner/cuda_fork.py``)."""
    if cuda.get("clean") is False:
        return (f"the {sandbox} sandbox's runner touched the CUDA runtime before forking its jobs: "
                "no job could use CUDA (a bug of ours: runner/cuda_fork.py)")
    if cuda.get("error"):
        return f"CUDA does not work inside the {sandbox} sandbox: {cuda['error']}"
    return f"no CUDA device is visible inside the {sandbox} sandbox"


def _odd(v: int) -> int:
    return max(1, (v * 3 // 4) | 1) if (v * 3 // 4) | 1 != v else v - 2


def _grow(v: int) -> int:
    return v * 5 // 4 if v % 4 == 0 else (v + max(3, v // 4)) | 1


# One call whose inputs (read off get_inputs) exceed this is "large": KernelBench
# sizes under --fit-memory, hundreds of MB per tensor. Every trial's tensors
# travel to the judge and back to the candidate, so a large problem gets
# LARGE_TRIALS fresh default trials and perturbed sizes that never grow more
# than one size at a time (see plan_trials). A problem whose inputs are small may
# still be large by its parameters (a 8192 x 8192 GEMM weight, 268 MB a trial, each
# trial's own): the reference's runner measures its first trial's tensors (inputs,
# outputs, state) against the same bound and skips the trials marked for a problem
# of the other kind (``unless_large`` / ``if_large``; ``drop_skipped``).
LARGE_INPUT_BYTES = 256 << 20
LARGE_TRIALS = 2


def perturbations(problem: Problem, large: bool = False) -> list[dict[str, int]]:
    """Sets of sizes other than the defaults: odd shrinks (breaks power-of-two
    assumptions), proportional shrinks (keeps divisibility between sizes), and a
    growth by about a quarter (a grid or buffer sized for the defaults no longer
    covers the output).

    Sizes written as literals in get_inputs are often tied to literals in the
    model (``nn.Linear(1024, ...)``), so besides all of them at once each is also
    shrunk on its own (up to four), and the first grown on its own: the batch
    size can change when the feature size cannot. Sets the reference cannot run
    are skipped by the judge.

    ``large``: the odd shrink and a growth of the first size alone (memory
    grows by about a quarter, not by a quarter per size)."""
    sizes = problem.size_constants()
    if not sizes:
        dims = problem.literal_dims
        if not dims:
            return []
        first = next(iter(dims))
        if large:
            return [{k: _odd(v) for k, v in dims.items()}, {first: _grow(dims[first])}]
        sets = [{k: _odd(v) for k, v in dims.items()}, {k: _grow(v) for k, v in dims.items()}]
        if len(dims) > 1:
            sets += [{k: _odd(v)} for k, v in list(dims.items())[:4]]
            sets.append({first: _grow(dims[first])})
        return sets
    odd = {k: _odd(v) for k, v in sizes.items()}
    prop = {k: v * 3 // 4 if v % 4 == 0 else v - 1 for k, v in sizes.items()}
    grow = {k: _grow(v) for k, v in sizes.items()}
    if large:
        first = next(iter(sizes))
        return [odd, {first: _grow(sizes[first])}]
    return ([odd] if odd == prop else [odd, prop]) + [grow]


def plan_trials(problem: Problem, options: EvalOptions, reps: int = 5) -> list[dict[str, Any]]:
    """Correctness trials (default and perturbed sizes), then up to ``reps``
    timing sets: one model (one seed), fresh inputs each -- every timed
    repetition runs on a set of its own, which the reference's runner trims
    to its memory and time budget (``timed.set_cap``)."""
    seed = lambda: secrets.randbelow(2**31 - 1)  # noqa: E731  (fresh at every evaluation)
    large = (input_bytes(problem) or 0) > LARGE_INPUT_BYTES
    trials = min(options.trials, LARGE_TRIALS) if large else options.trials
    # Not large by its inputs: the runner may still find it large by its first trial.
    plan = [{"tag": "default", "seed": seed(), "input_seed": seed(),
             **({"unless_large": True} if i >= LARGE_TRIALS and not large else {})} for i in range(trials)]
    large_sets = perturbations(problem, True)
    small_sets = perturbations(problem)
    chosen = [(s, {}) for s in large_sets] if large else \
        [(s, {} if s in large_sets else {"unless_large": True}) for s in small_sets] \
        + [(s, {"if_large": True}) for s in large_sets if s not in small_sets]
    for sizes, when in chosen:
        # Values computed from the sizes (``bias_shape = (out_channels, 1, 1)``) follow
        # them, as in a fitted reference; where the reference cannot run so, the sizes alone
        # (a reference may need such a value to keep its default: ``fallback``, run only when
        # the trial before it failed), except on a large problem, where every trial is costly.
        derived = derived_values(problem, sizes)
        if derived:
            plan.append({"tag": "perturbed", "seed": seed(), "input_seed": seed(), "constants": {**sizes, **derived},
                         **when})
        if not (derived and (large or "if_large" in when)):
            plan.append({"tag": "perturbed", "seed": seed(), "input_seed": seed(), "constants": sizes,
                         **({"fallback": True, "unless_large": True} if derived else when)})
    shared = seed()
    sets = reps if options.timing_sets is None else min(options.timing_sets, reps)
    plan += [{"tag": "timing", "seed": shared, "input_seed": seed()} for _ in range(max(0, sets))]
    for i, spec in enumerate(plan):
        spec["index"] = i
        spec["forward_seed"] = seed()  # set before every call on the trial's inputs (harness.forward_seed)
    return plan


@dataclass
class Judge:
    """Keeps one warm runner per (driver, device); with ``warm=False`` the
    runner lives for one evaluation only (reference and candidate)."""

    warm: bool = True
    _sessions: dict[tuple[str, str], tuple[Any, RunnerSession]] = field(default_factory=dict)
    _spent: Spent = field(default_factory=Spent)
    # reference key -> (its correctness trials' plan entries, their frames), newest last
    _kept: OrderedDict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = field(default_factory=OrderedDict)

    def session(self, sandbox: str, device: str) -> RunnerSession:
        key = (sandbox, device)
        held = self._sessions.get(key)
        if held and held[1].alive:
            return held[1]
        if held:
            held[0].stop(held[1])
        # The native libraries the judge builds are shared read-only with its sandboxes.
        driver = get_driver(sandbox, read_only_dirs=[native_cache.ensure()])
        session = driver.start(device)
        cuda = session.ready.get("cuda") or {}
        if device == "cuda" and (cuda.get("error") or not cuda.get("devices") or cuda.get("clean") is False):
            driver.stop(session)
            raise SandboxError(cuda_failure(cuda, sandbox))
        self._sessions[key] = (driver, session)
        return session

    def warm_runner(self, options: EvalOptions) -> dict[str, Any]:
        """Starts the runner of ``options`` and warms torch.compile in it (a daemon, before
        its first request: ``kforge judged``); what the runner reports."""
        device = resolve_device(options.device)
        return self.session(options.sandbox, device).warm()

    def close(self) -> None:
        for driver, session in self._sessions.values():
            driver.stop(session)
        self._sessions.clear()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, options: EvalOptions, device: str, job: dict[str, Any], extra_s: float = 0.0) -> JobOutcome:
        started = time.monotonic()
        session = self.session(options.sandbox, device)
        if self.warm and job.get("compile_baseline"):
            # a runner that judges again warms torch.compile once, at its second compile
            # (11-15 s; each compile after saves 2-5 s); a one-shot judge's runner never does
            job = {**job, "warm_compile": True}
        try:
            return session.run(job, options.timeout + extra_s, options.memory_mb, options.max_procs)
        finally:
            self._spent.add(job.get("role", "job"), time.monotonic() - started)
            if not session.alive:
                driver, _ = self._sessions.pop((options.sandbox, device))
                driver.stop(session)

    def _machine(self, options: EvalOptions, device: str) -> dict[str, Any]:
        ready = self.session(options.sandbox, device).ready
        machine = {k: ready.get(k) for k in ("cpu_model", "cpus", "torch")}
        machine["threads"] = options.threads
        return machine

    def _compiled_key(self, problem: Problem, options: EvalOptions, device: str) -> str:
        return baseline_cache.compiled_key(problem.run_source, {**self._machine(options, device),
                                                                 "sandbox": options.sandbox})

    def _cached_baselines(self, problem: Problem, options: EvalOptions, device: str, reps: int,
                          compile_baseline: bool) -> tuple[str, list[dict[str, Any]] | None]:
        machine = self._machine(options, device)
        sizes = {**problem.literal_dims, **problem.size_constants()}
        k = baseline_cache.key(problem.run_source, sizes, machine, reps, compile_baseline)
        return k, baseline_cache.lookup(k)

    def analyze(self, reference: str, reference_name: str = "reference.py",
                options: EvalOptions | None = None, shapes_only: bool = False) -> dict[str, Any]:
        """The reference's fx graph, parameters, input/output shapes and a
        profile of its ops ranked by share of time -- computed in the sandbox.
        ``shapes_only``: one call's input and output shapes alone, on the meta
        device where the reference runs there (``runner/analyze.shapes``)."""
        options = options or EvalOptions()
        device = resolve_device(options.device)
        load_problem(reference_name, reference)
        job = {"role": "analyze", "source": reference, "filename": reference_name, "device": device,
               "shapes_only": shapes_only}
        try:
            return {"device": device, **analysis_of(self._run(options, device, job), reference_name)}
        except SandboxError as exc:
            raise ProblemError(f"the sandbox failed while analysing the reference: {exc}") from exc
        finally:
            if not self.warm:
                self.close()

    def tune(self, reference: str, variants: list[str], reference_name: str = "reference.py",
             options: EvalOptions | None = None, budget_s: float = tuning.TUNE_BUDGET_S,
             judged: int = 0) -> tuning.TuneResult:
        """Many variants of one native CPU proposal timed cheaply in one warm job, fastest first
        (``sandbox/tuning.py``): a ranking for the search, never a verdict. ``judged``: how many
        of the first variants the caller judges in full whatever the ranking says."""
        options = options or EvalOptions()
        if resolve_device(options.device) != "cpu":
            raise ProblemError("the tuning pass times native CPU kernels: run it with device cpu")
        try:
            session = self.session(options.sandbox, "cpu")
            return tuning.tune(lambda job: self._run(options, "cpu", job), session.ready.get("native"), reference,
                               variants, reference_name, options.threads, options.tolerance, budget_s,
                               judged=judged)
        finally:
            if not self.warm:
                self.close()

    def evaluate(self, reference: str, candidate: str, reference_name: str = "reference.py",
                 candidate_name: str = "candidate.py", options: EvalOptions | None = None) -> EvalResult:
        """The verdict on ``candidate``. On the CPU, a run whose only failing check is
        ``timer_corroborated`` is judged once more and the second verdict stands (marked
        ``timing["retimed"]``): the outside clock also counts the cache flushes between calls,
        whose cost a VM guest's shared cache can move by milliseconds between the timed pass
        and the null pass; a candidate that hides work fails both runs."""
        options = options or EvalOptions()
        try:
            result = self._evaluate(reference, candidate, reference_name, candidate_name, options)
            if result.device == "cpu" and result.reasons \
                    and all(r.startswith("timer_corroborated") for r in result.reasons):
                first = result.reasons[0]
                result = self._evaluate(reference, candidate, reference_name, candidate_name, options)
                result.timing["retimed"] = f"judged again after: {first}"
            return result
        finally:
            if not self.warm:
                self.close()

    def _evaluate(self, reference: str, candidate: str, reference_name: str, candidate_name: str,
                  options: EvalOptions) -> EvalResult:
        started = time.monotonic()
        self._spent = Spent()
        device = resolve_device(options.device)
        problem = load_problem(reference_name, reference)
        try:
            tree = parse_source(candidate, candidate_name, require=("ModelNew",))
        except ProblemError as exc:
            tree, parse_error = None, exc
        extracted = native_sources.extract(tree, candidate_name) if tree is not None \
            else native_sources.Extracted([], [])
        # Native kernels on the CPU are timed for real: more repetitions, and torch.compile as a baseline.
        native_cpu = device == "cpu" and bool(extracted.sources)
        reps = options.time_reps if options.time_reps is not None else \
            (100 if device == "cuda" else NATIVE_CPU_REPS if native_cpu else 5)
        compile_baseline = options.compile_baseline if options.compile_baseline is not None else \
            (device == "cuda" or native_cpu)
        plan = plan_trials(problem, options, reps)
        kept_key = _kept_key(problem, reference_name, device, options) if options.reuse_reference else None
        replay = self._kept.get(kept_key) if kept_key is not None else None
        if replay is not None:
            self._kept.move_to_end(kept_key)
            plan = [*replay[0], *(dict(p, index=len(replay[0]) + i) for i, p in enumerate(q for q in plan
                                                                                         if q["tag"] == "timing"))]
        # the sizes, and the values computed from them that perturbed trials set: each back to its default after
        constant_names = sorted({*problem.size_constants(), *(k for p in plan for k in p.get("constants", {}))})
        ref_job = {"role": "reference", "source": problem.run_source, "filename": reference_name, "device": device,
                   "trials": plan, "constants": constant_names, "defaults": problem.literal_dims,
                   "time_reps": reps, "compile_baseline": compile_baseline, "native_timing": native_cpu,
                   "threads": options.threads, "large": (input_bytes(problem) or 0) > LARGE_INPUT_BYTES,
                   "large_bytes": LARGE_INPUT_BYTES,
                   "replayed": [p["index"] for p in replay[0]] if replay is not None else []}
        cached_key, cached = None, None
        if native_cpu:
            ref_job["time_budget_s"] = NATIVE_CPU_BUDGET_S
            # Timed call by call on the runner's clock, the sets held by the runner (runner/clocking.py);
            # by turns with the candidate's calls unless ``interleave`` is off.
            ref_job["park"] = ref_job["clocked"] = True
            ref_job["interleaved"] = options.interleave
            if options.baseline_cache:
                cached_key, cached = self._cached_baselines(problem, options, device, reps, compile_baseline)
                eager = next((f for f in cached or [] if f["name"] == "baseline_eager"), None)
                if eager is not None and compile_baseline:
                    ref_job["cached_eager_ms"] = eager["times_ms"]
        compiled_key = self._compiled_key(problem, options, device) if native_cpu and compile_baseline else None
        if compiled_key is not None:
            kept = baseline_cache.compiled_lookup(compiled_key)
            if kept is not None:
                ref_job["compiled_cache"] = _uint8(kept)
        try:
            # torch.compile's compilation is the baseline's cost, not the reference's: it gets time of its own.
            ref = self._run(options, device, ref_job, COMPILE_ALLOWANCE_S if compile_baseline and reps else 0.0)
        except SandboxError as exc:
            raise ProblemError(f"the sandbox failed while running the reference: {exc}") from exc
        if replay is not None:
            ref.frames.extend(replay[1])
        elif kept_key is not None and ref.finished and ref.first("error") is None:
            self._keep(kept_key, plan, ref)
        packed = ref.first("compiled_cache")
        if compiled_key is not None and packed is not None and hasattr(packed.get("data"), "numpy"):
            baseline_cache.compiled_store(compiled_key, packed["data"].numpy().tobytes())
        try:
            if cached_key is not None and ref.finished and ref.parked is None:
                ref.frames.extend(baseline_cache.settle(cached_key, cached, ref.of_kind("timing"), compile_baseline))
            plan = made_sets(drop_skipped(plan, ref), ref)
            ref_trials = reference_trials(ref, reference_name, plan)
            result = EvalResult(device=device, sandbox=options.sandbox, seeds=[p["input_seed"] for p in plan])
            if tree is None:
                return result.finish([C.Check("compile", C.FAIL, str(parse_error))], CHECK_ORDER, started)
            # Read before the candidate runs; it still runs, so every other check reports too.
            native_rules = policy_native.check_sources(extracted.sources, candidate_name)
            policy_found = policy.findings(candidate, candidate_name, tree) + extracted.findings \
                + [f for found in native_rules for f in found]
            rules = C.policy_check(policy_found)
            prebuilt: dict[str, str] = {}
            if extracted.sources:
                session = self.session(options.sandbox, device)
                try:
                    built = native_build.build_sources(
                        extracted.sources, session.ready.get("native"),
                        {i for i, found in enumerate(native_rules) if found},
                        lambda job: self._run(options, device, job), device, candidate_name)
                except SandboxError as exc:
                    raise ProblemError(f"the sandbox failed while building the native sources: {exc}") from exc
                rules = C.policy_check(policy_found + built.findings)  # the policy on what compiled
                if built.errors:
                    return result.finish([C.Check("compile", C.FAIL, "\n".join(built.errors)[:6000]), rules],
                                         CHECK_ORDER, started)
                prebuilt = built.prebuilt
            clocked = ref.parked is not None
            cand_trials = [candidate_trial(spec, ref_trials[i], clocked)
                           for i, spec in enumerate(plan) if "error" not in ref_trials.get(i, {"error": 1})]
            timing_sets = [ref_trials[i]["inputs"] for i, spec in enumerate(plan)
                           if spec["tag"] == "timing" and "error" not in ref_trials.get(i, {"error": 1})]
            cand_job = {"role": "candidate", "source": candidate, "filename": candidate_name, "device": device,
                        "trials": cand_trials, "time_reps": reps, "null_reps": C.NULL_PASS_REPS,
                        "native_prebuilt": prebuilt,
                        "native_timing": native_cpu, "threads": options.threads, "park": clocked,
                        "clocked": clocked, "interleaved": options.interleave,
                        "random_reference": any(t.get("random") for t in ref_trials.values())}
            if native_cpu:
                cand_job["time_budget_s"] = NATIVE_CPU_BUDGET_S
            try:
                cand = self._run(options, device, cand_job)
            except SandboxError as exc:
                cand = JobOutcome(exit={"reason": "protocol", "detail": str(exc)})
            if ref.parked is not None:
                # The baselines' pass and the candidate's (if it parked), call by call on the runner's clock.
                parties = [["baseline_eager", *(["baseline_compile"] if compile_baseline else [])], ["candidate"]]
                pairs = [([ref, cand], parties)] if options.interleave else [([ref], parties[:1]), ([cand], parties[1:])]
                for outcomes, names in pairs:
                    self._turns(options, device, outcomes, sets=timing_sets, parties=names)
                for outcome in (ref, cand):
                    runner_clock.apply(outcome)
                if cached_key is not None and ref.finished:
                    ref.frames.extend(baseline_cache.settle(cached_key, cached, ref.of_kind("timing"), compile_baseline))
            found = candidate_checks(plan, ref, ref_trials, cand, options, device, native_cpu and reps > 0) + [rules]
            calibrated = self._calibrate(options, device, ref_job, plan, ref_trials, cand, found)
            if calibrated:
                before = {c.name: c for c in found}
                found = [_calibration_noted(c, before.get(c.name, c), calibrated)
                         for c in candidate_checks(plan, ref, ref_trials, cand, options, device,
                                                   native_cpu and reps > 0) + [rules]]
            result.timing = timing_summary(ref, cand, device, native_cpu)
            result.perturbed = [p["constants"] for p in plan if p["tag"] == "perturbed"]
            result.work = C.provenance_check(plan, ref_trials, {f["index"]: f for f in cand.of_kind("trial")
                                                                if isinstance(f.get("index"), int)})[1]
            result.finish(found, CHECK_ORDER, started)
            result.cost = self._spent.report(ref, cand, result.elapsed_s)
            return result
        finally:
            if ref.parked is not None:  # the candidate never reached its timed pass
                self._turns(options, device, [ref], drop=True)

    def _calibrate(self, options: EvalOptions, device: str, ref_job: dict[str, Any], plan: list[dict[str, Any]],
                   ref_trials: dict[int, dict[str, Any]], cand: JobOutcome, found: list[C.Check]) -> list[int]:
        """Where the candidate failed on values alone, by less than the reference's own float32
        rounding could account for: the reference once more in float64 on those trials (the
        timing sets too when the timed outputs missed), its outputs kept beside the float32 ones
        (``outputs64``) for the checks to compare against (``compare.calibrated_close``). Not for a
        large problem, nor a reference that draws random numbers. The trials calibrated."""
        failed = {c.name for c in found if c.outcome == C.FAIL}
        if not failed or not failed <= CALIBRATED_CHECKS or ref_job.get("large") \
                or any(t.get("random") for t in ref_trials.values()):
            return []
        cand_trials = {f["index"]: f for f in cand.of_kind("trial") if isinstance(f.get("index"), int)}
        want = [i for i, spec in enumerate(plan) if spec["tag"] != "timing" and "outputs64" not in ref_trials.get(i, {})
                and "outputs" in ref_trials.get(i, {}) and "outputs" in cand_trials.get(i, {})
                and compare.could_calibrate(ref_trials[i]["outputs"], cand_trials[i]["outputs"], options.tolerance)]
        if "post_timing" in failed:
            want += [i for i, spec in enumerate(plan) if spec["tag"] == "timing"
                     and "outputs" in ref_trials.get(i, {}) and "outputs64" not in ref_trials[i]]
        if not want or sum(_nbytes(ref_trials[i]["outputs"]) for i in want) > CALIBRATED_BYTES:
            return []
        job = {"role": "reference64", "trials": [plan[i] for i in want],
               **{k: ref_job[k] for k in ("source", "filename", "device", "constants", "defaults")}}
        try:
            outcome = self._run(options, device, job)
        except SandboxError:
            return []
        done = [f for f in outcome.of_kind("trial64") if "outputs" in f and f.get("index") in ref_trials]
        for f in done:
            ref_trials[f["index"]]["outputs64"] = f["outputs"]
        return sorted(f["index"] for f in done)

    def _keep(self, key: str, plan: list[dict[str, Any]], ref: JobOutcome) -> None:
        """The reference's correctness trials, for the next candidates of the same reference."""
        trials = [p for p in plan if p["tag"] != "timing"]
        indexes = {p["index"] for p in trials}
        frames = [f for f in ref.of_kind("trial") if f.get("index") in indexes]
        # a fallback trial runs only where the one before it failed
        if not {f["index"] for f in frames} >= {p["index"] for p in trials if not p.get("fallback")} \
                or _nbytes(frames) > kept_reference_bytes():
            return
        self._kept[key] = (trials, frames)
        while len(self._kept) > KEPT_REFERENCES:
            self._kept.popitem(last=False)

    def _turns(self, options: EvalOptions, device: str, outcomes: list[JobOutcome], drop: bool = False,
               sets: list[list[Any]] | None = None, parties: list[list[str]] | None = None) -> None:
        """The parked jobs' timed passes by turns on ``sets`` (``sandbox/runner/turns.py``), or ended."""
        started = time.monotonic()
        session = self.session(options.sandbox, device)
        try:
            if drop:
                session.drop(outcomes)
            else:
                session.interleave(outcomes, options.timeout + COMPILE_ALLOWANCE_S, sets or [], parties or [])
        except SandboxError:
            for o in outcomes:
                o.parked = None
        finally:
            self._spent.add("turns", time.monotonic() - started)
            if not session.alive:
                driver, _ = self._sessions.pop((options.sandbox, device))
                driver.stop(session)


# Checks a candidate may fail on values alone, where the float64 reference can tell rounding
# from error (Judge._calibrate).
CALIBRATED_CHECKS = {"correctness", "perturbed_sizes", "post_timing"}
CALIBRATED_BYTES = 256 << 20  # the float32 outputs of the trials to run again, at the most


def _calibration_noted(check: C.Check, before: C.Check, trials: list[int]) -> C.Check:
    """A check that passes only against the float64 reference says so."""
    if before.outcome != C.FAIL or check.outcome != C.PASS:
        return check
    return C.Check(check.name, C.PASS, f"passed against the reference run in float64 on trial(s) {trials}: the "
                   f"float32 reference is itself that far from it (rounding in another order); in float32: "
                   f"{before.detail[:300]}")


# Replayed references: how many, and the least of the most memory their trials may hold
# each; a machine with more memory free keeps larger ones (``kept_reference_bytes``).
KEPT_REFERENCES = 2
KEPT_REFERENCE_BYTES = 1 << 30


def kept_reference_bytes() -> int:
    """The most memory one replayed reference's trials may hold: a third of what the machine
    has available now, at least KEPT_REFERENCE_BYTES. A problem fitted to a GB a call
    (KernelBench under ``--fit-memory 1``) holds 3-4 GB of trials: its reference is replayed
    where memory allows, and run again for every candidate (~17 s each) where it does not."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return KEPT_REFERENCE_BYTES
    return max(KEPT_REFERENCE_BYTES, available // 3)


def _kept_key(problem: Problem, name: str, device: str, options: EvalOptions) -> str:
    """What a reference's correctness trials depend on: its source, device, trial count and threads."""
    text = "\0".join([problem.run_source, name, device, str(options.trials), str(options.threads)])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _nbytes(value: Any) -> int:
    if hasattr(value, "element_size") and hasattr(value, "nelement"):
        return int(value.element_size() * value.nelement())
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


def _uint8(data: bytes) -> Any:
    import torch

    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def drop_skipped(plan: list[dict[str, Any]], ref: JobOutcome) -> list[dict[str, Any]]:
    """The plan without the trials the reference's runner skipped (marked for a problem
    of the other kind: ``unless_large`` / ``if_large``), renumbered, and the reference's
    trial frames with it (copies: a kept reference holds the originals)."""
    skipped = {f.get("index") for f in ref.of_kind("trial") if f.get("skipped")}
    if not skipped:
        return plan
    kept = [p for p in plan if p["index"] not in skipped]
    new = {p["index"]: i for i, p in enumerate(kept)}
    ref.frames = [f if f.get("kind") != "trial" else dict(f, index=new.get(f["index"], f["index"]))
                  for f in ref.frames if f.get("kind") != "trial" or f.get("index") not in skipped]
    return [dict(p, index=i) for i, p in enumerate(kept)]


def candidate_trial(spec: dict[str, Any], ref_trial: dict[str, Any], clocked: bool) -> dict[str, Any]:
    """A trial as the candidate's job gets it: the reference's inputs, model and weights, no
    input seed (the candidate could draw the inputs itself); a timing set the runner holds
    (``clocked``: runner/clocking.py) as its inputs' shapes alone."""
    trial = {k: v for k, v in spec.items() if k != "input_seed"}
    trial.update({k: ref_trial[k] for k in ("init_inputs", "inputs", "state_dict") if k in ref_trial})
    if clocked and spec["tag"] == "timing":
        trial["like"] = [{"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")}
                         if isinstance(v, torch.Tensor) else v for v in trial.pop("inputs", [])]
    return trial


def made_sets(plan: list[dict[str, Any]], ref: JobOutcome) -> list[dict[str, Any]]:
    """The plan without the timing sets the reference's runner did not make
    (trimmed to its memory and time budget); they are the plan's last entries."""
    made = {f.get("index") for f in ref.of_kind("trial")}
    return [p for p in plan if p["tag"] != "timing" or p["index"] in made or not ref.finished]


def analysis_of(outcome: JobOutcome, name: str) -> dict[str, Any]:
    err = outcome.first("error")
    if err is not None:
        raise ProblemError(f"the reference is unusable: {err['message']}")
    found = outcome.first("analysis")
    if found is None:
        raise ProblemError(f"{name}: the reference did not finish ({outcome.ended() or 'crashed'})")
    return {k: v for k, v in found.items() if k not in ("kind", "_t")}


def reference_trials(ref: JobOutcome, name: str, plan: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    err = ref.first("error")
    if err is not None:
        raise ProblemError(f"the reference is unusable: {err['message']}")
    if not ref.finished:
        raise ProblemError(f"{name}: the reference did not finish ({ref.ended() or 'crashed'}) {C.last_phase(ref)}")
    trials = {f["index"]: f for f in ref.of_kind("trial")}
    for i, spec in enumerate(plan):
        if spec["tag"] != "perturbed" and "error" in trials.get(i, {"error": "missing"}):
            raise ProblemError(f"the reference failed at its default sizes: {trials.get(i, {}).get('error', 'no result')}")
    return trials


def candidate_checks(plan: list[dict[str, Any]], ref: JobOutcome, ref_trials: dict[int, dict[str, Any]],
                     cand: JobOutcome, options: EvalOptions, device: str, native_cpu: bool = False) -> list[C.Check]:
    loaded = cand.first("loaded")
    if loaded is None:
        err = cand.first("error")
        runtime = C.runtime_check(cand, options.timeout, options.memory_mb)
        detail = err["message"] if err else runtime.detail
        return [C.Check("compile", C.FAIL, f"the candidate did not load: {detail}"), runtime]
    ref_loaded = ref.first("loaded") or {}
    cand_trials = {f["index"]: f for f in cand.of_kind("trial") if isinstance(f.get("index"), int)}
    found = [C.Check("compile", C.PASS), C.signature_check(ref_loaded.get("signature", {}), loaded["signature"]),
             C.runtime_check(cand, options.timeout, options.memory_mb)]
    post = cand.first("post_timing")
    found += [C.timed_inputs_check(c, post) if c.name == "inputs_unchanged" else c
              for c in C.trial_checks(plan, ref_trials, cand_trials, options.tolerance)]
    timed = any(s["tag"] == "timing" for s in plan)
    if timed and cand.finished:
        found.append(C.post_timing_check(plan, ref_trials, post, options.tolerance))
        found.append(C.fresh_outputs_check(post))
        found.append(C.corroboration_check(cand, "candidate", device, enforce=native_cpu))
        cand_timing = next((f for f in cand.of_kind("timing") if f.get("name") == "candidate"), None)
        base = next((f for f in ref.of_kind("timing") if f.get("name") == "baseline_eager"), None)
        parity = C.thread_parity_problem(cand_timing, (base or cand_timing or {}).get("threads")) \
            if native_cpu else None
        found = [C.amend(C.amend(c, parity), C.crosstalk_problem(ref, cand)) if c.name == "no_stray_work" else c
                 for c in found]
    found.append(C.layout_check(plan, ref_trials, cand_trials, post if timed and cand.finished else None))
    provenance, _ = C.provenance_check(plan, ref_trials, cand_trials, cand.first("post_timing"))
    found.append(provenance)
    found.append(C.ops_check(ref_trials, cand_trials))
    if cand.finished:
        found.append(C.ablation_check(ref_trials, cand.first("ablation"), options.tolerance))
    found.append(C.tamper_check(cand))
    return found


def evaluate_files(reference_path: str, candidate_path: str, options: EvalOptions | None = None,
                   judge: Judge | None = None) -> EvalResult:
    """Read both files and judge them; unreadable files are request errors."""
    texts = read_sources(reference_path, candidate_path)
    judge = judge or Judge(warm=False)
    return judge.evaluate(texts[0], texts[1], reference_path.rsplit("/", 1)[-1],
                          candidate_path.rsplit("/", 1)[-1], options)
