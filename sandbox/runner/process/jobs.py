"""One job of the warm runner: its child's pipe watched, its frames stamped and forwarded.

``Job.watch`` reads the child's frames until it exits (or, for a job that parks
before its timed pass, until it stops itself: ``turns``), stamping each with
the runner's clock as it arrives and handing it to a ``Forwarder`` thread;
``Job.end`` kills what is left of the job and gives its exit frame. The memory
of a job with a uid of its own is watched by ``MemoryWatch``.
"""

from __future__ import annotations

import os
import select
import shutil
import threading
import time
from typing import Any

from ..measure import sampling
from . import confine, freeze

LOG_TAIL_BYTES = 4000
LAST_FRAME_BYTES = 64 << 10  # a request to the runner is a small frame (``clocking``)
RSS_EVERY_S = 0.05
# The proportional set size (smaps_rollup: a walk of every page table, holding the
# process's memory lock, which stalled a timed eager call's mmap/munmap for tens of ms)
# is read this often; in between, the kernel's resident counters (statm).
PSS_EVERY_S = 2.0
# Frames read from a child but not yet written to the judge: past this many bytes the
# runner stops reading (the child waits on its pipe) until the judge has caught up.
FORWARD_BACKLOG_BYTES = 256 << 20


class Job:
    """A forked child and everything the runner keeps for it."""

    def __init__(self, runner: Any, msg: dict[str, Any], pid: int, uid: int, unique: bool, fd: int,
                 scratch: str, started: float, inbox: Any = None) -> None:
        self.runner, self.msg, self.pid, self.uid, self.unique = runner, msg, pid, uid, unique
        self.fd, self.scratch, self.started = fd, scratch, started
        self.inbox = inbox  # the large tensors the child sends beside its frames (shared.Inbox)
        self.id = f"job-{pid}"
        self.deadline = started + msg["timeout"]
        self.buf = bytearray()
        self.reason: str | None = None
        self.status: int | None = None
        self.stopped_at: float | None = None
        self.mem_fd = -1  # the child's memory, for a job clocked by the runner (``clocking``)
        self.sampler = sampling.Sampler([], "not a clocked job")  # where its clocked calls ran (``sampling``)
        self.last_frame = b""  # the last frame read from the child (a stopped job's request: ``clocking``)
        parked = bool(msg["job"].get("park"))
        self.forward = Forwarder(runner, self.id if parked else None)
        self.memory = MemoryWatch(uid, msg["memory_mb"]) if unique else None
        sole_uid = bool(getattr(getattr(runner, "args", None), "kill_leftovers", False))
        self.scope = freeze.Scope(pid, uid, unique, sole_uid, getattr(runner, "sessions", set()))
        self.scope.sessions.add(pid)
        os.set_blocking(fd, False)

    def hold(self, listing: freeze.Listing | None = None) -> bool:
        """Stops the rest of the job (its child stopped itself), first from
        ``listing`` if given; False, with the job's reason set, if some process
        of it would not stop."""
        if freeze.freeze(self.scope, listing):
            self.forward.flush()  # its frames before anything the runner says of it
            if self.memory is not None:
                self.memory.held = True
            return True
        self.reason = "unstoppable"
        return False

    def resume(self) -> float:
        """Continues a held job (its turn): the runner's clock just before its
        child (which stopped itself) is continued, the rest of it first."""
        if self.memory is not None:
            self.memory.held = False
        return freeze.thaw(self.scope, last=self.pid)

    def watch(self, until_stop: bool = False) -> str:
        """Reads the child's frames until it exits ("ended") or, with
        ``until_stop``, stops itself ("stopped"); or until the deadline, the
        memory limit or a protocol error ("ended", with ``reason`` set)."""
        from ..channel.wire import HEADER

        flags = os.WNOHANG | (os.WUNTRACED if until_stop else 0)
        wake = [self.runner.wake_fd] if getattr(self.runner, "wake_fd", -1) >= 0 else []
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self.reason = None if self.status is not None else "timeout"
                return "ended"
            if self.status is None:
                reaped, st = os.waitpid(self.pid, flags)
                if reaped and os.WIFSTOPPED(st):
                    self.stopped_at = time.monotonic()
                    self._read_all(HEADER)
                    return "stopped" if self.reason is None else "ended"
                if reaped:
                    # The child is gone; a process it left behind may still hold
                    # the pipe open, so drain briefly rather than wait for EOF.
                    self.status, self.deadline = st, min(self.deadline, time.monotonic() + 0.5)
            if self.memory is not None and self.memory.exceeded:
                self.reason = "memory"
                return "ended"
            if getattr(self.runner, "parent", None) not in (None, os.getppid()):
                self.reason = "orphaned"  # the judge died: nobody will read this job's frames
                return "ended"
            if self.forward.backlog() > FORWARD_BACKLOG_BYTES and self.status is None:
                # Only a live child is held back: once it has exited, what is left in its
                # pipe is bounded, and must be read within the drain window (waiting on
                # the judge here had let that window close on the final frames: a
                # reference at --fit-memory 1 "did not finish (exit code 0)").
                self.forward.wait(min(0.05, remaining))
                continue
            side = [self.inbox] if self.inbox is not None and not self.inbox.closed else []
            ready, _, _ = select.select([self.fd] + wake + side, [], [], min(0.05, remaining))
            if not ready:
                # A clocked call's samples, taken out of the buffers as they come; only when
                # nothing woke the runner: a wake-up may be the call's end, and the runner's
                # clock reads that end after this loop notices it (emptying buffers first had
                # put their cost into the call's window: CI's honest kernel at 4x its own record).
                self.sampler.collect()
            if wake and wake[0] in ready:
                _empty(wake[0])
            if side and side[0] in ready and not self._side():
                return "ended"
            if self.fd not in ready:
                continue
            data, closed = _drain(self.fd)
            self.buf.extend(data)
            if closed and not data:
                return "ended"
            self._frames(HEADER)
            if self.reason:
                return "ended"

    def _read_all(self, header: Any) -> None:
        """Every frame the stopped child wrote before it stopped."""
        while True:
            data, closed = _drain(self.fd)
            self.buf.extend(data)
            self._frames(header)
            if not data or closed or self.reason:
                return

    def _frames(self, header: Any) -> None:
        while len(self.buf) >= header.size:
            (size,) = header.unpack_from(self.buf)
            if size > self.msg.get("max_frame_bytes", 1 << 31):
                self.reason = "protocol"
                return
            if len(self.buf) < header.size + size:
                return
            # Stamped as it arrives; written to the judge by the forwarder's thread, so
            # a judge still decoding an earlier large frame never delays a stamp. The shared
            # tensors received so far go ahead of it (the child sends a frame's before it).
            stamp = time.monotonic()
            if self.inbox is not None and not self._side():
                return
            fds = self.inbox.pending() if self.inbox is not None else []
            self.last_frame = bytes(self.buf[header.size: header.size + size]) if size <= LAST_FRAME_BYTES else b""
            self.forward.put(stamp, bytes(self.buf[: header.size + size]), fds)
            del self.buf[: header.size + size]

    def _side(self) -> bool:
        """Takes what the child sent on its side channel; False (the job's reason
        set) if that was not records of shared tensors."""
        from ..channel.wire import WireError

        try:
            self.inbox.drain()
            return True
        except WireError:
            self.reason = "protocol"
            return False

    def end(self) -> dict[str, Any]:
        """Kills what is left of the job, reaps it and cleans up: its exit frame."""
        if self.memory is not None:
            self.memory.stop()
        if self.unique:
            confine.kill_uid(self.uid)
        else:
            try:
                os.killpg(self.pid, 9)
            except OSError:
                pass
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
        self.forward.close()
        if self.inbox is not None:
            self.inbox.close()
        self.scope.sessions.discard(self.pid)
        st = self.status
        out = {
            "kind": "exit", "reason": self.reason, "elapsed": time.monotonic() - self.started,
            "exit_code": os.WEXITSTATUS(st) if os.WIFEXITED(st) else None,
            "signal": os.WTERMSIG(st) if os.WIFSIGNALED(st) else None,
            "partial_bytes": len(self.buf),
        }
        if self.memory is not None:
            out["peak_mb"] = round(self.memory.peak_mb, 1)
        if self.forward.tag is not None:
            out["job"] = self.id
        os.close(self.fd)
        if self.mem_fd >= 0:
            os.close(self.mem_fd)
            self.mem_fd = -1
        self.sampler.close()
        out["log_tail"] = _tail(os.path.join(self.scratch, "log.txt"))
        shutil.rmtree(self.scratch, ignore_errors=True)
        root = getattr(self.runner, "args", None)
        if root is not None:
            sweep(root.scratch_root, self.runner.keep | self.runner.live_dirs())
        return out


def _empty(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except (BlockingIOError, InterruptedError):
        pass


class MemoryWatch:
    """The memory of a job's processes (every process of its uid), read in a thread of its
    own: reading smaps of a process holding GBs takes ~0.1 s, which must not delay the
    stamps of the frames the job sends meanwhile (and mostly from the kernel's
    counters, see ``PSS_EVERY_S``). Not read while the job is
    held stopped (``held``): nothing of it can allocate then, and the reads
    would take CPU time from the job being timed."""

    def __init__(self, uid: int, limit_mb: float) -> None:
        self.exceeded = False
        self.held = False
        self.peak_mb = 0.0  # the most the job held above its start, as read (exit frame's ``peak_mb``)
        self._uid, self._limit = uid, limit_mb
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        baseline = None
        full_at, pss, resident = 0.0, 0.0, 0.0
        while not self._stop.is_set():
            if self.held:
                self._stop.wait(RSS_EVERY_S)
                continue
            checked = time.monotonic()
            full = checked >= full_at
            if full:
                pss, resident = confine.private_rss_of_uid_mb(self._uid), confine.resident_of_uid_mb(self._uid)
                used, full_at = pss, checked + PSS_EVERY_S
            else:
                # between full reads: the proportional size then, plus what became resident since
                # (never less than the growth in proportional size, but for pages a process
                # that ended shared) -- read from counters, no page-table walk
                used = pss + confine.resident_of_uid_mb(self._uid) - resident
            baseline = used if baseline is None else baseline
            self.peak_mb = max(self.peak_mb, used - baseline)
            if used - baseline > self._limit:
                if not full:  # an estimate: confirmed by a full read
                    full_at = 0.0
                    continue
                self.exceeded = True
                return
            # never more than a fifth of the time checking (RLIMIT_AS caps each process)
            self._stop.wait(max(RSS_EVERY_S, 4 * (time.monotonic() - checked)))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Forwarder:
    """Writes a job's frames, each after its stamp, to the judge from a thread of its own."""

    def __init__(self, runner: Any, tag: str | None = None) -> None:
        self._runner = runner
        self.tag = tag
        self._items: list[tuple[float, bytes, list[tuple[str, int]]] | None] = []
        self._bytes = 0
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def put(self, stamp: float, frame: bytes, fds: list[tuple[str, int]] | None = None) -> None:
        with self._cond:
            self._items.append((stamp, frame, fds or []))
            self._bytes += len(frame)
            self._cond.notify_all()

    def backlog(self) -> int:
        return self._bytes

    def wait(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait(timeout)

    def _run(self) -> None:
        broken = False
        while True:
            with self._cond:
                while not self._items:
                    self._cond.wait()
                item = self._items.pop(0)
            if item is None:
                return
            stamp, frame, fds = item
            if not broken:
                try:
                    stamped = {"kind": "stamp", "t": stamp}
                    if self.tag is not None:
                        stamped["job"] = self.tag
                    self._runner.send_locked(stamped, frame, fds)
                except OSError:
                    broken = True  # the judge is gone; the job's end is still reaped
            else:
                for _, fd in fds:
                    os.close(fd)
            with self._cond:
                self._bytes -= len(frame)
                self._cond.notify_all()

    def flush(self) -> None:
        """Returns once every frame put so far is written."""
        with self._cond:
            while self._bytes or self._items:
                self._cond.wait()

    def close(self) -> None:
        """Every frame put so far written (the caller's next frame comes after them)."""
        with self._cond:
            self._items.append(None)
            self._cond.notify_all()
        self._thread.join()


def _drain(fd: int, most: int = 64 << 20, within_s: float = 0.05) -> tuple[bytes, bool]:
    """What the child has written, up to ``most`` bytes or ``within_s`` of reading
    (a large frame streams through a 1 MB pipe: one read per loop turn made the
    memory check, not the copy, the cost); True when the child closed its end."""
    chunks: list[bytes] = []
    got, until = 0, time.monotonic() + within_s
    while got < most and time.monotonic() < until:
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            break
        if not data:
            return b"".join(chunks), True
        chunks.append(data)
        got += len(data)
    return b"".join(chunks), False


def sweep(root: str, keep: set[str]) -> None:
    """Removes what a job left in the scratch root outside its own directory."""
    for name in set(os.listdir(root)) - keep:
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
