"""A timed pass clocked by the runner (native kernels on the CPU): the runner's side.

A candidate runs in a process it can read and write whole: any timed input in
that process before its call can be answered ahead of the clock, any time it
records can be rewritten, any thread it starts can work while the judge looks
away. So for native CPU kernels (the timings the judge reports as speedups) the
secrets stay with the runner:

- The timed input sets never enter the candidate's process before their call.
  The judge gives them to the runner (``interleave``'s "sets", one list for every job); the job gets only
  their shapes. A job asks for set i by a "want" frame and stops itself; the runner,
  with every process of the job stopped, writes the set into the input buffers the
  job named, through the job's memory file (``/proc/<pid>/mem``, opened by the job
  before any untrusted code ran and handed to the runner: ``hand_memory``), and
  flushes the cache.
- The runner's clock is the time: read just before the job is continued and again
  when it has stopped after the call (``Job.watch``); if another process of the job
  was alive, when that one is stopped too. Nothing of the job ran before the set was
  there, and nothing of it runs between the second stop and the next set: all its
  work on a set is inside the window. The window's own cost (the signals, the
  wake-ups, the runner noticing a stop) is measured on a child of the runner that
  runs no untrusted code (``calibrate``) and taken out, for every party alike.
- The output and the inputs are read out of the stopped process where the job says
  its output lies (``clocked.DESCRIBED``): what the judge checks is what was there
  when the clock stopped, and an input the call changed is seen at once.

Baselines and candidate are timed the same way (every party of every job), in
turns: one call of one job at a time while the others are held stopped.

Frames sent to the judge, beside the jobs' own (and "paused": ``turns``):
  {"kind": "clocked", "job": id, "name": party, "set": i, "ms": t, "window_ms": w,
   "overhead_ms": o, "waited_ms": q, "own_ms": m, "structure": s, "outputs": [...], "inputs_changed": bool}
  (q: what the job's calling thread and the runner's clocking thread waited for a CPU
  inside the window, from the kernel's schedstat; None where the kernel keeps none; m: the job's
  own reading of the call, copied out of it at the stop after the call, before any later call
  could rewrite its record: ``clocked.OWN_NS``)
  {"kind": "clock_error", "job": id, "detail": why}  the job's request could not be
      served (the job then ends, its reason "protocol").
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import torch

from ..channel.shared import DTYPES
from ..channel.wire import WireError, decode
from ..measure import clocked, sampling, timing
from . import confine, freeze
from .jobs import Job

CALIBRATION_CALLS = 15
# The shortest time a call is reported at, in ms: the overhead taken out of a window can
# leave nothing of a call that took less than the window's own noise.
FLOOR_MS = 0.001
_ITEMS = 2 + clocked.MAX_ITEMS * clocked.ITEM
_DESCRIBED = struct.Struct(f"={_ITEMS}q")
_OWN = struct.Struct("=q")
_DTYPES = list(DTYPES.values())
CHUNK = 1 << 30


class ClockError(Exception):
    """A job's request that the runner will not serve."""


def hand_memory(sock: socket.socket, expose: bool = False) -> None:
    """In a job's child, before anything else runs: its memory file and its sampling counters
    (``sampling``), to the runner; with ``expose``, dumpable for the memory file's open where
    it needs to be (``_own_memory``)."""
    try:
        fd = _own_memory(expose)
    except OSError:
        fd = -1  # the runner then ends the job at its first timed call, saying why
    counters, why_not = sampling.open_counters()
    fds = ([fd] if fd >= 0 else []) + counters
    try:
        note = json.dumps({"memory": fd >= 0, "counters": len(counters), "why_not": why_not})
        socket.send_fds(sock, [note.encode()], fds)
    except OSError:
        pass
    finally:
        for f in fds:
            os.close(f)
        sock.close()


def _own_memory(expose: bool) -> int:
    try:
        return os.open("/proc/self/mem", os.O_RDWR | os.O_CLOEXEC)
    except PermissionError:
        if not expose:
            raise
    # Every child of the runner is not dumpable (nor is the runner), and the memory file of
    # a process that is not dumpable opens only with CAP_DAC_OVERRIDE, which a runner that is
    # not root lacks (docker's uid 65534). Dumpable for the one open, then not again before
    # anything else runs; meanwhile every other process that could open it (of the uid) is
    # held stopped by the runner (``others_stopped``).
    _dumpable(1)
    try:
        return os.open("/proc/self/mem", os.O_RDWR | os.O_CLOEXEC)
    finally:
        _dumpable(0)


def _dumpable(value: int) -> None:
    if confine._libc.prctl(confine.PR_SET_DUMPABLE, value, 0, 0, 0) != 0:
        os._exit(3)  # never go on in a state not chosen


@contextlib.contextmanager
def others_stopped(runner: Any) -> Iterator[bool]:
    """Around the fork of a clocked job's child until its memory file has reached the runner:
    every other process that may run untrusted code is held stopped (``freeze.stop_others``),
    and True says so: the child may then open its file as ``hand_memory`` does. False (none
    could be held) leaves the child to open it only where it can without that."""
    args = getattr(runner, "args", None)
    stopped = freeze.stop_others(os.getuid(), bool(getattr(args, "kill_leftovers", False)),
                                 getattr(runner, "sessions", set()))
    try:
        yield stopped is not None
    finally:
        freeze.cont(stopped or [])


def take_memory(sock: socket.socket, timeout: float = 30.0) -> tuple[int, sampling.Sampler]:
    """The runner's end of ``hand_memory``: the job's memory file (or -1) and its sampler."""
    fds: list[int] = []
    try:
        sock.settimeout(timeout)
        raw, fds, _, _ = socket.recv_fds(sock, 1 << 12, 64)
        note = json.loads(raw.decode())
    except (OSError, ValueError):
        for f in fds:
            os.close(f)
        return -1, sampling.Sampler([], "the job's counters did not reach the runner")
    finally:
        sock.close()
    mem_fd = fds.pop(0) if note.get("memory") and fds else -1
    return mem_fd, sampling.Sampler(fds, note.get("why_not"))


def _transfer(op: Any, fd: int, view: memoryview, offset: int) -> None:
    while view:
        done = op(fd, [view[:CHUNK]], offset)
        if done <= 0:
            raise ClockError("the job's memory could not be read or written there")
        view, offset = view[done:], offset + done


def _bytes(t: torch.Tensor) -> memoryview:
    return memoryview(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy())


def request_of(job: Job) -> dict[str, Any]:
    """The request a stopped job made last: a "want" frame, checked."""
    try:
        frame = decode(job.last_frame)
    except WireError as exc:
        raise ClockError(f"the job stopped without a readable request: {exc}") from exc
    if not isinstance(frame, dict) or frame.get("kind") != "want":
        raise ClockError("the job stopped without asking for a set")
    if not isinstance(frame.get("set"), int) or not isinstance(frame.get("inputs"), list) \
            or not isinstance(frame.get("described"), int) or not isinstance(frame.get("own"), int) \
            or not isinstance(frame.get("party"), str):
        raise ClockError("a malformed request")
    return frame


def load(job: Job, want: dict[str, Any], sets: list[list[Any]]) -> list[Any]:
    """Writes the set the job wants into the buffers it named; the set."""
    i = want["set"]
    if not 0 <= i < len(sets):
        raise ClockError(f"the job asked for set {i} of {len(sets)}")
    data = sets[i]
    slots = want["inputs"]
    if len(slots) != len(data):
        raise ClockError(f"the job named {len(slots)} input buffers for {len(data)} inputs")
    for slot, value in zip(slots, data):
        if not isinstance(value, torch.Tensor):
            continue
        nbytes = value.numel() * value.element_size()
        if not (isinstance(slot, list) and len(slot) == 2 and all(type(v) is int for v in slot)
                and slot[0] > 0 and slot[1] == nbytes):
            raise ClockError(f"an input buffer of the wrong size for a {tuple(value.shape)} {value.dtype} input")
        if nbytes:
            _transfer(os.pwritev, job.mem_fd, _bytes(value), slot[0])
    return data


def unchanged(job: Job, want: dict[str, Any], data: list[Any]) -> bool:
    """Whether the job's input buffers still hold the set written into them."""
    for slot, value in zip(want["inputs"], data):
        if isinstance(value, torch.Tensor) and value.numel():
            now = torch.empty(value.numel() * value.element_size(), dtype=torch.uint8)
            _transfer(os.preadv, job.mem_fd, memoryview(now.numpy()), slot[0])
            if not torch.equal(now, torch.frombuffer(_bytes(value), dtype=torch.uint8)):
                return False
    return True


def own_reading_of(job: Job, want: dict[str, Any]) -> float:
    """The job's own reading of the call it just made, in ms, copied out of the stopped job."""
    raw = bytearray(_OWN.size)
    _transfer(os.preadv, job.mem_fd, memoryview(raw), want["own"])
    return _OWN.unpack(raw)[0] / 1e6


def outputs_of(job: Job, want: dict[str, Any], max_bytes: int) -> tuple[str, list[Any]]:
    """The call's output, copied out of the stopped job from where it said it lies."""
    raw = bytearray(_DESCRIBED.size)
    _transfer(os.preadv, job.mem_fd, memoryview(raw), want["described"])
    ints = _DESCRIBED.unpack(raw)
    code, count = ints[0], ints[1]
    kinds = {v: k for k, v in clocked.STRUCTURES.items()}
    if code not in kinds or not 0 <= count <= clocked.MAX_ITEMS or (code == 0 and count != 1):
        raise ClockError("the call's output is not one the runner can read (a tensor or a tuple of at most "
                         f"{clocked.MAX_ITEMS} tensors)")
    found: list[Any] = []
    budget = max_bytes
    for k in range(count):
        item = ints[2 + k * clocked.ITEM: 2 + (k + 1) * clocked.ITEM]
        address, dtype_code, ndim, span = item[:4]
        if dtype_code == clocked.NOT_A_TENSOR:
            found.append(None)
            continue
        shape = list(item[4: 4 + ndim]) if 0 <= ndim <= clocked.MAX_DIMS else None
        stride = list(item[4 + clocked.MAX_DIMS: 4 + clocked.MAX_DIMS + ndim]) if shape is not None else None
        if shape is None or not 0 <= dtype_code < len(_DTYPES) or any(n < 0 for n in shape) \
                or any(s < 0 for s in stride or []):
            raise ClockError("the call's output is described wrongly")
        dtype = _DTYPES[dtype_code]
        numel = 1
        for n in shape:
            numel *= n
        elements = 1 + sum((n - 1) * s for n, s in zip(shape, stride or [])) if numel else 0
        if span != elements * dtype.itemsize or address <= 0 and elements:
            raise ClockError("the call's output is described wrongly")
        budget -= span
        if budget < 0:
            raise ClockError(f"the call's output is larger than {max_bytes} bytes")
        flat = torch.empty(elements, dtype=dtype)
        if elements:
            _transfer(os.preadv, job.mem_fd, memoryview(flat.view(torch.uint8).numpy()), address)
        found.append(flat.as_strided(shape, stride).contiguous())
    structure = "tensor" if code == 0 else f"{kinds[code]}[{count}]"
    return structure, found


class _Discard:
    """A forwarder that forwards nothing (the calibration child's frames stay here)."""

    tag = None

    def put(self, *_: Any) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def backlog(self) -> int:
        return 0

    def wait(self, _: float) -> None:
        pass


def _run_delay_ns(path: str) -> int | None:
    """The nanoseconds the thread of ``path`` (its schedstat) spent runnable, waiting for a
    CPU; None where the kernel keeps no such count (all zeros) or the thread is gone."""
    try:
        with open(path) as f:
            on_cpu, waiting, _ = (int(v) for v in f.read().split()[:3])
    except (OSError, ValueError):
        return None
    return None if on_cpu == 0 and waiting == 0 else waiting


def waiting_ms(pid: int) -> float | None:
    """What the job's main thread (the one that makes the calls) and this thread of the runner
    have waited for a CPU so far, in ms: a loaded host's share of a window, counted by the
    kernel, never by the job."""
    job, own = _run_delay_ns(f"/proc/{pid}/task/{pid}/schedstat"), _run_delay_ns("/proc/thread-self/schedstat")
    return None if job is None or own is None else (job + own) / 1e6


class Clock:
    """One interleaved pass: the sets each job is given, the cache flush, the window's
    own cost."""

    def __init__(self, runner: Any, sets: list[list[Any]], parties: dict[str, list[str]],
                 max_output_bytes: int) -> None:
        self.runner, self.sets, self.max_output_bytes = runner, sets, max_output_bytes
        # Each job's clocked calls in the one order it may ask for them: every party on set 0,
        # then on set 1, ...; each once. A set loaded unclocked (a replay) only after them all.
        self.due = {job: [(p, i) for i in range(len(sets)) for p in names] for job, names in parties.items()}
        self.flush = timing.CacheFlush()
        self.overhead_ms = 0.0
        self.calibration: list[float] = []
        self._calibrator: Job | None = None

    def step(self, job: Job) -> bool:
        """Serves the request a stopped, held job made (a clocked call, or a set loaded for a
        replay), and runs the job to its next request: True if it made one (stopped and held
        again), False if it ended (its reason set if the runner ended it)."""
        try:
            if job.mem_fd < 0:
                raise ClockError("the job's memory file (/proc/<pid>/mem) did not reach the runner")
            if job is not self._calibrator and not self.calibration:
                raise ClockError("the clock's own cost could not be measured (its idle child gave no window)")
            want = request_of(job)
            if job is not self._calibrator:
                self.in_turn(job, want)
            data = load(job, want, self.sets if job is not self._calibrator else [[]])
            if want.get("clock"):
                self.flush()
                job.sampler.before(want.get("party", ""))
                waited0 = waiting_ms(job.pid)
                t0 = self.resume(job)
                if job.watch(until_stop=True) != "stopped":
                    return False
                t1 = job.stopped_at if job.stopped_at is not None else time.monotonic()
                waited1 = waiting_ms(job.pid)
                waited = None if waited0 is None or waited1 is None else max(0.0, waited1 - waited0)
                if not job.hold():
                    return False
                if len(job.scope.held or ()) > 1:
                    t1 = time.monotonic()  # another process of the job ran: the window ends with it stopped
                self.clocked(job, want, data, t0, t1, waited)
        except (ClockError, OSError) as exc:
            job.reason = "protocol"
            self.runner.send({"kind": "clock_error", "job": job.id, "detail": str(exc)[:500]})
            return False
        self.resume(job)
        return job.watch(until_stop=True) == "stopped" and job.hold()

    def resume(self, job: Job) -> float:
        """Continues a held job; the span it was held goes to the judge ("paused": a job's
        cost phases leave it out)."""
        stopped_at, resumed = job.stopped_at, job.resume()
        if stopped_at is not None and job is not self._calibrator:
            self.runner.send({"kind": "paused", "job": job.id, "from": stopped_at, "to": resumed})
        return resumed

    def in_turn(self, job: Job, want: dict[str, Any]) -> None:
        due = self.due.get(job.id, [])
        if want.get("clock"):
            if not due or due[0] != (want["party"], want["set"]):
                raise ClockError(f"the job asked for {want['party']} on set {want['set']} out of turn "
                                 f"(due: {due[0] if due else 'nothing more'})")
            due.pop(0)
        elif due:
            raise ClockError("the job asked for a set to be loaded unclocked before its timed calls were done")

    def clocked(self, job: Job, want: dict[str, Any], data: list[Any], t0: float, t1: float,
                waited: float | None = None) -> None:
        window = (t1 - t0) * 1000
        samples = job.sampler.after(want.get("party", ""), window) if job.sampler.live else None
        if job is self._calibrator:
            self.calibration.append(window)
            return
        structure, outputs = outputs_of(job, want, self.max_output_bytes)
        frame = {"kind": "clocked", "job": job.id, "name": want["party"], "set": want["set"],
                 "ms": max(FLOOR_MS, window - self.overhead_ms), "window_ms": window,
                 "overhead_ms": self.overhead_ms, "waited_ms": waited, "own_ms": own_reading_of(job, want),
                 "structure": structure, "outputs": outputs,
                 "inputs_changed": not unchanged(job, want, data),
                 "samples": samples.frame() if samples is not None else {"error": job.sampler.why_not}}
        self.send(frame)

    def send(self, frame: dict[str, Any]) -> None:
        from ..channel import shared

        inbox = getattr(self.runner, "inbox", None)
        with self.runner.lock:
            obj = shared.export(frame, inbox.side) if inbox is not None else frame
        self.runner.send(obj)

    def calibrate(self, calls: int = CALIBRATION_CALLS) -> float:
        """The window's own cost, in ms: the median window around calls that do nothing, of a
        child of the runner that runs nothing else (no untrusted code: a job could make its
        own idle windows longer, never shorter)."""
        mem_child, mem_side = socket.socketpair()
        read_fd, write_fd = os.pipe()
        scratch = tempfile.mkdtemp(prefix="calibration-", dir=self.runner.args.scratch_root) \
            if getattr(self.runner, "args", None) is not None else tempfile.mkdtemp(prefix="kforge-calibration-")
        with others_stopped(self.runner) as expose:
            pid = os.fork()
            if pid == 0:
                _calibration_child(mem_child, expose, read_fd, write_fd, calls)
            os.close(write_fd)
            mem_child.close()
            mem_fd, sampler = take_memory(mem_side)
        job = Job(self.runner, {"job": {}, "timeout": 60.0, "memory_mb": 0}, pid, os.getuid(), False,
                  read_fd, scratch, time.monotonic())
        job.forward.close()
        job.forward = _Discard()  # type: ignore[assignment]
        job.mem_fd, job.sampler = mem_fd, sampler
        self.calibration, self._calibrator = [], job
        try:
            if job.mem_fd >= 0 and job.watch(until_stop=True) == "stopped" and job.hold():
                while self.step(job):
                    pass
        finally:
            self._calibrator = None
            _finish(job)
        self.overhead_ms = statistics.median(self.calibration) if self.calibration else 0.0
        return self.overhead_ms


def _calibration_child(mem_child: socket.socket, expose: bool, read_fd: int, write_fd: int, calls: int) -> None:
    code = 0
    try:
        hand_memory(mem_child, expose)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        os.setpriority(os.PRIO_PROCESS, 0, 0)
        os.close(read_fd)
        from ..channel.wire import write_fd as emit_to

        clocked.calibration(lambda frame: emit_to(write_fd, frame), calls)
    except BaseException:
        code = 3
    finally:
        os._exit(code)


def _finish(job: Job) -> None:
    """Ends the calibration child (not ``Job.end``: nothing to report, and no other job's
    directory may be swept while the pass goes on)."""
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except OSError:
        pass
    if job.status is None:
        try:
            os.waitpid(job.pid, 0)
        except ChildProcessError:
            pass
    job.scope.sessions.discard(job.pid)
    for fd in (job.fd, job.mem_fd):
        if fd >= 0:
            os.close(fd)
    job.sampler.close()
    shutil.rmtree(job.scratch, ignore_errors=True)
