"""The named checks: each turns what the runners sent into an outcome.

Every check reports "pass", "fail" or "skipped" with a detail a user can act
on. The reasons of a failed evaluation are the failed checks' details.
"""

from __future__ import annotations

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


# The check each kind of correctness trial answers to.
BUCKETS = {"default": "correctness", "perturbed": "perturbed_sizes", "domain": "domain_inputs"}


def trial_checks(plan: list[dict[str, Any]], ref: dict[int, dict[str, Any]], cand: dict[int, dict[str, Any]],
                 tol: tuple[float, float] | None) -> list[Check]:
    """correctness, perturbed_sizes, domain_inputs, output_format, finite, inputs_unchanged,
    kernel_launched, deterministic, no_stray_work over the correctness trials."""
    found: dict[str, list[str]] = {k: [] for k in (
        "correctness", "perturbed_sizes", "domain_inputs", "output_format", "finite", "inputs_unchanged",
        "kernel_launched", "deterministic", "no_stray_work")}
    ran: dict[str, int] = {"correctness": 0, "perturbed_sizes": 0, "domain_inputs": 0}
    for i, spec in enumerate(plan):
        if spec["tag"] == "timing" or i not in ref or "error" in ref[i]:
            continue
        bucket = BUCKETS[spec["tag"]]
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
    if spec["tag"] == "domain":
        return "default sizes, inputs scaled, with outliers"
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
    held once the judge let it go (runner/measure/timed.py, FRESH). Attack: an output kept -- a ring,
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
    """Timed by turns (``sandbox/runner/process/turns.py``): a job held stopped ran
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
