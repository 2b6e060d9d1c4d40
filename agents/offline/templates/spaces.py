"""The template families' launch parameters (``param_spaces.toml``: data, one table for
every family and backend), read once."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("param_spaces.toml")


@cache
def _spaces() -> dict[str, dict[str, list[dict[str, Any]]]]:
    return tomllib.loads(FILE.read_text(encoding="utf-8"))


def param_space(backend: str, family: str) -> list[dict[str, Any]]:
    """``family``'s parameter sets for ``backend`` ("cpu" or "triton"), best guess first."""
    return [dict(p) for p in _spaces()[backend][family]]
