"""The interface every sandbox driver offers the judge.

A driver starts a warm runner (``sandbox.runner.zygote``) somewhere isolated
and hands back a ``RunnerSession``: a pair of byte streams to it. Everything
after that -- forking per job, limits, stamping frames -- is the same code
whichever driver started the runner.
"""

from __future__ import annotations

import os
import select
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..runner.wire import FrameBuffer, WireError, write_fd

# Only these variables reach a sandbox; nothing else of the judge's
# environment (API keys, database URLs, tokens) does.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "DATABASE_URL", "BROKER_URL")


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return {k: v for k, v in env.items() if not any(m in k.upper() for m in SECRET_MARKERS)}


class SandboxError(Exception):
    """The sandbox itself failed (could not start, runner died)."""


@dataclass
class JobOutcome:
    frames: list[dict[str, Any]] = field(default_factory=list)
    exit: dict[str, Any] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("kind") == kind]

    def first(self, kind: str) -> dict[str, Any] | None:
        found = self.of_kind(kind)
        return found[0] if found else None

    @property
    def finished(self) -> bool:
        return self.first("done") is not None

    def stamp(self, phase: str) -> float | None:
        for f in self.frames:
            if f.get("kind") == "phase" and f.get("name") == phase:
                return f.get("_t")
        return None


class RunnerSession:
    """Talks to one warm runner over a pair of file descriptors."""

    def __init__(self, write_fd: int, read_fd: int, description: str) -> None:
        self._w = write_fd
        self._r = read_fd
        self.description = description
        self.ready: dict[str, Any] = {}
        self.alive = True

    def _send(self, obj: dict[str, Any]) -> None:
        try:
            write_fd(self._w, obj)
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
            ready, _, _ = select.select([self._r], [], [], remaining)
            if not ready:
                continue
            data = os.read(self._r, 1 << 20)
            if not data:
                self.alive = False
                raise SandboxError("runner closed its channel")
            yield from buf.feed(data)

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        for frame in self._frames(time.monotonic() + timeout):
            if frame.get("kind") == "ready":
                self.ready = frame
                return frame
        raise SandboxError("runner sent no ready frame")

    def run(self, job: dict[str, Any], timeout: float, memory_mb: int, max_procs: int) -> JobOutcome:
        self._send({"op": "run", "job": job, "timeout": timeout, "memory_mb": memory_mb, "max_procs": max_procs})
        outcome = JobOutcome()
        stamp = None
        try:
            for frame in self._frames(time.monotonic() + timeout + 30):
                if not isinstance(frame, dict):
                    raise WireError("frame is not a mapping")
                if stamp is not None:
                    # The runner stamps each child frame; whatever the child
                    # wrote is data, even a frame that calls itself "exit".
                    frame["_t"] = stamp
                    outcome.frames.append(frame)
                    stamp = None
                elif frame.get("kind") == "stamp":
                    stamp = float(frame["t"])
                elif frame.get("kind") == "exit":
                    outcome.exit = frame
                    return outcome
        except WireError as exc:
            self.alive = False
            outcome.exit = {"reason": "protocol", "detail": str(exc)}
        return outcome

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
        self.alive = False


class SandboxDriver(Protocol):
    name: str

    def start(self, device: str) -> RunnerSession: ...

    def stop(self, session: RunnerSession) -> None: ...
