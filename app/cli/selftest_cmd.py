"""`kforge selftest`: the judge's own checks on this machine, one verdict per part.

Exit codes: 0 every part passed (a timing "warn" on a loaded host counts as
passed), 1 a part failed, 2 the request cannot run (e.g. --device cuda without a
GPU). With --json stdout holds exactly one JSON object.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..compose import eval_options
from ..settings import get_settings

COLOUR = {"pass": "green", "warn": "yellow", "fail": "red"}


def selftest_command(
    device: Annotated[str, typer.Option(help="auto | cpu | cuda")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="Folder of the JSON + Markdown report "
                                             "(default: <data dir>/selftest).")] = None,
    quick: Annotated[bool, typer.Option(help="A small sample of each part (a few minutes).")] = False,
    parts: Annotated[str | None, typer.Option(help="Comma-separated parts to run (default: all): "
                                              "ceilings, solutions, redteam, engine, timing.")] = None,
) -> None:
    from sandbox import ProblemError
    from sandbox.options import resolve_device

    from ..selftest import PARTS, run_selftest
    from ..selftest.report import write

    try:
        resolved = resolve_device(device)
    except ProblemError as exc:
        _error(str(exc), as_json)
    chosen = tuple(p.strip() for p in parts.split(",") if p.strip()) if parts else PARTS
    if not chosen or set(chosen) - set(PARTS):
        _error(f"--parts takes some of {', '.join(PARTS)}; got {parts!r}", as_json)
    settings = get_settings()

    def options_for(backend: str, **overrides: Any) -> Any:
        return eval_options(settings, backend, device=resolved, **overrides)

    console = Console(stderr=as_json)

    def show(part: Any) -> None:
        console.print(f"[bold {COLOUR[part.verdict]}]{part.verdict.upper():4}[/] {part.name}: {part.summary} "
                      f"({part.elapsed_s:.0f} s)")

    report = run_selftest(resolved, options_for, quick=quick, parts=chosen, on_part=show)
    report["host"] = f"{platform.node()}, {os.cpu_count()} CPUs"
    js, md = write(report, out or settings.data_dir / "selftest")
    report["report_files"] = {"json": str(js), "markdown": str(md)}
    if as_json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        console.print(f"[bold {COLOUR[report['verdict']]}]{report['verdict'].upper()}[/]; report: {md}")
    raise typer.Exit(0 if report["verdict"] == "pass" else 1)


def _error(message: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"verdict": "error", "reasons": [message]}) + "\n")
    else:
        Console(stderr=True).print(f"[bold yellow]ERROR[/] {message}")
    raise typer.Exit(2)
