"""The runner's watch loop over a job's pipe: every frame a child wrote reaches the judge,
even when the child exits while the judge is still taking an earlier, large frame."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from sandbox.runner.channel.wire import HEADER
from sandbox.runner.process import jobs

CHILD = """
import os, struct, sys
out = sys.stdout.buffer
def frame(payload):
    out.write(struct.pack({fmt!r}, len(payload)) + payload)
frame(b"x" * (3 << 20))   # larger than the backlog allowed below
frame(b"done")            # the job's last frame, written just before it exits
out.flush()
"""


class SlowJudge:
    """Takes a large frame slowly (as a judge decoding GBs does); records what arrived."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def send_locked(self, obj: dict | None, raw: bytes | None = None, fds: list | None = None) -> None:
        if raw is None:
            return
        if len(raw) > 1 << 20:
            time.sleep(1.5)
        self.frames.append(bytes(raw[HEADER.size:]))


def test_frames_left_in_the_pipe_of_an_exited_child_are_read_while_the_judge_catches_up(monkeypatch,
                                                                                       tmp_path) -> None:
    monkeypatch.setattr(jobs, "FORWARD_BACKLOG_BYTES", 1 << 20)
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(fmt=HEADER.format)], stdout=subprocess.PIPE)
    judge = SlowJudge()
    job = jobs.Job(judge, {"timeout": 30, "memory_mb": 0, "job": {}}, child.pid, 0, False,
                   os.dup(child.stdout.fileno()), str(tmp_path), time.monotonic())
    try:
        job.watch()
        exit_frame = job.end()
    finally:
        child.stdout.close()
    assert exit_frame["exit_code"] == 0 and exit_frame["reason"] is None, exit_frame
    assert [len(f) for f in judge.frames] == [3 << 20, 4] and judge.frames[-1] == b"done"


JUDGE_SCRIPT = """
import sys
from sandbox import EvalOptions, Judge
reference, candidate = (open(p).read() for p in sys.argv[1:3])
with Judge(warm=True) as judge:
    judge.evaluate(reference, candidate, "relu_affine.py", "busy.py", EvalOptions(device="cpu", timeout=300))
"""


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_a_job_ends_soon_after_its_judge_is_killed(tmp_path) -> None:
    """A judge killed mid-job (kill -9, a batch's worker terminated) leaves no runner computing
    for nobody: the runner notices its parent is gone while it watches the job, ends the job
    and exits (a candidate that never returns is the job here)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    fixtures = os.path.join(root, "tests", "fixtures", "judge")
    judge = subprocess.Popen([sys.executable, "-c", JUDGE_SCRIPT, os.path.join(fixtures, "problems", "relu_affine.py"),
                              os.path.join(fixtures, "hostile", "busy_loop_forward.py")], cwd=root)
    try:
        # the runner, and a job under it that lasts (the candidate's: the reference's ends in a second or two)
        deadline, seen, busy = time.monotonic() + 120, {}, []
        while time.monotonic() < deadline and not busy:
            now = time.monotonic()
            for pair in ((r, j) for r in _children(judge.pid) for j in _children(r)):
                seen.setdefault(pair, now)
            busy = [pair for pair, first in seen.items() if now - first > 4.0 and _alive(pair[1])]
            time.sleep(0.5)
        assert busy, "the candidate's job never started"
        judge.kill()
        judge.wait(30)
        runner, job = busy[0]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (_alive(runner) or _alive(job)):
            time.sleep(0.2)
        assert not _alive(job), "the job kept running after its judge was killed"
        assert not _alive(runner), "the runner outlived its judge"
    finally:
        if judge.poll() is None:
            judge.kill()
