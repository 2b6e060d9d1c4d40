"""The memory allocator every runner (and so every party's job) allocates through.

A party's time must not depend on what its process freed before. Under glibc it
did: torch allocates a large tensor with ``posix_memalign(64)``, glibc asks for the
size plus the alignment and splits the rest off, so a freed output is a few bytes
too small for the next identical request whenever anything was allocated above it;
the heap then grows into fresh pages and the call pays a page fault per 4 KB of its
output (~5,800 a call for a 23 MB output, ~5 ms on this machine), or not, by the
process's history: the same kernel read 5.4 ms and 13.5 ms in two judgements
(docs/benchmarks/history/2026-12-05.md and 2026-12-06.md, issue 56).

jemalloc with these settings gives every party the same steady state whatever came
before: large blocks in the ordinary arenas (``oversize_threshold:0``: none in the
arena that returns its pages at once), and freed pages never returned
(``dirty_decay_ms:-1``, ``muzzy_decay_ms:-1``), so a freed output's pages are the next
equal request's. A job is one short-lived process, so keeping its freed pages costs
no more than its peak. Where no jemalloc is installed (``scripts/setup.sh`` and the
sandbox image install Debian's) the runner runs on glibc and says so: the
allocator is part of every timing's label and of the baseline cache's key.
"""

from __future__ import annotations

import os

# Debian's libjemalloc2, by architecture; then the usual library directories.
PATHS = ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
         "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so.2")
CONF = "oversize_threshold:0,dirty_decay_ms:-1,muzzy_decay_ms:-1"
# "system" runs the runner on the C library's allocator instead.
SETTING = "KFORGE_SANDBOX_ALLOCATOR"


def library() -> str | None:
    """The jemalloc a runner preloads, or None (none installed, or the setting says system)."""
    if os.environ.get(SETTING, "jemalloc").strip().lower() == "system":
        return None
    return next((p for p in PATHS if os.path.isfile(p)), None)


def env() -> dict[str, str]:
    """What a runner's environment gets for it: nothing where there is no jemalloc."""
    path = library()
    return {"LD_PRELOAD": path, "MALLOC_CONF": CONF} if path else {}
