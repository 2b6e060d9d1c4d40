"""Threads and processes a forward call left behind."""

from __future__ import annotations

import os
import threading
import time


def native_threads() -> set[int]:
    """The ids of this process's threads (native and Python alike)."""
    return {int(t) for t in os.listdir("/proc/self/task")}


def _thread_stat(tid: int) -> tuple[str, int] | None:
    """(state, user + system ticks) of one of this process's threads; None once it is gone."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[0], int(fields[11]) + int(fields[12])


def busy_threads(tids: set[int], settle_s: float = 0.02) -> list[int]:
    """Of threads that appeared during a call, those still working after it: running, or
    using CPU over ``settle_s``. A thread pool that a call started (OpenMP's team the first
    time a kernel's size crosses its parallel threshold; OpenBLAS and oneDNN run on it too)
    waits asleep once the call returns; work left running does not."""
    time.sleep(settle_s)  # an OpenMP worker spins briefly at the end of its region, then sleeps
    first = {t: _thread_stat(t) for t in tids}
    time.sleep(settle_s)
    busy = []
    for t, a in first.items():
        b = _thread_stat(t)
        if a is not None and b is not None and (b[0] == "R" or b[1] > a[1]):
            busy.append(t)
    return busy


def stray_work(py_threads_before: set[int], own_uid: int) -> dict[str, list[str]]:
    """Threads and processes of this child that outlived the forward call."""
    alive = [t for t in threading.enumerate() if t.ident not in py_threads_before and t.is_alive()]
    procs = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if os.stat(f"/proc/{name}").st_uid == own_uid and own_uid != 0:
                    procs.append(name)
            except OSError:
                continue
    return {"threads": [t.name for t in alive], "processes": procs}
