"""CPU tests that keep the four layers of the GPU path's first run on an H200 (issue 54)
from coming back; CI has no GPU. Real process sandboxes, no mocks: probe jobs report
what they saw by raising (the error frame's message).

1. The runner never asks the CUDA runtime before it forks (runner/cuda_fork.py).
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
from sandbox.runner import confine, timing

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


def cuda_outcome(times_ms: list[float], first_rep_ms: float, per_call_ms: float, null_ms: float,
                 clocked_from: int) -> JobOutcome:
    """A CUDA timed pass whose first repetition pays a one-time cost, stamped as the runner
    stamps it: the loop's clock starts after ``clocked_from`` repetitions."""
    from sandbox.verdict.checks import NULL_PASS_REPS

    reps = len(times_ms)
    start = first_rep_ms / 1000 if clocked_from else 0.0
    loop_end = first_rep_ms / 1000 + (reps - 1) * (per_call_ms + null_ms) / 1000
    null_end = loop_end + null_ms * min(reps, NULL_PASS_REPS) / 1000
    stamps = {"loop_start": start, "loop_end": loop_end, "null_start": loop_end, "null_end": null_end}
    frames: list[dict] = [{"kind": "phase", "name": f"candidate:{p}", "_t": t} for p, t in stamps.items()]
    frames.append({"kind": "timing", "name": "candidate", "times_ms": times_ms, "clocked_from": clocked_from})
    return JobOutcome(frames=frames)


def test_cuda_outside_clock_leaves_out_the_first_repetitions_one_time_cost() -> None:
    """Layer 4 as the selftest met it on an H200: 0.12 ms calls, one repetition 37 ms longer
    (CUDA's lazy first-use costs), 10 calls: 3.6 ms a call by the outside clock."""
    from sandbox.verdict.checks import corroboration_check

    times = [0.12] * 10
    before = corroboration_check(cuda_outcome(times, 37.5, 0.12, 0.5, clocked_from=0), "candidate", "cuda")
    assert before.outcome == "fail", before.detail
    after = corroboration_check(cuda_outcome(times, 37.5, 0.12, 0.5, clocked_from=1), "candidate", "cuda")
    assert after.outcome == "pass" and "same 9 calls" in after.detail, after.detail
    # a kernel that reports a tenth of what it takes still fails, from the second repetition on
    cheat = corroboration_check(cuda_outcome([0.1] * 50, 0.6, 5.0, 0.5, clocked_from=1), "candidate", "cuda")
    assert cheat.outcome == "fail", cheat.detail
    # the frame comes from the candidate's process: a larger number still leaves out one repetition
    forged = cuda_outcome([0.1] * 50, 0.6, 5.0, 0.5, clocked_from=1)
    forged.frames[-1]["clocked_from"] = 40
    assert corroboration_check(forged, "candidate", "cuda").outcome == "fail"
