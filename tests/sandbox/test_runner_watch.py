"""The runner's watch loop over a job's pipe: every frame a child wrote reaches the judge,
even when the child exits while the judge is still taking an earlier, large frame."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from sandbox.runner import jobs
from sandbox.runner.wire import HEADER

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

    def send_locked(self, obj: dict | None, raw: bytes | None = None) -> None:
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
