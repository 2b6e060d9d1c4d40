"""What this machine's CPU is called, for labelling CPU timings (and as the
hardware key of CPU baselines): "AMD EPYC 7B13, 2 threads". Read in the trusted
process from /proc/cpuinfo; nothing here runs user code."""

from __future__ import annotations

import os
import platform
from functools import lru_cache


@lru_cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_threads(setting: int | None = None) -> int:
    """KFORGE_CPU_THREADS when set, else the cores this process may run on."""
    return setting or len(os.sched_getaffinity(0))


def cpu_label(setting: int | None = None) -> str:
    threads = cpu_threads(setting)
    return f"{cpu_model()}, {threads} thread{'' if threads == 1 else 's'}"
