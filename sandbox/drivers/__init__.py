"""Sandbox drivers: where the judge's warm runners live."""

from __future__ import annotations

from typing import Any

from .base import SandboxDriver

DRIVERS = ("process", "docker")


def get_driver(name: str, **kw: Any) -> SandboxDriver:
    """The driver called ``name``, built with ``kw``."""
    if name == "process":
        from .process import ProcessDriver

        return ProcessDriver(**kw)
    if name == "docker":
        # Imported here: the Docker SDK is needed only by those who use it.
        from .docker import DockerDriver

        return DockerDriver(**kw)
    raise ValueError(f"unknown sandbox driver {name!r}; choose one of {', '.join(DRIVERS)}")
