"""`kforge problems list DIR`: the problems of a suite folder, read without running them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sandbox import ProblemError, list_problems

problems_app = typer.Typer(no_args_is_help=True)


@problems_app.command("list")
def list_command(
    folder: Annotated[Path, typer.Argument(help="Suite folder, e.g. problems/ or a KernelBench checkout's KernelBench/.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list on stdout.")] = False,
) -> None:
    try:
        found = list_problems(folder)
    except ProblemError as exc:
        if as_json:
            sys.stdout.write(json.dumps({"error": str(exc)}) + "\n")
        else:
            Console(stderr=True).print(f"[red]{exc}[/]")
        raise typer.Exit(2) from exc
    if as_json:
        sys.stdout.write(json.dumps(found) + "\n")
        return
    table = Table("level", "name", "input shapes", "status")
    for p in found:
        table.add_row(str(p.get("level") or "-"), p["name"], str(p.get("input_shapes") or "?"), p.get("error", "ok"))
    Console().print(table)
