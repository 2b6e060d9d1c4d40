"""Where a clocked job's CPU time went: instruction addresses sampled by the kernel.

A native kernel can reach anything mapped in its process: from any libc address it
can walk the ELF tables to ``dlsym``, and from there call the CPython API or torch.
Work torch or Python does inside such a call is not seen by the dispatch-level
record (``provenance``) when it runs with the record switched off or on another
thread, and would be credited to the kernel. What ran is measured instead:

- In a clocked job's child, before any untrusted code, a helper thread opens a
  sampling counter on the child's main thread, one per CPU (``open_counters``):
  task clock, user-space addresses only, inherited by every thread and process the
  job starts later. The helper then exits, so no thread of the job owns the counters
  (``prctl(PR_TASK_PERF_EVENTS_DISABLE)`` reaches only a caller's own), and the files
  go to the runner with the memory file; the job keeps no copy.
- The runner maps each counter's ring buffer (``Sampler``). Around every clocked
  call (the job stopped on both sides) it drops what came before and reads what
  the call left: each sample's address, placed by the job's own map of its memory
  (``/proc/<pid>/maps``, opened by the job with the counters) in one of
  ``KINDS``. The sampling period follows the longest window of the party so far,
  so that a call fills at most a share of the buffer; while a call runs, the runner
  empties the buffers each time it wakes to watch the job (``collect``, every 50 ms
  at most), so a long first call loses nothing either; samples the kernel still lost
  are counted as such (a buffer found full).

The judge compares the torch and Python-extension share of the samples with the
torch share the data flow credited (``sandbox/verdict/sampled.py``).

Only the standard library is used here.
"""

from __future__ import annotations

import bisect
import ctypes
import fcntl
import mmap
import os
import struct
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine, -1)
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_TASK_CLOCK = 1
SAMPLE_IP, SAMPLE_TID = 1, 2
FLAG_INHERIT, FLAG_EXCLUDE_KERNEL, FLAG_EXCLUDE_HV = 1 << 1, 1 << 5, 1 << 6
IOC_PERIOD = 0x40082404  # _IOW('$', 4, __u64)
RECORD_SAMPLE = 9
ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7: every field this module sets lies in the first 48 bytes
PAGES = 16  # data pages per CPU: within the kernel's unlocked allowance for a few jobs at once
# Task-clock nanoseconds between samples: a sample costs ~1-2 us, so at least this period keeps
# the cost under 1% of a thread's time, for every party alike.
MIN_PERIOD_NS = 200_000
MAX_PERIOD_NS = 1_000_000_000
# The period is chosen so that a call as long as the longest one so far leaves at most this
# many samples a CPU: a third of the buffer's room (24-byte records).
SAMPLES_PER_CALL = 1000
FULL_MARGIN = 64  # bytes: less room than this between tail and head is a full buffer

# Where an address lies: the kinds of mapping the judge tells apart.
# An OpenMP runtime is its own kind wherever it lies (torch's wheel ships the libgomp a
# candidate's OpenMP then runs in): its samples are workers waiting, the work itself runs in
# the outlined functions of whoever opened the parallel region.
KINDS = ("torch", "python_ext", "python", "openmp", "anonymous", "unmapped", "other")
_OPENMP = ("libgomp", "libiomp", "libomp")
_libc = ctypes.CDLL(None, use_errno=True)


def _attr(period_ns: int) -> bytes:
    buf = bytearray(ATTR_SIZE)
    struct.pack_into("=IIQQQQQ", buf, 0, PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_TASK_CLOCK, period_ns,
                     SAMPLE_IP | SAMPLE_TID, 0, FLAG_INHERIT | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV)
    return bytes(buf)


def _cpus() -> list[int]:
    try:
        with open("/sys/devices/system/cpu/possible") as f:
            spans = f.read().strip().split(",")
    except OSError:
        return list(range(os.cpu_count() or 1))
    cpus: list[int] = []
    for span in spans:
        lo, _, hi = span.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


def open_counters(period_ns: int = MIN_PERIOD_NS) -> tuple[list[int], str | None]:
    """In a job's child, before any untrusted code: the counters on its main thread (one per
    CPU) and the file of its memory map, opened by a thread that then exits; or no files and
    why not. The caller hands the files on and closes them."""
    tid = threading.get_native_id()
    opened: list[int] = []
    errors: list[str] = []

    def helper() -> None:
        attr = ctypes.create_string_buffer(_attr(period_ns), ATTR_SIZE)
        for cpu in _cpus():
            fd = _libc.syscall(SYS_PERF_EVENT_OPEN, attr, tid, cpu, -1, ctypes.c_ulong(8))  # FD_CLOEXEC
            if fd >= 0:
                opened.append(fd)
            else:
                err = ctypes.get_errno()
                if err not in (19, 22):  # ENODEV, EINVAL: a CPU that is not online
                    errors.append(f"perf_event_open on CPU {cpu}: {os.strerror(err)}")
    if SYS_PERF_EVENT_OPEN < 0:
        return [], f"no perf_event_open on {os.uname().machine}"
    thread = threading.Thread(target=helper, name="kforge-sampler")
    thread.start()
    thread.join()
    if errors or not opened:
        for fd in opened:
            os.close(fd)
        return [], (errors[0] if errors else "no CPU took a counter") + _paranoid()
    try:
        maps = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        for fd in opened:
            os.close(fd)
        return [], f"/proc/self/maps: {exc.strerror}"
    return [maps] + opened, None


def _paranoid() -> str:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return f" (kernel.perf_event_paranoid is {f.read().strip()}; sampling needs 2 or less, " \
                   "and a container profile that allows perf_event_open)"
    except OSError:
        return ""


@dataclass
class Tally:
    """The samples of one clocked call, by kind of mapping (``KINDS``)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    lost: int = 0
    period_ns: int = MIN_PERIOD_NS
    by_file: dict[str, int] = field(default_factory=dict)

    def frame(self) -> dict[str, Any]:
        top = sorted(self.by_file.items(), key=lambda kv: -kv[1])[:6]
        return {"counts": dict(self.counts), "lost": self.lost, "period_ns": self.period_ns,
                "top": [[os.path.basename(k) or k, v] for k, v in top]}


class Classifier:
    """Places an address by a map of the job's memory: the mapping's file, and which of
    ``KINDS`` that file is."""

    def __init__(self) -> None:
        import importlib.util
        import sysconfig

        torch_dir = ""
        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.origin:
            torch_dir = os.path.realpath(os.path.dirname(spec.origin))
        self.torch_dir = torch_dir
        paths = sysconfig.get_paths()
        self.ext_dirs = sorted({os.path.realpath(p) for p in (paths.get("purelib"), paths.get("platlib"),
                                                                 paths.get("platstdlib")) if p}
                               | {os.path.realpath(p) for p in sys.path if p.endswith(("site-packages", "lib-dynload"))})
        self.python = {os.path.realpath(sys.executable)}

    def kind(self, path: str) -> str:
        if not path or path.startswith("["):
            return "anonymous" if path in ("", "[anon]") or path.startswith("[anon") else "other"
        real = path.removesuffix(" (deleted)")
        if os.path.basename(real).startswith(_OPENMP):
            return "openmp"
        if self.torch_dir and real.startswith(self.torch_dir + "/"):
            return "torch"
        if real in self.python or "/libpython" in real:
            return "python"
        if any(real.startswith(d + "/") for d in self.ext_dirs):
            return "python_ext"
        return "other"


def read_maps(fd: int) -> list[tuple[int, int, str]]:
    """(start, end, path) of every executable mapping, from a maps file opened earlier."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    out = []
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5 or "x" not in parts[1]:
            continue
        lo, _, hi = parts[0].partition("-")
        out.append((int(lo, 16), int(hi, 16), parts[5] if len(parts) > 5 else ""))
    out.sort()
    return out


class Sampler:
    """The runner's side: the counters' ring buffers and the job's memory map."""

    def __init__(self, fds: list[int], why_not: str | None = None) -> None:
        self.fds = fds
        self.why_not = why_not
        self.maps_fd = fds[0] if fds else -1
        self.buffers: list[mmap.mmap] = []
        self.period_ns = MIN_PERIOD_NS
        self.longest_ms: dict[str, float] = {}
        self._classifier: Classifier | None = None
        self._ips: list[int] = []  # a call's samples drained while it ran (``collect``)
        self._lost = 0
        self.collecting = False
        page = mmap.PAGESIZE
        try:
            for fd in fds[1:]:
                self.buffers.append(mmap.mmap(fd, (1 + PAGES) * page, mmap.MAP_SHARED,
                                              mmap.PROT_READ | mmap.PROT_WRITE))
        except OSError as exc:
            self.close()
            self.why_not = f"the counters' buffers could not be mapped: {exc.strerror}"

    @property
    def live(self) -> bool:
        return bool(self.buffers)

    def before(self, party: str) -> None:
        """The job is stopped, its call next: what came before is dropped, and the period set
        for a call of this party."""
        longest = self.longest_ms.get(party, 0.0)
        period = max(MIN_PERIOD_NS, min(MAX_PERIOD_NS, int(longest * 1e6 / SAMPLES_PER_CALL)))
        if period != self.period_ns:
            for fd in self.fds[1:]:
                fcntl.ioctl(fd, IOC_PERIOD, struct.pack("=Q", period))
            self.period_ns = period
        for buf in self.buffers:
            head = struct.unpack_from("=Q", buf, 1024)[0]
            struct.pack_into("=Q", buf, 1032, head)
        self._ips, self._lost, self.collecting = [], 0, True

    def collect(self) -> None:
        """While a call runs (the runner waking to watch it): what the counters wrote so far is
        taken out of their buffers, so that a call longer than a buffer's room loses nothing."""
        if self.collecting:
            for buf in self.buffers:
                self._lost += _drain(buf, self._ips)

    def after(self, party: str, window_ms: float) -> Tally:
        """The job is stopped after its call: the samples the call left, placed."""
        self.longest_ms[party] = max(self.longest_ms.get(party, 0.0), window_ms)
        tally = Tally(period_ns=self.period_ns)
        ips, tally.lost, self.collecting = self._ips, self._lost, False
        self._ips, self._lost = [], 0
        for buf in self.buffers:
            tally.lost += _drain(buf, ips)
        if not ips:
            return tally
        maps = read_maps(self.maps_fd)
        starts = [m[0] for m in maps]
        classifier = self._classifier = self._classifier or Classifier()
        for ip in ips:
            k = bisect.bisect_right(starts, ip) - 1
            if k >= 0 and ip < maps[k][1]:
                path = maps[k][2]
                kind = classifier.kind(path)
            else:
                path, kind = "(unmapped)", "unmapped"
            tally.counts[kind] += 1
            tally.by_file[path or "(anonymous)"] = tally.by_file.get(path or "(anonymous)", 0) + 1
        return tally

    def close(self) -> None:
        for buf in self.buffers:
            buf.close()
        self.buffers = []
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def _drain(buf: mmap.mmap, ips: list[int]) -> int:
    """Appends the sampled addresses between the buffer's tail and head, and moves the tail to
    the head; 1 if the buffer was full (the kernel dropped samples), else 0.

    The kernel's own LOST records are not read: it writes one only once there is room again,
    so the record of what a full buffer dropped before a call arrives inside the call."""
    page = mmap.PAGESIZE
    size = PAGES * page
    head, tail = struct.unpack_from("=QQ", buf, 1024)
    full = 1 if head - tail > size - FULL_MARGIN else 0
    data = buf[page:page + size]
    pos = tail
    while pos + 8 <= head:
        off = pos % size
        header = data[off:off + 8] if off + 8 <= size else data[off:] + data[:off + 8 - size]
        kind, _, rsize = struct.unpack("=IHH", header)
        if rsize < 8:
            break
        end = off + rsize
        body = data[off:end] if end <= size else data[off:] + data[:end - size]
        if kind == RECORD_SAMPLE and rsize >= 24:
            ips.append(struct.unpack_from("=Q", body, 8)[0])
        pos += rsize
    struct.pack_into("=Q", buf, 1032, head)
    return full
