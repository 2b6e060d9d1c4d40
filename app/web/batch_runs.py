"""Batch runs for the pages, read from their report.json files.

KFORGE_BATCH_DIR (Settings.batch_dir) names a folder of run folders (each the `--out` of a
`kforge batch run`, holding report.json in the format "kforge-batch-report/1",
written by app/batch/reporting/report.py). The pages depend on that JSON only, not on the
batch code. Reports are re-read only when their file changed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends

from ..deps import SettingsDep
from ..errors import NotFound

FORMAT = "kforge-batch-report/"
RUN_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")


async def batch_dir(settings: SettingsDep) -> Path | None:
    """The runs folder (a dependency, so tests can point it elsewhere)."""
    return settings.batch_dir


BatchDir = Annotated[Path | None, Depends(batch_dir)]


_CACHE: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def _read(path: Path) -> dict[str, Any] | None:
    try:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if path in _CACHE and _CACHE[path][0] == key:
            return _CACHE[path][1]
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith(FORMAT):
        return None
    _CACHE[path] = (key, data)
    return data


@dataclass
class RunRow:
    name: str
    report: dict[str, Any]

    @property
    def view(self) -> dict[str, Any]:
        return self.report["metrics"]["per_sample"]

    @property
    def suite(self) -> str:
        return Path(str(self.report.get("run", {}).get("suite") or "")).name

    @property
    def fast_1(self) -> float | None:
        return self.view["fast_p_eager"].get("1")

    def rank_key(self) -> tuple[float, float, float]:
        v = self.view
        return (self.fast_1 if self.fast_1 is not None else -1.0, v.get("geomean_speedup_eager") or 0.0,
                v.get("correctness_rate") or 0.0)


def list_runs(root: Path) -> list[RunRow]:
    """Every run folder with a report, best first: fast_1 against eager, then geomean speedup, then correctness."""
    rows = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and RUN_NAME.match(p.name)) if root.is_dir() else []:
        report = _read(folder / "report.json")
        if report is not None:
            rows.append(RunRow(folder.name, report))
    return sorted(rows, key=RunRow.rank_key, reverse=True)


def load_run(root: Path, name: str) -> dict[str, Any]:
    """A run by folder name; a name that is not a plain folder name inside the runs folder is missing."""
    report = _read(root / name / "report.json") if RUN_NAME.match(name) and root.is_dir() else None
    if report is None:
        raise NotFound(f"no batch run {name!r}")
    return report
