"""`kforge problems list DIR`: the problems of a suite folder, read without running them
(with --families: plus the offline engine's plan for each, from the judge's sandboxed
analysis; the references run only in the sandbox)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sandbox import ProblemError, list_problems

problems_app = typer.Typer(no_args_is_help=True)


@problems_app.command("list")
def list_command(
    folder: Annotated[Path, typer.Argument(help="Suite folder, e.g. problems/ or a KernelBench checkout's KernelBench/.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list on stdout.")] = False,
    families: Annotated[bool, typer.Option("--families", help="Also the offline engine's family per problem, or "
                                           "why it has none (runs the judge's sandboxed analysis of each).")] = False,
    backend: Annotated[str, typer.Option(help="The backend whose templates --families asks about: "
                                         "triton | cuda | cpu.")] = "cpu",
) -> None:
    try:
        found = list_problems(folder)
    except ProblemError as exc:
        if as_json:
            sys.stdout.write(json.dumps({"error": str(exc)}) + "\n")
        else:
            Console(stderr=True).print(f"[red]{exc}[/]")
        raise typer.Exit(2) from exc
    if families:
        plan_all(found, backend)
    if as_json:
        sys.stdout.write(json.dumps(found) + "\n")
        return
    table = Table("level", "name", "input shapes", "status", *(["offline family / reason"] if families else []))
    for p in found:
        plan = p.get("offline") or {}
        extra = [plan.get("family") or plan.get("reason") or plan.get("error") or "-"] if families else []
        table.add_row(str(p.get("level") or "-"), p["name"], str(p.get("input_shapes") or "?"), p.get("error", "ok"),
                      *extra)
    Console().print(table)


def plan_all(found: list[dict[str, Any]], backend: str) -> None:
    """Adds ``offline`` to every problem that loads: agents.offline.Plan.to_json(), or {"error"}."""
    from agents.offline import OfflineEngine, plan_reference
    from sandbox import Judge

    from ..compose import eval_options

    engine, options = OfflineEngine(backend), eval_options(backend=backend)
    with Judge(warm=True) as judge:
        for p in found:
            if "error" in p:
                continue
            try:
                _, plan = plan_reference(judge, Path(p["path"]).read_text(), Path(p["path"]).name, options,
                                         engine=engine)
            except ProblemError as exc:
                p["offline"] = {"backend": backend, "error": str(exc)}
            else:
                p["offline"] = plan.to_json()
