"""The selftest report as JSON and Markdown files."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# kforge selftest ({report['device']}{', quick' if report['quick'] else ''})", "",
             f"- {report['started_utc']}; {platform.machine()} {report.get('host', '')}; "
             f"{report['elapsed_s']:.0f} s; overall **{report['verdict']}**", "",
             "| part | verdict | summary |", "| --- | --- | --- |"]
    lines += [f"| {p['name']} | {p['verdict']} | {p['summary']} |" for p in report["parts"].values()]
    for part in report["parts"].values():
        lines += ["", f"## {part['name']}", "", part["summary"], ""]
        if part["numbers"]:
            lines += ["```json", json.dumps(part["numbers"], indent=1), "```", ""]
        if part["cases"]:
            keys = [k for k in part["cases"][0] if k not in ("reasons", "params", "exploit")]
            lines += ["| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
            lines += ["| " + " | ".join(str(c.get(k, "")) for k in keys) + " |" for c in part["cases"]]
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"selftest-{report['device']}"
    js, md = folder / f"{stem}.json", folder / f"{stem}.md"
    js.write_text(json.dumps(report, indent=1) + "\n")
    md.write_text(markdown(report))
    return js, md
