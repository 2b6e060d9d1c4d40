"""The timed pass's system-call filter (sandbox/runner/guards/syscall_filter.py), in a
forked process of its own: after it is installed a new thread, process or program, or a
call through another table's numbers, kills the whole process with SIGSYS -- also when a
thread that existed before asks -- while memory, files, torch and the OpenMP team that
was already running keep working."""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import threading
from collections.abc import Callable

import pytest
import torch

from sandbox.runner.guards import syscall_filter

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="no table for this machine")


def _in_child(after: Callable[[], None], before: Callable[[], None] = lambda: None) -> tuple[str | None, int | None]:
    """(signal name, exit code) of a forked child that runs ``before``, installs the filter, runs ``after``."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            before()
            syscall_filter.install()
            after()
        except BaseException:  # noqa: BLE001 - any error is the exit code's to say
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name, None
    return None, os.WEXITSTATUS(status)


def _torch_work() -> None:
    x = torch.randn(512, 512)
    y = (x @ x).relu().sum(dim=1)  # torch's own pool, started before the filter in ``before``
    with open("/proc/self/maps") as f:  # files may still be read
        assert f.read()
    assert torch.isfinite(y).all()
    buf = bytearray(64 << 20)  # large memory still maps
    buf[-1] = 1


def test_what_runs_honestly_keeps_running() -> None:
    assert _in_child(_torch_work, before=_torch_work) == (None, 0)


@pytest.mark.parametrize("what", ["thread", "fork", "exec", "subprocess"])
def test_a_new_task_or_program_kills_the_process(what: str) -> None:
    def act() -> None:
        if what == "thread":
            threading.Thread(target=lambda: None).start()
        elif what == "fork":
            os.fork()
        elif what == "exec":
            os.execv("/bin/true", ["true"])
        else:
            import subprocess

            subprocess.run(["/bin/true"], check=False)

    assert _in_child(act) == ("SIGSYS", None)


def test_a_thread_started_before_is_filtered_too() -> None:
    """TSYNC: the filter holds on every thread, not only the one that installed it."""
    go, done = threading.Event(), threading.Event()

    def before() -> None:
        def worker() -> None:
            go.wait()
            threading.Thread(target=lambda: None).start()  # asked from the old thread
            done.set()

        threading.Thread(target=worker, daemon=True).start()

    def after() -> None:
        go.set()
        done.wait(10)

    assert _in_child(after, before) == ("SIGSYS", None)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 numbers exist on x86-64 only")
def test_another_tables_numbers_kill_the_process() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    getpid_x32 = syscall_filter.X32_BIT | 39
    assert _in_child(lambda: libc.syscall(ctypes.c_long(getpid_x32))) == ("SIGSYS", None)


def test_the_program_kills_for_every_forbidden_number_of_each_table() -> None:
    for machine in ("x86_64", "aarch64"):
        prog = syscall_filter.program(machine)
        kill = len(prog) - 1
        assert prog[kill][3] == syscall_filter.RET_KILL_PROCESS and prog[kill - 1][3] == syscall_filter.RET_ALLOW
        # each forbidden number is a jump-if-equal whose target is the kill instruction
        targets = {k: i + 1 + jt for i, (code, jt, _, k) in enumerate(prog) if code == 0x15 and i > 1}
        for name, number in syscall_filter.forbidden_calls(machine).items():
            assert targets.get(number) == kill, (machine, name)
    with pytest.raises(syscall_filter.FilterError, match="no system-call table"):
        syscall_filter.program("sparc")
