"""The judge: runs a reference and a candidate in sandboxed runners and
decides, on plain tensors, whether the candidate is correct and how fast it is.

The judge process never imports either file. It reads the reference's syntax
tree for its size constants, asks one runner child to execute the reference
(fresh seeds per trial, default and perturbed sizes, unseen timing inputs) and
another to execute the candidate on those inputs, then runs every check (its rooms: trial_plan,
kept_references, calibration, verdict/candidate_checks)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from . import baseline_cache, native_sources, tuning
from .cost import Spent
from .drivers import get_driver
from .drivers.base import JobOutcome, RunnerSession, SandboxError
from .errors import ProblemError
from .judging import calibration, compile_budget
from .judging.kept_references import KeptReferences
from .judging.kept_references import key as kept_key_of
from .judging.trial_plan import LARGE_INPUT_BYTES, candidate_trial, drop_skipped, made_sets, plan_trials, reference_trials
from .native import build as native_build
from .native import cache as native_cache
from .options import EvalOptions, cuda_failure, resolve_device
from .policy import native as policy_native
from .policy import python as policy
from .problem import Problem, input_bytes, load_problem, parse_source, read_sources
from .result import EvalResult, timing_summary
from .verdict import check_list, runner_clock, timer_checks
from .verdict import checks as C
from .verdict.candidate_checks import candidate_checks, machine_limits

CHECK_ORDER = check_list.ORDER

# Native kernels on the CPU: repetitions per timed model, and the time budget of each.
NATIVE_CPU_REPS = 50
NATIVE_CPU_BUDGET_S = 4.0


@dataclass
class _Run:
    """One evaluation's reference side, as its phases fill it in."""

    plan: list[dict[str, Any]]
    ref_job: dict[str, Any]
    native_cpu: bool
    reps: int
    compile_baseline: bool
    kept_key: str | None = None
    replay: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
    cached_key: str | None = None
    cached: list[dict[str, Any]] | None = None
    compiled_key: str | None = None
    compile_missing: str = ""  # why torch.compile is no baseline here (judging/compile_budget.py)


@dataclass
class Judge:
    """Keeps one warm runner per (driver, device); with ``warm=False`` the
    runner lives for one evaluation only (reference and candidate)."""

    warm: bool = True
    _sessions: dict[tuple[str, str], tuple[Any, RunnerSession]] = field(default_factory=dict)
    _spent: Spent = field(default_factory=Spent)
    _kept: KeptReferences = field(default_factory=KeptReferences)

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
        machine = {k: ready.get(k) for k in ("cpu_model", "cpus", "torch", "allocator")}
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
        device where the reference runs there (``runner/phases/analyze.shapes``)."""
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
            tree, parse_error = parse_source(candidate, candidate_name, require=("ModelNew",)), None
        except ProblemError as exc:
            tree, parse_error = None, exc
        extracted = native_sources.extract(tree, candidate_name) if tree is not None \
            else native_sources.Extracted([], [])
        run = self._reference_job(problem, reference_name, options, device, bool(extracted.sources))
        ref = self._run_reference(run, options, device)
        try:
            if run.cached_key is not None and ref.finished and ref.parked is None:
                ref.frames.extend(baseline_cache.settle(run.cached_key, run.cached, ref.of_kind("timing"),
                                                        run.compile_baseline))
            run.plan = made_sets(drop_skipped(run.plan, ref), ref)
            ref_trials = reference_trials(ref, reference_name, run.plan)
            result = EvalResult(device=device, sandbox=options.sandbox, seeds=[p["input_seed"] for p in run.plan])
            if tree is None:
                return result.finish([C.Check("compile", C.FAIL, str(parse_error))], CHECK_ORDER, started)
            rules, prebuilt, errors = self._policy_and_build(candidate, candidate_name, tree, extracted, options,
                                                             device)
            if errors:
                return result.finish([C.Check("compile", C.FAIL, "\n".join(errors)[:6000]), rules], CHECK_ORDER,
                                     started)
            cand = self._run_candidate(run, ref, ref_trials, candidate, candidate_name, prebuilt, options, device)
            return self._decide(run, ref, ref_trials, cand, rules, result, options, device, started)
        finally:
            if ref.parked is not None:  # the candidate never reached its timed pass
                self._turns(options, device, [ref], drop=True)

    def _reference_job(self, problem: Problem, reference_name: str, options: EvalOptions, device: str,
                       native: bool) -> _Run:
        """The trials' plan and the reference's job: a replayed reference's kept trials, cached
        baselines and torch.compile's kept code where they stand."""
        # Native kernels on the CPU are timed for real: more repetitions, and torch.compile as a baseline.
        native_cpu = device == "cpu" and native
        reps = options.time_reps if options.time_reps is not None else \
            (100 if device == "cuda" else NATIVE_CPU_REPS if native_cpu else 5)
        compile_baseline = options.compile_baseline if options.compile_baseline is not None else \
            (device == "cuda" or native_cpu)
        plan = plan_trials(problem, options, reps)
        kept_key = kept_key_of(problem, reference_name, device, options) if options.reuse_reference else None
        replay = self._kept.get(kept_key)
        if replay is not None:
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
        run = _Run(plan, ref_job, native_cpu, reps, compile_baseline, kept_key, replay)
        if native_cpu:
            ref_job["time_budget_s"] = NATIVE_CPU_BUDGET_S
            # Timed call by call on the runner's clock, the sets held by the runner (runner/measure/clocking.py);
            # by turns with the candidate's calls unless ``interleave`` is off.
            ref_job["park"] = ref_job["clocked"] = True
            ref_job["interleaved"] = options.interleave
            if options.baseline_cache:
                run.cached_key, run.cached = self._cached_baselines(problem, options, device, reps, compile_baseline)
                eager = next((f for f in run.cached or [] if f["name"] == "baseline_eager"), None)
                if eager is not None and compile_baseline:
                    ref_job["cached_eager_ms"] = eager["times_ms"]
        run.compiled_key = self._compiled_key(problem, options, device) if native_cpu and compile_baseline else None
        if run.compiled_key is not None:
            kept = baseline_cache.compiled_lookup(run.compiled_key)
            if kept is not None:
                ref_job["compiled_cache"] = torch.frombuffer(bytearray(kept), dtype=torch.uint8)
        return run

    def _run_reference(self, run: _Run, options: EvalOptions, device: str) -> JobOutcome:
        """The reference's job (its kept trials' frames added where it replayed them)."""
        try:
            # torch.compile's compilation is the baseline's cost, not the reference's: it gets time of its own.
            ref = self._run(options, device, run.ref_job,
                            compile_budget.ALLOWANCE_S if run.compile_baseline and run.reps else 0.0)
            ref = compile_budget.without_compile(run, ref, lambda job: self._run(options, device, job))
        except SandboxError as exc:
            raise ProblemError(f"the sandbox failed while running the reference: {exc}") from exc
        if run.replay is not None:
            ref.frames.extend(run.replay[1])
        elif run.kept_key is not None and ref.finished and ref.first("error") is None:
            self._kept.keep(run.kept_key, run.plan, ref)
        packed = ref.first("compiled_cache")
        if run.compiled_key is not None and packed is not None and hasattr(packed.get("data"), "numpy"):
            baseline_cache.compiled_store(run.compiled_key, packed["data"].numpy().tobytes())
        return ref

    def _policy_and_build(self, candidate: str, candidate_name: str, tree: Any, extracted: Any,
                          options: EvalOptions, device: str) -> tuple[C.Check, dict[str, str], list[str]]:
        """The source policy (read before the candidate runs; it still runs, so every other check
        reports too) and the native sources built: the policy's check, the built libraries, and
        the build errors."""
        native_rules = policy_native.check_sources(extracted.sources, candidate_name)
        policy_found = policy.findings(candidate, candidate_name, tree) + extracted.findings \
            + [f for found in native_rules for f in found]
        if not extracted.sources:
            return C.policy_check(policy_found), {}, []
        session = self.session(options.sandbox, device)
        try:
            built = native_build.build_sources(
                extracted.sources, session.ready.get("native"), {i for i, found in enumerate(native_rules) if found},
                lambda job: self._run(options, device, job), device, candidate_name)
        except SandboxError as exc:
            raise ProblemError(f"the sandbox failed while building the native sources: {exc}") from exc
        return C.policy_check(policy_found + built.findings), built.prebuilt, built.errors  # the policy on what compiled

    def _run_candidate(self, run: _Run, ref: JobOutcome, ref_trials: dict[int, dict[str, Any]], candidate: str,
                       candidate_name: str, prebuilt: dict[str, str], options: EvalOptions,
                       device: str) -> JobOutcome:
        """The candidate's job on the reference's trials; then, where both parked, the timed
        passes call by call on the runner's clock."""
        plan, clocked = run.plan, ref.parked is not None
        made = [i for i in range(len(plan)) if "error" not in ref_trials.get(i, {"error": 1})]
        cand_job = {"role": "candidate", "source": candidate, "filename": candidate_name, "device": device,
                    "trials": [candidate_trial(plan[i], ref_trials[i], clocked) for i in made],
                    "time_reps": run.reps, "null_reps": timer_checks.NULL_PASS_REPS, "native_prebuilt": prebuilt,
                    "native_timing": run.native_cpu, "threads": options.threads, "park": clocked,
                    "clocked": clocked, "interleaved": options.interleave,
                    "random_reference": any(t.get("random") for t in ref_trials.values())}
        if run.native_cpu:
            cand_job["time_budget_s"] = NATIVE_CPU_BUDGET_S
        try:
            cand = self._run(options, device, cand_job)
        except SandboxError as exc:
            cand = JobOutcome(exit={"reason": "protocol", "detail": str(exc)})
        if clocked:
            timing_sets = [ref_trials[i]["inputs"] for i in made if plan[i]["tag"] == "timing"]
            parties = [["baseline_eager", *(["baseline_compile"] if run.compile_baseline else [])], ["candidate"]]
            pairs = [([ref, cand], parties)] if options.interleave else [([ref], parties[:1]), ([cand], parties[1:])]
            for outcomes, names in pairs:
                self._turns(options, device, outcomes, sets=timing_sets, parties=names)
            for outcome in (ref, cand):
                runner_clock.apply(outcome)
            if run.cached_key is not None and ref.finished:
                ref.frames.extend(baseline_cache.settle(run.cached_key, run.cached, ref.of_kind("timing"),
                                                        run.compile_baseline))
        return cand

    def _decide(self, run: _Run, ref: JobOutcome, ref_trials: dict[int, dict[str, Any]], cand: JobOutcome,
                rules: C.Check, result: EvalResult, options: EvalOptions, device: str,
                started: float) -> EvalResult:
        """Every check (again against the float64 reference where rounding may explain a miss),
        the timing, the work shares and the roofline."""
        plan, timed = run.plan, run.native_cpu and run.reps > 0
        found = candidate_checks(plan, ref, ref_trials, cand, options, device, timed) + [rules]
        calibrated = calibration.calibrate(lambda job: self._run(options, device, job), options, run.ref_job,
                                           plan, ref_trials, cand, found)
        if calibrated:
            before, said = {c.name: c for c in found}, calibration.conditioning(ref_trials, calibrated)
            found = [calibration.noted(c, before.get(c.name, c), calibrated, said)
                     for c in candidate_checks(plan, ref, ref_trials, cand, options, device, timed) + [rules]]
        result.timing = timing_summary(ref, cand, device, run.native_cpu, run.compile_missing)
        result.perturbed = [p["constants"] for p in plan if p["tag"] == "perturbed"]
        result.work = C.provenance_check(plan, ref_trials, {f["index"]: f for f in cand.of_kind("trial")
                                                            if isinstance(f.get("index"), int)})[1]
        result.roofline, limits = machine_limits(plan, ref_trials, result.timing, device)
        result.finish(found + [limits], CHECK_ORDER, started)
        result.cost = self._spent.report(ref, cand, result.elapsed_s)
        return result

    def _turns(self, options: EvalOptions, device: str, outcomes: list[JobOutcome], drop: bool = False,
               sets: list[list[Any]] | None = None, parties: list[list[str]] | None = None) -> None:
        """The parked jobs' timed passes by turns on ``sets`` (``sandbox/runner/process/turns.py``), or ended."""
        started = time.monotonic()
        session = self.session(options.sandbox, device)
        try:
            if drop:
                session.drop(outcomes)
            else:
                session.interleave(outcomes, options.timeout + compile_budget.ALLOWANCE_S, sets or [], parties or [])
        except SandboxError:
            for o in outcomes:
                o.parked = None
        finally:
            self._spent.add("turns", time.monotonic() - started)
            if not session.alive:
                driver, _ = self._sessions.pop((options.sandbox, device))
                driver.stop(session)


def analysis_of(outcome: JobOutcome, name: str) -> dict[str, Any]:
    err = outcome.first("error")
    if err is not None:
        raise ProblemError(f"the reference is unusable: {err['message']}")
    found = outcome.first("analysis")
    if found is None:
        raise ProblemError(f"{name}: the reference did not finish ({outcome.ended() or 'crashed'})")
    return {k: v for k, v in found.items() if k not in ("kind", "_t")}


def evaluate_files(reference_path: str, candidate_path: str, options: EvalOptions | None = None,
                   judge: Judge | None = None) -> EvalResult:
    """Read both files and judge them; unreadable files are request errors."""
    texts = read_sources(reference_path, candidate_path)
    judge = judge or Judge(warm=False)
    return judge.evaluate(texts[0], texts[1], reference_path.rsplit("/", 1)[-1],
                          candidate_path.rsplit("/", 1)[-1], options)
