"""The named checks: each turns what the runners sent into an outcome.

Every check reports "pass", "fail" or "skipped" with a detail a user can act
on. The reasons of a failed evaluation are the failed checks' details.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..drivers.base import JobOutcome
from . import compare, ops, work_share

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"


@dataclass
class Check:
    name: str
    outcome: str
    detail: str = ""


def runtime_check(outcome: JobOutcome, timeout: float, memory_mb: int) -> Check:
    """Did the candidate's process finish on its own, within its limits?"""
    ex = outcome.exit
    where = last_phase(outcome)
    if ex.get("reason") in ("timeout", "memory", "protocol", "unstoppable") or ex.get("signal"):
        return Check("runtime", FAIL, f"{outcome.ended(timeout, memory_mb)} {where}")
    err = outcome.first("error")
    if err is not None and err.get("phase") != "load":
        return Check("runtime", FAIL, f"raised {err.get('message', '')}")
    if not outcome.finished and err is None:
        return Check("runtime", FAIL, f"exited (code {ex.get('exit_code')}) before finishing {where}")
    return Check("runtime", PASS)


def last_phase(outcome: JobOutcome) -> str:
    frames = [f for f in outcome.frames if f.get("kind") in ("loaded", "trial", "phase", "timing", "post_timing")]
    if not frames:
        return "while loading"
    last = frames[-1]
    if last["kind"] == "loaded":
        return "in trial 0"
    if last["kind"] == "trial":
        return f"after trial {last.get('index')}"
    return f"during timing (after {last.get('name', last['kind'])})"


def signature_check(ref_sig: dict[str, Any], cand_sig: dict[str, Any]) -> Check:
    problems = []
    for part in ("init", "forward"):
        ref, cand = ref_sig.get(part, []), cand_sig.get(part, [])
        n_ref = len([p for p in ref if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")])
        positional = [p for p in cand if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
        required = len([p for p in positional if p[2]])
        var = any(p[1] == "VAR_POSITIONAL" for p in cand)
        if required > n_ref or (len(positional) < n_ref and not var):
            problems.append(f"ModelNew.{'__init__' if part == 'init' else 'forward'} takes "
                            f"{[p[0] for p in cand]}, the reference takes {[p[0] for p in ref]}")
    return Check("signature", FAIL if problems else PASS, "; ".join(problems))


def trial_checks(plan: list[dict[str, Any]], ref: dict[int, dict[str, Any]], cand: dict[int, dict[str, Any]],
                 tol: tuple[float, float] | None) -> list[Check]:
    """correctness, perturbed_sizes, output_format, finite, inputs_unchanged,
    kernel_launched, deterministic, no_stray_work over the correctness trials."""
    found: dict[str, list[str]] = {k: [] for k in (
        "correctness", "perturbed_sizes", "output_format", "finite", "inputs_unchanged",
        "kernel_launched", "deterministic", "no_stray_work")}
    ran: dict[str, int] = {"correctness": 0, "perturbed_sizes": 0}
    for i, spec in enumerate(plan):
        if spec["tag"] == "timing" or i not in ref or "error" in ref[i]:
            continue
        bucket = "correctness" if spec["tag"] == "default" else "perturbed_sizes"
        label = f"trial {i} ({_sizes(spec)})"
        c = cand.get(i)
        if c is None:
            found[bucket].append(f"{label}: no result (the candidate stopped before it)")
            continue
        if "error" in c:
            found[bucket].append(f"{label}: {c['error']}")
            continue
        ran[bucket] += 1
        r = ref[i]
        fmt, nonfinite, values = compare.output_problems(r["structure"], r["outputs"], c["structure"],
                                                         c["outputs"], c["kinds"], tol, ref64=r.get("outputs64"))
        if values and c.get("unloaded"):
            values.append("reference parameters not loaded into ModelNew (no parameter of that name and shape): "
                          + ", ".join(c["unloaded"]))
        found["output_format"] += [f"{label}: {p}" for p in fmt]
        found["finite"] += [f"{label}: {p}" for p in nonfinite]
        found[bucket] += [f"{label}: {p}" for p in values + fmt]
        changed = compare.changed_inputs(r["inputs"], c.get("inputs_after", []))
        if changed:
            found["inputs_unchanged"].append(f"{label}: forward modified input(s) {changed}")
        if not c.get("launches"):
            found["kernel_launched"].append(f"{label}: forward launched no Triton, compiled-extension or native kernel")
        stray = c.get("stray") or {}
        for kind in ("threads", "processes"):
            if stray.get(kind):
                found["no_stray_work"].append(f"{label}: {kind} still running after forward: {stray[kind]}")
        if "rerun_outputs" in c and not fmt:
            diff = compare.value_problems(c["outputs"], c["rerun_outputs"], tol)
            if diff:
                found["deterministic"].append(f"two runs on the same inputs disagree: {diff[0]}")
    checks = []
    for name, problems in found.items():
        if problems:
            checks.append(Check(name, FAIL, _group(problems)[:1500]))
        elif name in ran and not ran[name]:
            checks.append(Check(name, SKIPPED, "no trial of this kind ran"))
        else:
            checks.append(Check(name, PASS))
    return checks


def layout_check(plan: list[dict[str, Any]], ref: dict[int, dict[str, Any]], cand: dict[int, dict[str, Any]],
                 post: dict[str, Any] | None) -> Check:
    """output_layout: an output whose memory holds fewer elements than it has (an expanded,
    broadcast or overlapping view: some elements share memory) where the reference's output
    holds every one -- on a correctness trial or on any timed call. Such a view writes a
    fraction of the output (one row standing for all), so its speed is not the reference's
    work; it also breaks a caller that writes into the output. Values alone cannot show it."""
    problems: list[str] = []
    timing_sets = [i for i, s in enumerate(plan) if s["tag"] == "timing"]
    calls = [(f"trial {i} ({_sizes(s)})", i, (cand.get(i) or {}).get("spans"), (cand.get(i) or {}).get("outputs"))
             for i, s in enumerate(plan) if s["tag"] != "timing"]
    post = post or {}
    calls += [(f"timed call {k}", timing_sets[k], spans, outs) for k, (spans, outs) in
              enumerate(zip(post.get("spans") or [], post.get("outputs") or [])) if k < len(timing_sets)]
    for label, i, spans, outs in calls:
        r = ref.get(i)
        if r is None or "error" in r or not isinstance(spans, list) or not isinstance(outs, list):
            continue
        for k, (span, out) in enumerate(zip(spans, outs)):
            if not (isinstance(span, int) and hasattr(out, "numel")) or span >= out.numel():
                continue
            r_spans, r_outs = r.get("spans") or [], r.get("outputs") or []
            if k < min(len(r_spans), len(r_outs)) and isinstance(r_spans[k], int) \
                    and hasattr(r_outs[k], "numel") and r_spans[k] < r_outs[k].numel():
                continue  # the reference's output is such a view too
            problems.append(f"{label}: output {k} ({list(out.shape)}) keeps {span} values in memory for its "
                            f"{out.numel()} elements: an expanded or overlapping view; the reference's output "
                            "holds every element")
    return Check("output_layout", FAIL if problems else PASS, _group(problems)[:1500] if problems else "")


def _group(problems: list[str]) -> str:
    """'trial 0 (...): X; trial 1 (...): X' -> 'trials 0, 1: X'."""
    by_text: dict[str, list[str]] = {}
    for p in problems:
        head, sep, text = p.partition(": ")
        if not (sep and head.startswith("trial ")):
            head, text = "", p
        by_text.setdefault(text, []).append(head.split(" (")[0].removeprefix("trial "))
    parts = []
    for text, trials in by_text.items():
        trials = [t for t in dict.fromkeys(trials) if t]
        prefix = f"trial{'s' if len(trials) > 1 else ''} {', '.join(trials)}: " if trials else ""
        parts.append(prefix + text)
    return "; ".join(parts)


def _sizes(spec: dict[str, Any]) -> str:
    if spec.get("constants"):
        return "sizes " + ", ".join(f"{k}={v}" for k, v in spec["constants"].items())
    return "default sizes"


def post_timing_check(plan: list[dict[str, Any]], ref: dict[int, dict[str, Any]], post: dict[str, Any] | None,
                      tol: tuple[float, float] | None) -> Check:
    """Every timed call's whole output against the reference's for its inputs:
    each timed repetition ran on a set of its own, never seen before, and the
    runner kept what every one returned; so did the calls replayed under the
    recorder on sets drawn after the pass."""
    sets = [i for i, s in enumerate(plan) if s["tag"] == "timing" and i in ref and "error" not in ref[i]]
    if post is None:
        return Check("post_timing", FAIL, "no outputs came back from the timed calls")
    outputs, structures = post.get("outputs") or [], post.get("structures") or []
    problems = []
    # a pass clocked by the runner times every set; another may stop early (its time budget)
    short = post.get("clock") == "runner" and len(outputs) != len(sets)
    if not outputs or len(outputs) > len(sets) or len(structures) != len(outputs) or short:
        problems.append(f"{len(outputs)} timed outputs came back for {len(sets)} timed input sets")
    calls = [(f"timed call {k}", k, structures[k], outs) for k, outs in enumerate(outputs if not problems else [])]
    replayed = post.get("replayed") or []
    r_outs, r_structs = post.get("replay_outputs") or [], post.get("replay_structures") or []
    if len(r_outs) != len(replayed) or len(r_structs) != len(replayed) or not all(
            isinstance(k, int) and 0 <= k < len(outputs) for k in replayed):
        problems.append(f"{len(r_outs)} replayed outputs came back for timed calls {replayed}")
    else:
        calls += [(f"timed call {k} (recorded again)", k, st, o) for k, st, o in zip(replayed, r_structs, r_outs)]
    for name, k, structure, outs in calls:
        r = ref[sets[k]]
        fmt, nonfinite, values = compare.output_problems(r["structure"], r["outputs"], structure,
                                                         outs, ["torch.Tensor"] * len(outs), tol,
                                                         ref64=r.get("outputs64"))
        problems += [f"{name}: {p}" for p in fmt + nonfinite + values]
    return Check("post_timing", FAIL if problems else PASS,
                 ("outputs of the timed calls (each on inputs never seen before) are wrong: " + _group_calls(problems))
                 if problems else f"all {len(outputs)} timed calls compared in full, "
                                  f"{len(replayed)} of them again under the recorder")


def _group_calls(problems: list[str]) -> str:
    """The first problem in full, and how many timed calls had one."""
    calls = {p.split(":")[0] for p in problems}
    return problems[0][:600] + (f" (and {len(calls) - 1} more timed call(s))" if len(calls) > 1 else "")


def amend(check: Check, problem: str | None) -> Check:
    """``check`` failed by one more finding (kept as it is when there is none)."""
    if not problem:
        return check
    return Check(check.name, FAIL, f"{check.detail}; {problem}" if check.outcome == FAIL else problem)


def fresh_outputs_check(post: dict[str, Any] | None) -> Check:
    """fresh_outputs: each timed call returned memory that nothing in the candidate's process
    held once the judge let it go (runner/timed.py, FRESH). Attack: an output kept -- a ring,
    a stock faulted in during the warm-up, a pool it is given back to, a view or a storage
    object -- and returned again, which skips the allocation every baseline pays and, in a
    user's program, overwrites the result the caller got from the call before. Assumes the
    judge's own references are all gone by then (it keeps copies, never the outputs)."""
    if post is None or "retained" not in post:
        return Check("fresh_outputs", SKIPPED, "no timed pass")
    kept = post.get("retained") or []
    if kept:
        return Check("fresh_outputs", FAIL,
                     f"timed calls {', '.join(map(str, kept[:8]))}{' ...' if len(kept) > 8 else ''}: the output's "
                     f"memory was still held in the candidate's process after the judge let it go (kept across "
                     f"calls, to be returned again): each call must return memory of its own")
    return Check("fresh_outputs", PASS, "every timed call's output was let go with the judge's reference")


def timed_inputs_check(check: Check, post: dict[str, Any] | None) -> Check:
    """``inputs_unchanged`` over the timed calls too (compared after each one)."""
    changed = (post or {}).get("inputs_changed") or []
    return amend(check, f"timed calls {', '.join(map(str, changed[:8]))}: forward modified its inputs"
                 if changed else None)


# Native CPU threads: CPU time of the process over the timed calls, per second
# of wall time, may exceed the granted threads by this much (the OpenMP pools
# of torch and of the kernel spin for a moment after their parallel regions).
CPUS_USED_SLACK = 1.25


# The process's CPU clock lags by up to a scheduler tick for each thread running on
# another CPU when it is read, so over a short pass the ratio is noise (a 1-set pass of a
# microsecond kernel read 3.4 CPUs on 2): passes shorter than this are not judged by it.
# Thread parity there rests on OMP_THREAD_LIMIT and the source policy.
CPUS_USED_MIN_MS = 50.0


def thread_parity_problem(timing: dict[str, Any] | None, granted: int | None) -> str | None:
    used = (timing or {}).get("cpus_used")
    if not isinstance(used, (int, float)) or not granted:
        return None
    over = (timing or {}).get("cpus_used_over_ms")
    if isinstance(over, (int, float)) and over < CPUS_USED_MIN_MS:
        return None
    if used > granted * CPUS_USED_SLACK + 0.5:
        return (f"the timed calls kept {used:.1f} CPUs busy on average; the baselines were given {granted} "
                "thread(s): a kernel runs on the threads the judge grants (no num_threads of its own)")
    return None


def crosstalk_problem(ref: JobOutcome, cand: JobOutcome) -> str | None:
    """Timed by turns (``sandbox/runner/turns.py``): a job held stopped ran
    during the other's turn. Either way the ratio is void, and only the
    candidate can have caused it (a candidate sharing the uid can signal the
    baselines' job; the baselines' job is the judge's own)."""
    for who, outcome in (("the baselines' job", ref), ("the candidate", cand)):
        for f in outcome.crosstalk:
            return (f"{who} ran for {f.get('ticks')} clock tick(s) while held stopped during the other's timed "
                    "turn: the timing is void")
    return None


def ops_check(ref_frames: dict[int, dict[str, Any]], cand_frames: dict[int, dict[str, Any]]) -> Check:
    ref_ops = set().union(*(set(f.get("ops", {})) for f in ref_frames.values() if "error" not in f))
    cand_ops: dict[str, int] = {}
    for f in cand_frames.values():
        for op, n in (f.get("ops") or {}).items():
            cand_ops[op] = cand_ops.get(op, 0) + n
    used = ops.handed_off(ref_ops, set(cand_ops))
    ran = ", ".join(f"aten::{op} x{n}" for op, n in sorted(cand_ops.items())) or "none"
    if used:
        return Check("no_reference_ops", FAIL,
                     f"handed the main computation to torch: ran {', '.join('aten::' + u for u in used)} "
                     f"(torch ops run in forward: {ran})")
    return Check("no_reference_ops", PASS, f"torch ops run in forward: {ran}")


def ablation_check(ref: dict[int, dict[str, Any]], frame: dict[str, Any] | None,
                   tol: tuple[float, float] | None) -> Check:
    """Forward once more (the timed instance on the first timing set, or a
    fresh one on the first default trial) with every custom kernel skipped and
    fresh memory poisoned: if the output is still right, torch or a cache of
    earlier results computed it, and the kernels are decoys."""
    if frame is None:  # the harness sends it before its last frame: the channel was forged
        return Check("kernel_does_work", FAIL, "the run ended without the forward call with kernels skipped")
    if frame.get("index") is None or frame["index"] not in ref:
        return Check("kernel_does_work", SKIPPED, "no default trial to re-run")
    if "error" in frame:
        return Check("kernel_does_work", PASS, f"forward fails without its kernels: {frame['error'][:200]}")
    r = ref[frame["index"]]
    fmt, _, values = compare.output_problems(r["structure"], r["outputs"], frame.get("structure", ""),
                                             frame.get("outputs", []), frame.get("kinds", []), tol, first=True)
    skipped = frame.get("skipped", 0)
    if fmt or values:
        return Check("kernel_does_work", PASS, f"the output changes when its {skipped} kernel launch(es) are skipped")
    what = f"all {skipped} custom kernel launch(es) skipped" if skipped else "no custom kernel to skip"
    return Check("kernel_does_work", FAIL,
                 f"forward still returns the right output with {what} and fresh memory poisoned: "
                 "the kernels do not compute it (decoy kernels, or results kept from earlier calls)")


def provenance_check(plan: list[dict[str, Any]], ref: dict[int, dict[str, Any]],
                     cand: dict[int, dict[str, Any]], post: dict[str, Any] | None = None) -> tuple[Check, dict[str, Any]]:
    """Where the returned values came from, on every correctness trial and on
    the timed calls replayed under the recorder (``post``, the post_timing frame):
    each output written by a custom kernel, and the torch work it depends on
    at most ``work_share.TORCH_SHARE_MAX`` of the reference's FLOPs. Returns
    the check and the shares of the first default trial (for results and reports)."""
    found: dict[str, list[str]] = {}
    summary: dict[str, Any] = {}
    timing_sets = [i for i, s in enumerate(plan) if s["tag"] == "timing" and i in ref and "error" not in ref[i]]
    # The timing sets share one model and sizes: the first one's work is every one's.
    timed_work = (ref[timing_sets[0]].get("work") or {}) if timing_sets else {}
    watched_reps = (post or {}).get("provenance_reps") or []
    for k, watched in zip((post or {}).get("replayed") or range(len(watched_reps)), watched_reps):
        if isinstance(watched, dict) and watched:
            for p in work_share.problems(timed_work, watched):
                found.setdefault(" ".join(p.split()[:2]), []).append(f"trial timed{k}: {p}")
    for i, spec in enumerate(plan):
        r, c = ref.get(i), cand.get(i)
        if spec["tag"] == "timing" or r is None or "error" in r or c is None or "error" in c:
            continue
        for p in work_share.problems(r.get("work") or {}, c.get("provenance")):
            found.setdefault(" ".join(p.split()[:2]), []).append(f"trial {i}: {p}")
        if c.get("rerun_provenance"):
            for p in work_share.problems(r.get("work") or {}, c["rerun_provenance"]):
                found.setdefault(" ".join(p.split()[:2]), []).append(f"trial {i}-again: {p}")
        if not summary and c.get("provenance"):
            summary = work_share.shares(r.get("work") or {}, c["provenance"])
    if not summary and not found:
        return Check("kernel_provenance", SKIPPED, "no correctness trial finished"), summary
    if found:
        # One line per kind of finding: the trials it holds for, then its first full text.
        parts = [f"{_where([p.split(': ')[0].removeprefix('trial ') for p in ps])}: {ps[0].split(': ', 1)[1]}"
                 for ps in found.values()]
        return Check("kernel_provenance", FAIL, "outputs not computed by the custom kernels: "
                     + "; ".join(parts)[:1500]), summary
    return Check("kernel_provenance", PASS, work_share.describe(summary)), summary


def _where(trials: list[str]) -> str:
    """['timed0', 'timed3', '0', '1'] -> 'timed calls 0, 3 and trials 0, 1'."""
    timed = [t.removeprefix("timed") for t in trials if t.startswith("timed")]
    plain = [t for t in trials if not t.startswith("timed")]
    said = [f"trial{'s' if len(plain) > 1 else ''} {', '.join(plain)}"] if plain else []
    calls = [f"timed call{'s' if len(timed) > 1 else ''} {', '.join(timed[:8])}"] if timed else []
    return " and ".join(calls + said)


def policy_check(findings: list[str]) -> Check:
    """Read from the candidate's source by the judge (see sandbox/policy/python.py)."""
    if findings:
        shown = "; ".join(findings[:6]) + (f"; and {len(findings) - 6} more" if len(findings) > 6 else "")
        return Check("source_policy", FAIL, shown)
    return Check("source_policy", PASS)


def tamper_check(cand: JobOutcome) -> Check:
    names: list[str] = []
    for f in cand.frames:
        names += [n for n in f.get("tamper") or [] if n not in names]
    if names:
        said = [n if " " in n else f"replaced {n}" for n in names]
        return Check("no_tampering", FAIL, "; ".join(said))
    return Check("no_tampering", PASS)


def median_iqr(times: list[float]) -> dict[str, float]:
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {"median_ms": statistics.median(times), "q1_ms": q[0], "q3_ms": q[2], "reps": len(times)}


# The runner's clock over the timed pass minus the same pass without calls is
# what the calls took; the reported mean may not be below this share of it,
# minus a slack for the noise of the two passes' loads and flushes and for the
# frames' trips to the runner.
CORROBORATION_SHARE = 0.5
CORROBORATION_SLACK_MS = 0.2
CORROBORATION_NULL_SHARE = 0.25
CORROBORATION_STAMP_MS = 2.0
# Sets of the null pass at most (the judge asks the candidate's job for no more): it
# measures what a set costs besides the call (its load, the cache flush, the checks),
# the same for every set, so its mean over 16 is as good as over 50, and the 34 left
# out were 0.1 s of a small evaluation.
NULL_PASS_REPS = 16


def corroboration_check(outcome: JobOutcome, label: str, device: str = "cuda", enforce: bool = False) -> Check:
    """The reported times against the runner's own clock over the same calls.

    Enforced on CUDA and, with ``enforce``, for native kernels on the CPU
    (whose speedups are reported). For Triton's interpreter on the CPU it is
    reported only: no speedup is reported there, and patched clocks are still
    caught by no_tampering. On CUDA the runner's clock reads each repetition's own
    window (``repetition_windows``), elsewhere the whole pass."""
    timing = next((f for f in outcome.of_kind("timing") if f.get("name") == label), None)
    if timing is not None and timing.get("clock") == "runner":
        if timing.get("clock_errors") or not timing.get("times_ms"):
            why = "; ".join(timing.get("clock_errors") or []) or "no call was clocked"
            return Check("timer_corroborated", FAIL, f"the runner could not clock the timed calls: {why}")
        return runner_clock_check(timing)
    stamps = [outcome.stamp(f"{label}:{p}") for p in ("loop_start", "loop_end", "null_start", "null_end")]
    if timing is None or any(s is None for s in stamps) or not timing.get("times_ms"):
        return Check("timer_corroborated", FAIL if enforce else SKIPPED, "no timing phase ran")
    l0, l1, n0, n1 = stamps
    # On CUDA the clock starts after the first repetition (runner/timing.time_cuda): what CUDA
    # pays once, lazily, falls there. The reported times compared are those of the same calls.
    # The frame comes from the candidate's process: it may leave out one repetition, never more.
    skip = 1 if device == "cuda" and timing.get("clocked_from") and len(timing["times_ms"]) > 1 else 0
    clocked = timing["times_ms"][skip:]
    reps = len(clocked)
    null_reps = min(len(timing["times_ms"]), NULL_PASS_REPS)  # what the judge asked the null pass for
    if device == "cuda":
        windows = repetition_windows(outcome, label, (l0, l1, n0, n1), reps, null_reps)
        if isinstance(windows, str):
            return Check("timer_corroborated", FAIL, windows)
        null_ms, outside_ms = windows
    else:
        # Timed by turns: the runner held the job stopped between its sets (its own record).
        null_ms = max(0.0, (n1 - n0 - outcome.paused_within(n0, n1)) * 1000 / null_reps)
        outside_ms = max(0.0, (l1 - l0 - outcome.paused_within(l0, l1)) * 1000 / reps - null_ms)
    reported = statistics.median(clocked)
    mean = statistics.fmean(clocked)
    if device != "cuda" and not enforce:
        return Check("timer_corroborated", SKIPPED,
                     f"CPU, not enforced: reported {reported:.4f} ms, outside clock {outside_ms:.4f} ms")
    slack = CORROBORATION_SLACK_MS + CORROBORATION_NULL_SHARE * null_ms + CORROBORATION_STAMP_MS / reps
    if mean < CORROBORATION_SHARE * outside_ms - slack:
        return Check("timer_corroborated", FAIL,
                     f"reported {reported:.4f} ms per call (mean {mean:.4f} ms), "
                     f"the runner's clock saw {outside_ms:.4f} ms over the same {reps} calls")
    return Check("timer_corroborated", PASS,
                 f"reported mean {mean:.4f} ms, outside clock {outside_ms:.4f} ms over the same {reps} calls")


# A pass clocked by the runner: the job's own record of its calls may not fall below this
# share of the runner's, less the clock's own cost a call (a cold first call's window can
# cost twice the calibrated one), its spread where larger, and never less than
# RUNNER_SLACK_MS: a record cut below that was rewritten inside the job. The verdict's
# times are the runner's either way: this check names the cheat, it never guards a number.
RUNNER_SHARE = 0.5
RUNNER_SLACK_MS = 0.02


def runner_clock_check(timing: dict[str, Any]) -> Check:
    """The times are the runner's (``runner/clocking.py``); the job's own record of the same
    calls must not fall far below them (a candidate that rewrote it reached the harness)."""
    times, inside = timing["times_ms"], timing.get("inside_ms") or []
    runner_ms = statistics.median(times)
    said = f"{len(times)} calls timed on the runner's clock, outside the candidate's process " \
           f"(median {runner_ms:.4f} ms, less {timing.get('clock_overhead_ms') or 0:.4f} ms a call of the clock's own)"
    if len(inside) != len(times):
        return Check("timer_corroborated", FAIL, f"{said}; the candidate's process recorded {len(inside)} of them")
    own_ms = statistics.median(inside)
    slack = max(RUNNER_SLACK_MS, float(timing.get("clock_spread_ms") or 0.0),
                float(timing.get("clock_overhead_ms") or 0.0))
    if own_ms < RUNNER_SHARE * runner_ms - slack:
        return Check("timer_corroborated", FAIL,
                     f"{said}; the candidate's process recorded {own_ms:.4f} ms for the same calls: "
                     "its record of its times was rewritten")
    return Check("timer_corroborated", PASS, f"{said}; its own record agrees ({own_ms:.4f} ms)")


def repetition_windows(outcome: JobOutcome, label: str, bounds: tuple[float, float, float, float], reps: int,
                       null_reps: int) -> tuple[float, float] | str:
    """CUDA: (the null pass's mean window, the calls' mean window less it), in ms, from the
    runner's stamps of each repetition's marks (runner/timing.cuda_rep), or why they cannot
    be trusted. Marks come from the candidate's process: exactly one start and one end per
    clocked repetition, in turn, inside their pass, or the clock is not corroborated."""
    l0, l1, n0, n1 = bounds
    found = []
    for prefix, count, lo, hi in (("", reps, l0, l1), ("null_", null_reps, n0, n1)):
        names = {f"{label}:{prefix}rep_start": 0, f"{label}:{prefix}rep_end": 1}
        # in the order the frames came (two frames read at once share a stamp)
        marks = [(names[f["name"]], f.get("_t")) for f in outcome.frames
                 if f.get("kind") == "phase" and f.get("name") in names]
        starts, ends = [t for k, t in marks if k == 0], [t for k, t in marks if k == 1]
        sound = (len(starts) == len(ends) == count and all(k == i % 2 for i, (k, _) in enumerate(marks))
                 and all(isinstance(t, float) and lo <= t <= hi for _, t in marks))
        if not sound:
            return (f"the {prefix or 'timed '}pass's repetition marks do not add up: {len(starts)} starts and "
                    f"{len(ends)} ends for {count} repetitions, or out of turn, or outside the pass")
        found.append(statistics.fmean(e - s for s, e in zip(starts, ends)) * 1000 if count else 0.0)
    timed_ms, null_ms = found
    return null_ms, max(0.0, timed_ms - null_ms)
