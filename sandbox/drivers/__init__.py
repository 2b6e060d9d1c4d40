"""Sandbox drivers behind one interface (see base.SandboxDriver)."""

from __future__ import annotations

from typing import Any

from .base import RunnerSession, SandboxDriver, SandboxError

DRIVERS = ("process", "docker")


def get_driver(name: str, **kwargs: Any) -> SandboxDriver:
    if name == "process":
        from .process import ProcessDriver

        return ProcessDriver(**kwargs)
    if name == "docker":
        from .docker import DockerDriver

        return DockerDriver(**kwargs)
    raise ValueError(f"unknown sandbox {name!r}: use one of {', '.join(DRIVERS)}")


__all__ = ["DRIVERS", "RunnerSession", "SandboxDriver", "SandboxError", "get_driver"]
