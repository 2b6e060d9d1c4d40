"""The interface every sandbox driver offers the judge.

A driver starts a warm runner (``sandbox.runner.process.zygote``) somewhere isolated
and hands back a ``RunnerSession``: a pair of byte streams to it. Everything
after that -- forking per job, limits, stamping frames -- is the same code
whichever driver started the runner.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..runner.channel import shared
from ..runner.channel.wire import MAX_FRAME_BYTES, FrameBuffer, WireError, write_fd
from . import allocator

# Only these variables reach a sandbox; nothing else of the judge's
# environment (API keys, database URLs, tokens) does.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "DATABASE_URL", "BROKER_URL")


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(allocator.env())
    env.update(extra or {})
    return {k: v for k, v in env.items() if not any(m in k.upper() for m in SECRET_MARKERS)}


class SandboxError(Exception):
    """The sandbox itself failed (could not start, runner died)."""


@dataclass
class JobOutcome:
    frames: list[dict[str, Any]] = field(default_factory=list)
    exit: dict[str, Any] = field(default_factory=dict)
    parked: str | None = None  # the runner holds the job before its timed pass (``interleave``)
    paused: list[tuple[float, float]] = field(default_factory=list)  # held stopped, the runner's clock
    crosstalk: list[dict[str, Any]] = field(default_factory=list)  # ran while another job was timed
    clock: list[dict[str, Any]] = field(default_factory=list)  # the runner's readings of its calls (``clocking``)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("kind") == kind]

    def first(self, kind: str) -> dict[str, Any] | None:
        found = self.of_kind(kind)
        return found[0] if found else None

    @property
    def finished(self) -> bool:
        """Done, or parked (everything before its timed pass done)."""
        return self.first("done") is not None or self.parked is not None

    def paused_within(self, t0: float, t1: float) -> float:
        """Seconds of [t0, t1] the job was held stopped by the runner: from the
        stop it reported to the job's "resumed" frame, if that is the first
        frame the job wrote after being continued (a continued job waits for a
        CPU on a loaded machine), else to the continue itself."""
        stamps = sorted((f["_t"], f.get("kind") == "phase" and f.get("name") == "resumed")
                        for f in self.frames if isinstance(f.get("_t"), float))
        total = 0.0
        held = sorted(self.paused)
        for k, (a, b) in enumerate(held):
            later = next(((t, resumed) for t, resumed in stamps if t >= b), None)
            if later is not None and later[1]:
                # never past the next stop: a runner short of CPU reads (stamps) a turn's
                # frames only once the job has stopped again
                b = min(later[0], held[k + 1][0]) if k + 1 < len(held) else later[0]
            total += max(0.0, min(b, t1) - max(a, t0))
        return total

    def ended(self, timeout: float | None = None, memory_mb: int | None = None) -> str:
        """Why the job's process ended without finishing, in words, as its runner saw it
        ('' when nothing says): the one reading of the exit frame every caller shares."""
        ex = self.exit
        peak = f", {ex['peak_mb']:g} MB at its peak" if ex.get("peak_mb") is not None else ""
        reason = ex.get("reason")
        if reason == "timeout":
            return f"timed out after {timeout if timeout is not None else ex.get('elapsed', 0):.0f} s"
        if reason == "memory":
            limit = f" of {memory_mb} MB" if memory_mb is not None else ""
            return f"exceeded the memory limit{limit}{peak}"
        if reason == "protocol":
            return f"wrote a malformed result frame: {ex.get('detail', '')}".rstrip(": ")
        if reason == "unstoppable":
            return "a process of it kept running when held for the baselines' timed turn"
        if ex.get("signal") == signal.SIGSYS:
            # the timed pass's filter (runner/guards/syscall_filter.py) or the container's profile
            return ("was killed (SIGSYS) for a system call the sandbox forbids there: a new thread or process, "
                    f"a new program, ptrace or another process's memory{peak}")
        if ex.get("signal"):
            hint = " (likely the memory limit)" if ex["signal"] == signal.SIGKILL else ""
            return f"crashed with {signal_name(ex['signal'])}{hint}{peak}"
        if reason:
            return str(reason)
        return f"exited with code {ex.get('exit_code')}" if ex.get("exit_code") is not None else ""

    def stamp(self, phase: str) -> float | None:
        for f in self.frames:
            if f.get("kind") == "phase" and f.get("name") == phase:
                return f.get("_t")
        return None


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


WARM_COMPILE_S = 120


class RunnerSession:
    """Talks to one warm runner over a pair of file descriptors."""

    def __init__(self, write_fd: int, read_fd: int, description: str, side: Any = None) -> None:
        self._w = write_fd
        self._r = read_fd
        # Large tensors travel beside the frames where the driver made a side channel
        # (a unix socket): sealed memory files, no copy (runner/channel/shared.py).
        self._inbox = shared.Inbox(side) if side is not None else None
        self.description = description
        self.ready: dict[str, Any] = {}
        self.alive = True

    def _send(self, obj: dict[str, Any]) -> None:
        try:
            write_fd(self._w, shared.export(obj, self._inbox.side) if self._inbox is not None else obj)
        except OSError as exc:
            self.alive = False
            raise SandboxError(f"runner is gone: {exc}") from exc

    def _frames(self, deadline: float):
        buf = FrameBuffer()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.alive = False
                raise SandboxError("runner did not answer in time")
            side = [self._inbox] if self._inbox is not None and not self._inbox.closed else []
            ready, _, _ = select.select([self._r, *side], [], [], remaining)
            if side and side[0] in ready:
                self._inbox.drain()
            if self._r not in ready:
                continue
            data = os.read(self._r, 1 << 20)
            if not data:
                self.alive = False
                raise SandboxError("runner closed its channel")
            for frame in buf.feed(data):
                yield shared.resolve(frame, self._inbox, MAX_FRAME_BYTES)

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        for frame in self._frames(time.monotonic() + timeout):
            if frame.get("kind") == "ready":
                self.ready = frame
                return frame
        raise SandboxError("runner sent no ready frame")

    def warm(self, timeout: float = WARM_COMPILE_S) -> dict[str, Any]:
        """Has the runner pay torch.compile's first-use costs now (``runner/process/prewarm.py``),
        rather than before its second job that compiles a baseline; what it did."""
        self._send({"op": "warm"})
        for frame in self._frames(time.monotonic() + timeout):
            if frame.get("kind") == "warmed":
                return frame
        raise SandboxError("runner sent no warmed frame")

    def run(self, job: dict[str, Any], timeout: float, memory_mb: int, max_procs: int) -> JobOutcome:
        """Runs a job to its end -- or, for a job with ``park``, until the runner
        holds it before its timed pass (``outcome.parked``)."""
        self._send({"op": "run", "job": job, "timeout": timeout, "memory_mb": memory_mb, "max_procs": max_procs})
        outcome = JobOutcome()
        # a job that may warm torch.compile first (runner/process/prewarm.py: 11-15 s idle, more loaded)
        # is waited for that long more; its own limits are unchanged
        self._collect({None: outcome}, timeout + 30 + (WARM_COMPILE_S if job.get("warm_compile") else 0))
        return outcome

    def interleave(self, outcomes: list[JobOutcome], timeout: float, sets: list[list[Any]],
                   parties: list[list[str]]) -> None:
        """Runs parked jobs' timed passes by turns (``sandbox/runner/process/turns.py``) to their
        ends, each on ``sets`` (held by the runner: ``runner/measure/clocking.py``) with its
        ``parties``; their frames and the runner's clock go on into their outcomes."""
        jobs = {o.parked: o for o in outcomes if o.parked is not None}
        if not jobs:
            return
        named = {o.parked: names for o, names in zip(outcomes, parties) if o.parked is not None}
        self._send({"op": "interleave", "jobs": list(jobs), "timeout": timeout,
                    "sets": sets, "parties": named})
        self._collect(jobs, timeout + 30)

    def drop(self, outcomes: list[JobOutcome]) -> None:
        """Ends parked jobs that will not be timed."""
        jobs = {o.parked: o for o in outcomes if o.parked is not None}
        if jobs:
            self._send({"op": "drop", "jobs": list(jobs)})
            self._collect(jobs, 30)

    def _collect(self, jobs: dict[str | None, JobOutcome], timeout: float) -> None:
        """Frames into the jobs' outcomes until every job has ended or parked.
        With one job (key None) frames carry no job id."""
        stamp: tuple[float, Any] | None = None
        waiting = set(jobs)
        try:
            for frame in self._frames(time.monotonic() + timeout):
                if not isinstance(frame, dict):
                    raise WireError("frame is not a mapping")
                if stamp is not None:
                    # The runner stamps each child frame; whatever the child
                    # wrote is data, even a frame that calls itself "exit".
                    frame["_t"] = stamp[0]
                    target = jobs.get(stamp[1])
                    if target is None:
                        raise WireError(f"a frame of an unknown job {stamp[1]!r}")
                    target.frames.append(frame)
                    stamp = None
                    continue
                kind = frame.get("kind")
                key = frame.get("job") if None not in jobs else None
                if kind == "stamp":
                    stamp = (float(frame["t"]), key)
                elif kind == "paused" and key in jobs:
                    jobs[key].paused.append((float(frame["from"]), float(frame["to"])))
                elif kind == "crosstalk" and key in jobs:
                    jobs[key].crosstalk.append(frame)
                elif kind in ("clocked", "clock_error") and key in jobs:
                    jobs[key].clock.append(frame)
                elif kind == "clock_overhead":
                    for outcome in jobs.values():
                        outcome.clock.append(frame)
                elif kind in ("exit", "parked") and key in jobs:
                    outcome = jobs[key]
                    if kind == "exit":
                        outcome.exit, outcome.parked = frame, None
                    else:
                        outcome.parked = str(frame["job"])
                    waiting.discard(key)
                    if not waiting:
                        return
        except WireError as exc:
            self.alive = False
            for key in waiting:
                jobs[key].exit, jobs[key].parked = {"reason": "protocol", "detail": str(exc)}, None

    def close(self) -> None:
        if self.alive:
            try:
                self._send({"op": "exit"})
            except SandboxError:
                pass
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._inbox is not None:
            self._inbox.close()
        self.alive = False


class SandboxDriver(Protocol):
    name: str

    def start(self, device: str) -> RunnerSession: ...

    def stop(self, session: RunnerSession) -> None: ...
