"""no_stray_work's native-thread rule: a thread that appeared during a call counts as work
left running only if it still works after the call (running, or using CPU) -- a pool the
call started and that now sleeps (OpenMP's team, first needed at a larger trial; OpenBLAS
and oneDNN run on it) is not. An honest BLAS kernel was rejected on a perturbed trial for an
idle new thread (tests/agents/offline/test_cpu_judge.py, about one run in five)."""

from __future__ import annotations

import threading
import time

from sandbox.runner import guards


def _thread(target) -> tuple[threading.Thread, set[int]]:
    before = guards.threads.native_threads()
    t = threading.Thread(target=target, daemon=True)
    t.start()
    time.sleep(0.05)
    return t, guards.threads.native_threads() - before


def test_an_idle_new_thread_is_not_busy_and_a_spinning_one_is() -> None:
    stop = threading.Event()
    idle, idle_ids = _thread(lambda: stop.wait(5))

    def spin() -> None:
        while not stop.is_set():
            pass

    spinning, spin_ids = _thread(spin)
    try:
        assert len(idle_ids) == 1 and len(spin_ids) == 1
        assert guards.threads.busy_threads(idle_ids) == []
        assert guards.threads.busy_threads(spin_ids) == sorted(spin_ids)
        assert guards.threads.busy_threads(set()) == []
    finally:
        stop.set()
        idle.join()
        spinning.join()
    assert guards.threads.busy_threads(idle_ids | spin_ids) == []  # gone threads are not busy
