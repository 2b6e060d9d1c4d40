"""CPU tests that keep the four layers of the GPU path's first run on an H200 (issue 54)
from coming back; CI has no GPU. Real process sandboxes, no mocks: probe jobs report
what they saw by raising (the error frame's message).

1. The runner never asks the CUDA runtime before it forks (runner/process/cuda_fork.py).
2. An isolated runner's children may write their own threads' names under /proc (the
   CUDA driver does), while /proc's system-wide parts and the host stay read-only.
3. A job under a uid of its own, with no passwd line, has a user name for the libraries
   that ask (inductor's cache directory).
4. The null pass of a CUDA timing repeats the timed pass's repetition without the call.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.drivers.base import JobOutcome, RunnerSession
from sandbox.drivers.process import ProcessDriver, runtime_paths
from sandbox.runner.measure import timing
from sandbox.runner.process import confine

FAKE_CUDA_RUNNER = Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "fake_cuda_runner.py"
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="isolation and uids of their own need the judge to be root")


def probe(session: RunnerSession, body: str) -> str:
    source = "import os, sys, json\nimport torch\n" + body + "\nraise RuntimeError(json.dumps(RESULT))\n"
    job = {"role": "reference", "source": source, "filename": "probe.py", "device": "cpu", "constants": [],
           "trials": [{"seed": 1, "input_seed": 2, "tag": "default"}], "time_reps": 0}
    outcome = session.run(job, timeout=120, memory_mb=4096, max_procs=64)
    error = outcome.first("error")
    assert error is not None and "RuntimeError: " in error["message"], outcome
    return json.loads(error["message"].split("RuntimeError: ", 1)[1].strip().splitlines()[0])


class FakeCudaDriver(ProcessDriver):
    runner_module = [str(FAKE_CUDA_RUNNER)]


def test_a_runner_whose_device_count_query_raises_still_serves_cuda_jobs() -> None:
    driver = FakeCudaDriver(isolate=False)
    session = driver.start("cuda")  # raises if the runner asked the runtime while warming up
    try:
        cuda = session.ready["cuda"]
        # the facts came from a probe child; the fork is clean
        assert cuda["devices"] == 1 and cuda["clean"] is True, cuda
        seen = probe(session, "RESULT = [torch.cuda.device_count(), torch._C._cuda_getDeviceCount.__name__,"
                              " os.environ.get('PYTORCH_NVML_BASED_CUDA_CHECK')]")
        # a job's child asks the real query again (here the fixture's, which answers 1 outside the runner)
        assert seen == [1, "device_count_query", "1"], seen
    finally:
        driver.stop(session)


THREAD_NAME = """
import threading
ready, done, tids = threading.Event(), threading.Event(), []
def worker():
    tids.append(threading.get_native_id()); ready.set(); done.wait()
t = threading.Thread(target=worker); t.start(); ready.wait()
def attempt(path, text):
    try:
        with open(path, 'w') as f:
            f.write(text)
        return 'written'
    except OSError as exc:
        return errno.errorcode[exc.errno]
import errno
comm = f'/proc/self/task/{tids[0]}/comm'
RESULT = [attempt(comm, 'cuda-EvtHandlr'), open(comm).read().strip(),
          attempt('/proc/sys/kernel/hostname', 'x'), attempt('/etc/hostname', 'x'), os.getuid()]
done.set(); t.join()
"""


@pytest.fixture(scope="module")
def isolated() -> Iterator[RunnerSession]:
    driver = ProcessDriver(isolate=True)
    session = driver.start("cpu")
    try:
        yield session
    finally:
        driver.stop(session)


@ROOT
def test_isolated_jobs_name_their_threads_as_the_cuda_driver_does(isolated: RunnerSession) -> None:
    wrote, name, sysctl, etc, uid = probe(isolated, THREAD_NAME)
    assert (wrote, name) == ("written", "cuda-EvtHandlr")
    assert sysctl in ("EACCES", "EROFS") and etc in ("EACCES", "EROFS"), (sysctl, etc)
    assert uid != 0


@ROOT
def test_mount_plan_keeps_proc_writable_and_its_system_parts_read_only() -> None:
    """The runner's mount namespace itself, as root (who could write /proc/sys elsewhere)."""
    scratch = tempfile.mkdtemp(prefix="kforge-plan-")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            notes = confine.isolate_runner(scratch, ["/root", "/home"], runtime_paths())
            found = {"notes": notes}
            for path in ("/proc/sys/kernel/hostname", "/etc/hostname", "/proc/self/comm", f"{scratch}/x"):
                try:
                    with open(path, "w") as f:
                        f.write("kforge-plan" if "comm" in path else "x")
                    found[path] = "written"
                except OSError as exc:
                    found[path] = errno.errorcode[exc.errno]
            os.write(w, json.dumps(found).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        found = json.loads(f.read())
    os.waitpid(pid, 0)
    assert found["/proc/self/comm"] == "written" and found[f"{scratch}/x"] == "written", found
    assert found["/proc/sys/kernel/hostname"] == "EROFS" and found["/etc/hostname"] == "EROFS", found
    assert any(n.startswith("/proc:") for n in found["notes"]), found["notes"]


@ROOT
def test_a_job_uid_without_a_passwd_line_has_a_user_name(isolated: RunnerSession) -> None:
    uid, missing, user, cache = probe(isolated, """
import getpass, pwd
from torch._inductor.runtime.cache_dir_utils import default_cache_dir
try:
    pwd.getpwuid(os.getuid()); missing = False
except KeyError:
    missing = True
RESULT = [os.getuid(), missing, getpass.getuser(), default_cache_dir()]
""")
    assert missing and uid != 0
    assert user == f"kforge-job-{uid}" and user in cache, (user, cache)


class Recorder:
    """Stands in for the CUDA calls of a repetition and writes down their order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def event(self, enable_timing: bool = False) -> str:
        self.calls.append("event")
        return f"e{len(self.calls)}"

    def record(self, event: str) -> None:
        self.calls.append("record")

    def sync(self) -> None:
        self.calls.append("sync")

    def elapsed(self, start: str, end: str) -> float:
        self.calls.append("elapsed")
        return 1.0

    def zero_(self) -> None:
        self.calls.append("flush")


def test_cuda_null_pass_repeats_the_timed_repetition_without_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    monkeypatch.setattr(timing, "_Event", rec.event)
    monkeypatch.setattr(timing, "_record", rec.record)
    monkeypatch.setattr(timing, "_cuda_sync", rec.sync)
    monkeypatch.setattr(timing, "_elapsed", rec.elapsed)
    monkeypatch.setattr(timing, "l2_flush_buffer", lambda: rec)
    hooks = {"before": lambda i: rec.calls.append("load"), "after": lambda i: rec.calls.append("check")}
    timed = timing.Loop(3, **hooks)
    assert timing.time_cuda(lambda i: rec.calls.append("call"), timed, budget_s=10.0, warmup=0) == [1.0] * 3
    timed_calls = [c for c in rec.calls if c != "call"]
    assert rec.calls.count("call") == 3
    rec.calls.clear()
    null = timing.Loop(3, **hooks)
    timing.run_null(null, 3, "cuda")
    # the warm-up's closing sync is the one step the null pass has no reason to repeat
    assert rec.calls == timed_calls[1:], (rec.calls, timed_calls)
    assert len(timed.host) == len(null.host) == 3


def test_cuda_warm_up_pays_the_repetitions_first_use_costs_before_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA loads kernels lazily: the flush's fill kernel and the first events cost 40-60 ms
    once, which the outside clock charged to the timed calls (layer 4 on an H200)."""
    rec = Recorder()
    for name, fake in (("_Event", rec.event), ("_record", rec.record), ("_cuda_sync", rec.sync),
                       ("_elapsed", rec.elapsed), ("l2_flush_buffer", lambda: rec)):
        monkeypatch.setattr(timing, name, fake)
    loop = timing.Loop(2, warm=lambda: rec.calls.append("warm"), start=lambda: rec.calls.append("start"))
    timing.time_cuda(lambda i: rec.calls.append("call"), loop, budget_s=10.0, warmup=2)
    before = rec.calls[:rec.calls.index("start")]
    rep = ["event", "event", "flush", "sync", "record", "warm", "sync", "record", "sync", "elapsed"]
    assert before[:len(rep) * 2] == rep * 2, before


def cuda_outcome(times_ms: list[float], window_ms: float, timed_gap_ms: float, null_gap_ms: float,
                 overhead_ms: float = 0.05, first_rep_ms: float = 40.0) -> JobOutcome:
    """A CUDA timed pass as the runner stamps it: the first repetition (a one-time cost) before
    the clock, then for each repetition a window of ``window_ms`` (the call) plus
    ``overhead_ms`` (flush, syncs, events, marks) between its marks, and ``timed_gap_ms`` of
    load and checks between windows; the null pass alike with no call and ``null_gap_ms``."""
    from sandbox.verdict.timer_checks import NULL_PASS_REPS

    frames: list[dict] = []
    t = first_rep_ms / 1000

    def phase(name: str) -> None:
        frames.append({"kind": "phase", "name": f"candidate:{name}", "_t": t})

    phase("loop_start")
    for _ in times_ms[1:]:
        t += timed_gap_ms / 1000
        phase("rep_start")
        t += (window_ms + overhead_ms) / 1000
        phase("rep_end")
    phase("loop_end")
    phase("null_start")
    for _ in range(min(len(times_ms), NULL_PASS_REPS)):
        t += null_gap_ms / 1000
        phase("null_rep_start")
        t += overhead_ms / 1000
        phase("null_rep_end")
    phase("null_end")
    frames.append({"kind": "timing", "name": "candidate", "times_ms": times_ms, "clocked_from": 1})
    return JobOutcome(frames=frames)


def test_cuda_outside_clock_reads_each_repetitions_own_window() -> None:
    """Layer 4 as an H200 showed it: a 0.45 ms kernel whose 470 MB output's checks took 85 ms
    a repetition in the timed pass and 38 ms in the null pass (2 repetitions); and the
    selftest's 0.12 ms kernel whose first repetition paid 37 ms once (10 repetitions).
    The outside clock reads each repetition's window, after the first: both pass."""
    from sandbox.verdict.timer_checks import corroboration_check

    big = corroboration_check(cuda_outcome([0.45, 0.45, 0.45], 0.45, 85.0, 38.0), "candidate", "cuda")
    assert big.outcome == "pass", big.detail
    small = corroboration_check(cuda_outcome([0.12] * 10, 0.12, 0.4, 0.3), "candidate", "cuda")
    assert small.outcome == "pass" and "same 9 calls" in small.detail, small.detail


def test_cuda_outside_clock_still_catches_a_low_report() -> None:
    from sandbox.verdict.timer_checks import corroboration_check

    cheat = corroboration_check(cuda_outcome([0.1] * 50, 5.0, 0.5, 0.5), "candidate", "cuda")
    assert cheat.outcome == "fail" and "same 49 calls" in cheat.detail, cheat.detail


def test_cuda_repetition_marks_a_candidate_adds_or_drops_fail_the_clock() -> None:
    """The marks come from the candidate's process, which may write frames: a pair added
    (a short window to pull the mean down), a mark dropped, or marks out of turn."""
    from sandbox.verdict.timer_checks import corroboration_check

    added = cuda_outcome([0.1] * 20, 5.0, 0.5, 0.5)
    at = next(i for i, f in enumerate(added.frames) if f["name"] == "candidate:loop_end")
    t = added.frames[at - 1]["_t"]
    added.frames[at:at] = [{"kind": "phase", "name": f"candidate:{n}", "_t": t} for n in ("rep_start", "rep_end")]
    dropped = cuda_outcome([0.1] * 20, 5.0, 0.5, 0.5)
    dropped.frames.remove(next(f for f in dropped.frames if f["name"] == "candidate:rep_end"))
    swapped = cuda_outcome([0.1] * 20, 5.0, 0.5, 0.5)
    i = next(i for i, f in enumerate(swapped.frames) if f["name"] == "candidate:rep_start")
    swapped.frames[i]["name"], swapped.frames[i + 1]["name"] = "candidate:rep_end", "candidate:rep_start"
    for outcome in (added, dropped, swapped):
        check = corroboration_check(outcome, "candidate", "cuda")
        assert check.outcome == "fail" and "marks do not add up" in check.detail, check.detail


def test_cuda_repetitions_mark_their_windows_just_outside_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    for name, fake in (("_Event", rec.event), ("_record", rec.record), ("_cuda_sync", rec.sync),
                       ("_elapsed", rec.elapsed), ("l2_flush_buffer", lambda: rec)):
        monkeypatch.setattr(timing, name, fake)
    mark = rec.calls.append
    loop = timing.Loop(3, mark=mark, start=lambda: rec.calls.append("start"))
    timing.time_cuda(lambda i: rec.calls.append("call"), loop, budget_s=10.0, warmup=0)
    clocked = rec.calls[rec.calls.index("start"):]
    one = ["event", "event", "flush", "sync", "rep_start", "record", "call", "sync", "record", "sync", "rep_end",
           "elapsed"]
    assert rec.calls[:rec.calls.index("start")].count("rep_start") == 0  # the first repetition is not clocked
    assert clocked == ["start"] + one * 2, clocked
    rec.calls.clear()
    timing.run_null(timing.Loop(2, mark=mark), 2, "cuda")
    assert rec.calls == [c for c in one if c != "call"] * 2, rec.calls


@ROOT
def test_a_job_sharing_its_uid_keeps_its_process_budget_on_top_of_what_the_uid_runs() -> None:
    """A runner that is not root forks jobs under its own uid, which the judge, the runner
    and their threads share: an H200 batch run as an ordinary user (3 workers) had every
    reference job fail to start the CUDA driver's threads under RLIMIT_NPROC. Here: a uid
    already running 80 threads, then a job's confinement with a budget of 16."""
    import threading

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            uid = 61000 + os.getpid() % 1000
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)  # as an ordinary user: no privilege past RLIMIT_NPROC
            stop = threading.Event()
            crowd = [threading.Thread(target=stop.wait) for _ in range(80)]
            for t in crowd:
                t.start()
            confine.confine_child(uid, 1024, 60, 16, False)
            try:
                extra = [threading.Thread(target=stop.wait) for _ in range(8)]
                for t in extra:
                    t.start()
                found = "started"
            except RuntimeError as exc:
                found = str(exc)
            stop.set()
            os.write(w, found.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        found = f.read()
    os.waitpid(pid, 0)
    assert found == "started", found


def test_a_single_cuda_repetition_is_clocked_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    for name, fake in (("_Event", rec.event), ("_record", rec.record), ("_cuda_sync", rec.sync),
                       ("_elapsed", rec.elapsed), ("l2_flush_buffer", lambda: rec)):
        monkeypatch.setattr(timing, name, fake)
    loop = timing.Loop(1, mark=rec.calls.append, start=lambda: rec.calls.append("start"))
    timing.time_cuda(lambda i: rec.calls.append("call"), loop, budget_s=10.0, warmup=0)
    assert loop.clocked_from == 0 and rec.calls[:2] == ["sync", "start"] and rec.calls.count("rep_start") == 1, rec.calls
