"""A job clocked by the runner hands it its memory file (``runner/measure/clocking.py``), also where
the runner is not root (docker's uid 65534): every child of the runner is not dumpable, and
such a process's /proc files open only with CAP_DAC_OVERRIDE."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from sandbox.runner.process import clocking, confine, freeze

NOBODY = 65534
PR_GET_DUMPABLE = 3


def _as_nobody_not_dumpable(body) -> int:
    """Runs ``body`` in a child as uid 65534, not dumpable (as a docker runner's job child is);
    its exit code."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setgroups([])
            os.setresuid(NOBODY, NOBODY, NOBODY)
            confine._libc.prctl(confine.PR_SET_DUMPABLE, 0, 0, 0, 0)
            code = body()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become uid 65534 (CI runs as root)")
def test_a_child_that_is_not_root_hands_over_its_memory_and_stays_not_dumpable() -> None:
    def body() -> int:
        try:  # as the runner's child was before: no way in without the exposure
            os.close(clocking._own_memory(expose=False))
            return 10
        except PermissionError:
            pass
        mine, theirs = socket.socketpair()
        clocking.hand_memory(theirs, expose=True)
        fd, sampler = clocking.take_memory(mine)
        if fd < 0:
            return 11
        if not sampler.live:  # its counters came with it, as uid 65534 and not dumpable
            return 14
        # the file is this process's memory, readable and writable through the handed fd
        buf = bytearray(b"before")
        import ctypes

        address = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
        os.pwrite(fd, b"after!", address)
        if bytes(buf) != b"after!":
            return 12
        if confine._libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
            return 13  # dumpable for the open only
        return 0

    assert _as_nobody_not_dumpable(body) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become uid 65534 (CI runs as root)")
def test_without_the_others_stopped_the_child_hands_over_nothing() -> None:
    def body() -> int:
        mine, theirs = socket.socketpair()
        clocking.hand_memory(theirs, expose=False)
        return 0 if clocking.take_memory(mine)[0] == -1 else 20

    assert _as_nobody_not_dumpable(body) == 0


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


def test_stop_others_holds_every_live_jobs_process_and_lets_go_of_only_those_it_stopped() -> None:
    running, held = os.fork(), None
    if running == 0:
        os.setsid()
        while True:
            time.sleep(0.01)
    held = os.fork()
    if held == 0:
        os.setsid()
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    try:
        while _state(held) not in "Tt":
            time.sleep(0.01)
        stopped = freeze.stop_others(os.getuid(), False, {running, held})
        assert stopped == [running] and _state(running) in "Tt"
        freeze.cont(stopped)
        time.sleep(0.05)
        assert _state(running) not in "Tt" and _state(held) in "Tt"  # a held job stays held
    finally:
        for pid in (running, held):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
