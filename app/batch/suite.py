"""Which problems a batch runs: our bundled suite (problems/levelK/N_name.py)
or a KernelBench checkout (KernelBench/levelK/N_Name.py), read unchanged.

A problem's id is its path below the suite root without `.py`
(`level1/19_matmul`): unique across levels, and the folder its results go to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from sandbox import list_problems

_LEVEL_DIR = re.compile(r"level_?\d+", re.IGNORECASE)


@dataclass(frozen=True)
class SuiteProblem:
    id: str
    name: str
    level: int | None
    path: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "level": self.level, "path": self.path, "error": self.error}


def suite_root(suite: Path) -> Path:
    """A KernelBench checkout keeps its problems in KernelBench/levelK/; accept the
    checkout's root as well as that folder."""
    inner = suite / "KernelBench"
    if inner.is_dir() and any(_LEVEL_DIR.fullmatch(d.name) for d in inner.iterdir() if d.is_dir()):
        return inner
    return suite


def _natural(problem: SuiteProblem) -> tuple[Any, ...]:
    """level1/2_x before level1/10_x, as KernelBench numbers them."""
    parts = re.split(r"(\d+)", problem.id)
    return (problem.level if problem.level is not None else 1 << 30,
            *((0, int(p)) if p.isdigit() else (1, p) for p in parts))


def discover(suite: Path, level: int | None = None, pattern: str | None = None) -> list[SuiteProblem]:
    """Every problem of the suite (solutions/ folders skipped), filtered by level
    and by a glob matched against the id or the file's stem. When the suite has
    level folders, only files inside them count: a checkout's scripts are not problems."""
    root = suite_root(Path(suite))
    level_dirs = {d.name for d in root.iterdir() if d.is_dir() and _LEVEL_DIR.fullmatch(d.name)} \
        if root.is_dir() else set()
    found = []
    for entry in list_problems(root):
        rel = Path(entry["path"]).resolve().relative_to(root.resolve()).with_suffix("")
        if level_dirs and rel.parts[0] not in level_dirs:
            continue
        problem = SuiteProblem(id=rel.as_posix(), name=entry["name"], level=entry.get("level"),
                               path=entry["path"], error=entry.get("error"))
        if level is not None and problem.level != level:
            continue
        if pattern and not (fnmatch(problem.id, pattern) or fnmatch(problem.name, pattern)):
            continue
        found.append(problem)
    return sorted(found, key=_natural)
