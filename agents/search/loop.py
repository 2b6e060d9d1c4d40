"""The search: rounds of plan -> code -> verify -> repair under budgets.

Round 0 judges the offline engine's starter kernels, so LLM rounds start from
a verified kernel when one exists. Each LLM round takes the next strategies
from the plan, writes several candidates in parallel from the best verified
kernel so far, judges them one at a time (one timing at a time per device),
and repairs failures from the judge's feedback. It re-plans when the plan is
used up or the best result stagnates, and stops at a budget or the target.
The trajectory is saved after every attempt; a resumed search continues from
the last saved attempt.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from knowledge_base.problem_identity import arch_of
from sandbox.options import EvalOptions

from ..context import Context, Evaluator, NoStrategies, PerBackend, PlanningEngine, StrategySource, Tuner, TuningEngine
from ..offline.signature import from_source
from ..providers import Completion, Provider
from ..roles.coder import Coder, Draft
from ..roles.planner import Planner
from ..roles.verifier import Verification, Verifier
from ..trajectory import Attempt, Round, Trajectory
from .budget import Budget, LimitsExceeded, SearchConfig, TargetReached

log = logging.getLogger("kforge.search")
Event = Callable[[dict[str, Any]], None]


class Search:
    def __init__(self, evaluator: Evaluator, options: Any, provider: Provider | None = None,
                 strategies: StrategySource | None = None, config: SearchConfig | None = None,
                 offline: Any = None, on_event: Event | None = None, trajectory_path: str | Path | None = None,
                 archive: Any = None):
        self.evaluator = evaluator
        self.options = options
        self.provider = provider
        self.strategies = strategies or NoStrategies()
        self.config = config or SearchConfig()
        self.offline = offline
        self.archive = archive  # has .archived(reference, backend, arch) -> entry with .code, or None
        self.analysis: dict[str, Any] = {}
        self.on_event = on_event or (lambda e: None)
        self.path = Path(trajectory_path) if trajectory_path else None
        self.verifier = Verifier(evaluator, reusing_reference(options), provider)
        self.planner = Planner(provider) if provider else None
        self.coder = Coder(provider) if provider else None

    # -- bookkeeping -------------------------------------------------------
    def _save(self, traj: Trajectory) -> None:
        traj.elapsed_s = self.budget.elapsed()
        if self.path is not None:
            traj.save(self.path)
        self.on_event({"kind": "saved", "trajectory": traj})

    def _charge(self, traj: Trajectory, call: Completion | None, attempt: Attempt | None = None) -> None:
        if call is None:
            return
        traj.add_usage(call.input_tokens, call.output_tokens, call.cost_usd)
        if attempt is not None:
            attempt.input_tokens += call.input_tokens
            attempt.output_tokens += call.output_tokens
            attempt.cost_usd += call.cost_usd

    def _judge(self, traj: Trajectory, ctx: Context, attempt: Attempt) -> Verification:
        self._save(traj)  # the code is kept even if this process dies while judging
        started = time.monotonic()
        # Our own templates and archived winners need no model review; LLM code does.
        v = self.verifier.verify(ctx, attempt.code, f"{attempt.id}.py", review=attempt.source == "llm")
        self._charge(traj, v.review_call, attempt)
        attempt.verdict, attempt.reasons, attempt.checks = v.verdict, v.reasons, v.checks
        attempt.check_details = dict(v.details)
        attempt.speedup, attempt.timing, attempt.review = v.speedup, v.timing, v.review
        attempt.roofline = v.roofline
        attempt.judge_cost = v.cost
        attempt.elapsed_s += time.monotonic() - started
        self._save(traj)
        self.on_event({"kind": "attempt", "attempt": attempt})
        if v.verdict == "pass" and self.budget.reached_target(v.speedup):
            raise TargetReached(f"target speedup {self.config.target_speedup}x reached by {attempt.id}")
        fraction = self.budget.near_ceiling(v.speedup, v.roofline) if v.verdict == "pass" else None
        if fraction is not None:
            raise TargetReached(f"{attempt.id} reached {fraction:.0%} of its roofline bound "
                                f"({v.roofline.get('bound_by')}-bound on this machine's ceilings): little left to win")
        return v

    # -- the loop ------------------------------------------------------------
    def run(self, reference: str, reference_name: str, resume: Trajectory | None = None) -> Trajectory:
        label = f"llm: {self.provider.name}/{self.provider.model}" if self.provider else "offline engine (no LLM)"
        traj = resume or Trajectory(problem=reference_name, reference=reference, config=self.config.to_dict(),
                                    label=label)
        self.budget = Budget(self.config, already_spent_s=traj.elapsed_s)
        analysis = self.evaluator.analyze(reference, reference_name, self.options)
        self.analysis = analysis
        ctx = Context(reference, reference_name, analysis, backend=self.config.backend)
        ctx.strategies = self.strategies.retrieve(analysis, reference, self.config.backend)
        traj.strategies_used = [{"id": s.get("id"), "title": s.get("title"), "source": s.get("source")}
                                for s in ctx.strategies]
        self.on_event({"kind": "analysis", "analysis": analysis, "strategies": ctx.strategies})
        try:
            self._finish_pending(traj, ctx)
            self._archive_round(traj, ctx, analysis)
            self._offline_round(traj, ctx, analysis)
            if self.provider is not None:
                self._llm_rounds(traj, ctx)
            traj.stop_reason = traj.stop_reason or "rounds finished"
        except LimitsExceeded as exc:
            traj.stop_reason = f"limit: {exc}"
        except TargetReached as exc:
            traj.stop_reason = str(exc)
        self._save(traj)
        self.on_event({"kind": "stop", "reason": traj.stop_reason, "trajectory": traj})
        return traj

    def _finish_pending(self, traj: Trajectory, ctx: Context) -> None:
        """After a crash, attempts whose code was saved but not judged are judged now."""
        for attempt in traj.attempts():
            if attempt.verdict == "pending" and attempt.code:
                self._judge(traj, ctx, attempt)

    def _round0(self, traj: Trajectory) -> Round:
        round_ = next((r for r in traj.rounds if r.index == 0), None)
        if round_ is None:
            round_ = Round(index=0)
            traj.rounds.insert(0, round_)
        return round_

    def _archive_round(self, traj: Trajectory, ctx: Context, analysis: dict[str, Any]) -> None:
        """An identical (or near-identical) problem starts from the archived winner, judged again."""
        if self.archive is None or any(a.source == "archive" for a in traj.attempts()):
            return
        arch = arch_of(analysis, self.config.backend)
        entry = self.archive.archived(ctx.reference, self.config.backend, arch)
        if entry is None:
            return
        round_ = self._round0(traj)
        where = f"job {entry.job_id}" if getattr(entry, "job_id", None) else "the archive"
        attempt = Attempt(id="r0-archive", round=0, strategy=f"archived winner of {entry.problem} ({where})",
                          code=entry.code, source="archive")
        round_.attempts.append(attempt)
        self.on_event({"kind": "round", "index": 0, "plan": [{"title": attempt.strategy}]})
        self._judge(traj, ctx, attempt)

    def _offline_round(self, traj: Trajectory, ctx: Context, analysis: dict[str, Any]) -> None:
        if self.offline is None or self.config.offline_starters <= 0:
            return
        existing = next((r for r in traj.rounds if r.index == 0), None)
        offline_done = [a for a in existing.attempts if a.source == "offline"] if existing else []
        if offline_done and len(offline_done) >= len(existing.plan):
            return
        round_ = self._round0(traj)
        # Proposals are deterministic, so a resumed round judges exactly the ones it had not reached.
        # The engine writes kernels for the search's backend (C for cpu, Triton otherwise); every
        # proposal is judged, and where the judge measures speedups the fastest becomes the best.
        offline = self.offline.for_backend(self.config.backend) if isinstance(self.offline, PerBackend) \
            else self.offline
        tuned = self._tuned(traj, offline, analysis)
        if tuned is not None:
            proposals = tuned[:self.config.offline_starters]
        elif isinstance(offline, PlanningEngine):
            # The constructor's names and defaults come from the reference's source: the
            # analysis only counts init inputs, and a defaulted argument (bias=True) it
            # never saw would make every proposal fail the signature check.
            plan = offline.plan(analysis, self.config.offline_starters, from_source(traj.reference))
            proposals, traj.offline = plan.proposals, plan.to_json()
            if not proposals and self.provider is None:  # nothing else will run: the reason is why it stops
                traj.stop_reason = f"no offline proposal: {plan.reason}"
        else:
            proposals = offline.propose(analysis, self.config.offline_starters)
        round_.plan = [{"title": f"offline: {p.family} {p.params}", "rationale": p.note} for p in proposals]
        self.on_event({"kind": "round", "index": 0, "plan": round_.plan})
        self._judge_proposals(traj, ctx, round_, proposals)
        if isinstance(offline, PlanningEngine) and self.config.offline_extra > 0 and self._slower_than_eager(traj):
            # A verified kernel slower than eager is not a result: while the budget lasts, judge the
            # engine's further parameter sets (deterministic, so a resumed round finds the same ones).
            wanted = self.config.offline_starters + self.config.offline_extra
            more = tuned[:wanted] if tuned is not None else \
                offline.plan(analysis, wanted, from_source(traj.reference)).proposals
            if len(more) > len(proposals):
                round_.plan += [{"title": f"offline: {p.family} {p.params}", "rationale": p.note,
                                 "why": "no verified kernel beat eager yet"} for p in more[len(proposals):]]
                self.on_event({"kind": "round", "index": 0, "plan": round_.plan[len(proposals):]})
                self._judge_proposals(traj, ctx, round_, more, start=len(proposals), until_faster=True)
                # The plan keeps what was judged, so a resumed search sees round 0 as complete.
                judged = sum(1 for a in round_.attempts if a.source == "offline")
                round_.plan = round_.plan[:max(judged, len(proposals))]
                self._save(traj)

    def _tuned(self, traj: Trajectory, offline: Any, analysis: dict[str, Any]) -> list[Any] | None:
        """Backend cpu: the engine's wider space (``tuning_plan``) timed by the judge's tuning
        pass, fastest first; the round judges the first of them in full. None where there is no
        tuning (another backend, an engine or evaluator without it, a single proposal, or the pass
        failed: then the engine's own order stands). A resumed search keeps the order it saved."""
        if self.config.backend != "cpu" or self.config.tune_variants < 2 or not isinstance(offline, TuningEngine) \
                or not isinstance(self.evaluator, Tuner):
            return None
        plan = offline.tuning_plan(analysis, self.config.tune_variants, from_source(traj.reference))
        traj.offline = plan.to_json()
        if len(plan.proposals) < 2:
            return None
        described = [{"family": p.family, "params": p.params} for p in plan.proposals]
        if traj.tuning.get("proposals") == described and traj.tuning.get("order"):
            return [plan.proposals[i] for i in traj.tuning["order"]]
        try:
            # the starters are judged in full whatever the ranking: a pass that can rank no more stops early
            result = self.evaluator.tune(traj.reference, [p.source for p in plan.proposals], traj.problem,
                                         self.options, judged=self.config.offline_starters)
        except Exception as exc:  # the tuning pass only orders proposals: without it they keep the engine's order
            log.warning("tuning pass failed, proposals keep the engine's order: %s", exc)
            traj.tuning = {"error": str(exc)[:2000]}
            return None
        traj.tuning = {**result.to_json(), "proposals": described}
        self.on_event({"kind": "tuning", "tuning": traj.tuning})
        self._save(traj)
        return [plan.proposals[i] for i in result.order()]

    def _judge_proposals(self, traj: Trajectory, ctx: Context, round_: Round, proposals: list[Any],
                         start: int = 0, until_faster: bool = False) -> None:
        done = {a.id for a in round_.attempts}
        for n, proposal in enumerate(proposals[start:], start):
            if until_faster and not self._slower_than_eager(traj):
                return
            if f"r0-c{n}" in done:
                continue
            self.budget.check(traj.usage, len(traj.attempts()))
            attempt = Attempt(id=f"r0-c{n}", round=0, strategy=f"offline: {proposal.family} {proposal.params}",
                              code=proposal.source, source="offline")
            round_.attempts.append(attempt)
            self._save(traj)
            self._judge(traj, ctx, attempt)

    @staticmethod
    def _slower_than_eager(traj: Trajectory) -> bool:
        """The best verified kernel was timed for real and is no faster than eager: not done yet.
        (Where speed is not measured -- Triton's interpreter -- a verified kernel is all there is.)"""
        best = traj.best()
        return best is not None and best.speedup is not None and best.speedup <= 1.0

    def _llm_rounds(self, traj: Trajectory, ctx: Context) -> None:
        assert self.planner is not None and self.coder is not None
        queue: list[dict[str, Any]] = []
        stagnant, best_before = 0, _score(traj.best())
        done = len([r for r in traj.rounds if r.index > 0])
        if done:
            self._complete_round(traj, ctx, traj.rounds[-1])
        for index in range(done + 1, self.config.max_rounds + 1):
            self.budget.check(traj.usage, len(traj.attempts()))
            round_ = Round(index=index)
            stagnated = stagnant >= self.config.stagnation_rounds
            if stagnated or len(queue) < self.config.candidates_per_round:
                plan, calls = self.planner.plan(ctx, traj.attempts(), max(3, self.config.candidates_per_round),
                                                stagnated)
                for call in calls:
                    self._charge(traj, call)
                queue = plan + queue if stagnated else queue + plan
                round_.replanned, stagnant = stagnated, 0 if stagnated else stagnant
            picked, queue = queue[: self.config.candidates_per_round], queue[self.config.candidates_per_round :]
            round_.plan = picked
            traj.rounds.append(round_)
            self._save(traj)
            self.on_event({"kind": "round", "index": index, "plan": picked})
            self._llm_round(traj, ctx, round_, picked)
            best_now = _score(traj.best())
            stagnant = 0 if best_now > best_before else stagnant + 1
            best_before = max(best_now, best_before)

    def _complete_round(self, traj: Trajectory, ctx: Context, round_: Round) -> None:
        """A resumed search first writes the candidates its last round had not reached."""
        started = {int(a.id.split("-c")[1].split("-")[0]) for a in round_.attempts}
        missing = [n for n in range(len(round_.plan)) if n not in started]
        if missing:
            self._llm_round(traj, ctx, round_, round_.plan, only=missing)

    def _llm_round(self, traj: Trajectory, ctx: Context, round_: Round, picked: list[dict[str, Any]],
                   only: list[int] | None = None) -> None:
        parent = traj.best()
        self.budget.check(traj.usage, len(traj.attempts()))
        todo = [n for n in range(len(picked)) if only is None or n in only]
        # Model calls run in parallel; the judge runs one candidate at a time.
        with ThreadPoolExecutor(max_workers=max(1, self.config.parallel)) as pool:
            drafts = list(pool.map(lambda n: self.coder.write(ctx, picked[n], parent.code if parent else None), todo))
        for n, draft in zip(todo, drafts):
            self._attempt_with_repairs(traj, ctx, round_, n, picked[n], draft, parent)

    def _attempt_with_repairs(self, traj: Trajectory, ctx: Context, round_: Round, n: int,
                              strategy: dict[str, Any], draft: Draft, parent: Attempt | None) -> None:
        previous: Attempt | None = None
        slow = False
        for fix in range(self.config.max_repairs + 1):
            suffix = f"-fix{fix}" if fix else ""
            attempt = Attempt(id=f"r{round_.index}-c{n}{suffix}", round=round_.index, strategy=strategy["title"],
                              code=draft.code or "", source="llm", parent_id=parent.id if parent else None,
                              repair_of=previous.id if previous else None, prompt_excerpt=draft.prompt[:4000])
            self._charge(traj, draft.completion, attempt)
            round_.attempts.append(attempt)
            if draft.code is None:
                slow = False
                attempt.verdict, attempt.reasons = "fail", [f"format: {draft.error}"]
                feedback = f"- format: {draft.error}. Answer with the whole file in one ```python block."
                self._save(traj)
                self.on_event({"kind": "attempt", "attempt": attempt})
            else:
                v = self._judge(traj, ctx, attempt)
                # A verified kernel slower than eager is not done while repairs remain: the coder
                # gets the judge's timing and is asked for speed, not correctness.
                slow = v.verdict == "pass" and v.speedup is not None and v.speedup <= 1.0
                if v.verdict == "pass" and not slow:
                    return
                feedback = v.feedback()
            if fix == self.config.max_repairs:
                return
            self.budget.check(traj.usage, len(traj.attempts()))
            previous = attempt
            draft = (self.coder.speed_up(ctx, draft, draft.code or "", feedback) if draft.code is not None and slow
                     else self.coder.repair(ctx, draft, draft.code or "", feedback))


def reusing_reference(options: Any) -> Any:
    """The judge's options for one search's candidates: the reference's correctness trials run
    once and are replayed for the next candidates (EvalOptions.reuse_reference); a final
    evaluation outside the search keeps fresh seeds."""
    if isinstance(options, EvalOptions):
        return dataclasses.replace(options, reuse_reference=True)
    return options


def _score(attempt: Attempt | None) -> float:
    if attempt is None:
        return 0.0
    return attempt.speedup if attempt.speedup is not None else 1e-9


def replay(traj: Trajectory, evaluator: Evaluator, options: Any) -> list[dict[str, Any]]:
    """Judge every saved attempt again; report where the verdict differs."""
    out = []
    for a in traj.attempts():
        if not a.code:
            continue
        now = evaluator.evaluate(traj.reference, a.code, traj.problem, f"{a.id}.py", options)
        out.append({"id": a.id, "saved": a.verdict, "now": now.verdict, "same": now.verdict == a.verdict})
    return out
