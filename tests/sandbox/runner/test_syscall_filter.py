"""The timed pass's system-call filter (sandbox/runner/guards/syscall_filter.py), in a
fresh interpreter of its own: after it is installed a new thread, process or program, or
a call through another table's numbers, kills the whole process with SIGSYS -- also when
a thread that existed before asks -- while memory, files, torch and the OpenMP team that
was already running keep working.

Each case runs in a new Python, never in a fork of the test process: a fork of a process
whose OpenMP team already ran has no team, and its first parallel torch call waits for
threads that do not exist (the test then hangs, not fails)."""

from __future__ import annotations

import ctypes
import platform
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.runner.guards import syscall_filter

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="no table for this machine")

ROOT = Path(__file__).resolve().parents[3]
CHILD_TIMEOUT_S = 120


def _torch_work() -> None:
    import torch

    x = torch.randn(512, 512)
    y = (x @ x).relu().sum(dim=1)  # torch's own pool, started before the filter in ``before``
    with open("/proc/self/maps") as f:  # files may still be read
        assert f.read()
    assert torch.isfinite(y).all()
    buf = bytearray(64 << 20)  # large memory still maps
    buf[-1] = 1


def _nothing() -> None:
    pass


def _new_thread() -> None:
    threading.Thread(target=lambda: None).start()


def _fork() -> None:
    import os

    os.fork()


def _exec() -> None:
    import os

    os.execv("/bin/true", ["true"])


def _subprocess() -> None:
    subprocess.run(["/bin/true"], check=False)


_GO, _DONE = threading.Event(), threading.Event()


def _old_thread_waits() -> None:
    def worker() -> None:
        _GO.wait()
        threading.Thread(target=lambda: None).start()  # asked from the old thread
        _DONE.set()

    threading.Thread(target=worker, daemon=True).start()


def _old_thread_asks() -> None:
    _GO.set()
    _DONE.wait(10)


def _x32_getpid() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(ctypes.c_long(syscall_filter.X32_BIT | 39))


# case -> (runs before the filter, runs after it)
CASES: dict[str, tuple[Callable[[], None], Callable[[], None]]] = {
    "honest": (_torch_work, _torch_work),
    "thread": (_nothing, _new_thread),
    "fork": (_nothing, _fork),
    "exec": (_nothing, _exec),
    "subprocess": (_nothing, _subprocess),
    "old_thread": (_old_thread_waits, _old_thread_asks),
    "x32": (_nothing, _x32_getpid),
}


def run_case(case: str) -> None:
    """The child's side: exit 0 when ``case`` ran through, 3 when it raised."""
    import os

    before, after = CASES[case]
    code = 0
    try:
        before()
        syscall_filter.install()
        after()
    except BaseException:  # noqa: BLE001 - any error is the exit code's to say
        code = 3
    sys.stdout.flush()
    os._exit(code)


def _in_child(case: str) -> tuple[str | None, int | None]:
    """(signal name, exit code) of a new interpreter that runs ``case``."""
    code = f"from tests.sandbox.runner.test_syscall_filter import run_case; run_case({case!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=CHILD_TIMEOUT_S, capture_output=True)
    if done.returncode < 0:
        return signal.Signals(-done.returncode).name, None
    assert done.returncode in (0, 3), done.stderr.decode(errors="replace")[-2000:]
    return None, done.returncode


def test_what_runs_honestly_keeps_running() -> None:
    assert _in_child("honest") == (None, 0)


@pytest.mark.parametrize("what", ["thread", "fork", "exec", "subprocess"])
def test_a_new_task_or_program_kills_the_process(what: str) -> None:
    assert _in_child(what) == ("SIGSYS", None)


def test_a_thread_started_before_is_filtered_too() -> None:
    """TSYNC: the filter holds on every thread, not only the one that installed it."""
    assert _in_child("old_thread") == ("SIGSYS", None)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 numbers exist on x86-64 only")
def test_another_tables_numbers_kill_the_process() -> None:
    assert _in_child("x32") == ("SIGSYS", None)


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
