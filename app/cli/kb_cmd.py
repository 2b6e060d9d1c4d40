"""`kforge kb`: search, show, export and import the knowledge base."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

kb_app = typer.Typer(no_args_is_help=True)


def _kb():
    from ..kb import knowledge_base

    return knowledge_base()


@kb_app.command("search")
def search(query: Annotated[str, typer.Argument()], k: Annotated[int, typer.Option("-k")] = 5,
           family: Annotated[str | None, typer.Option(help="Op family filter, e.g. softmax.")] = None,
           backend: Annotated[str | None, typer.Option(help="triton | cuda | cpu")] = None,
           mode: Annotated[str, typer.Option(help="hybrid | embedding | keyword")] = "hybrid",
           as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Strategies ranked for a query (a JSON list with id, title, score, ...)."""
    if mode not in ("hybrid", "embedding", "keyword"):
        raise typer.BadParameter("--mode must be hybrid, embedding or keyword")
    filters = {k2: v for k2, v in {"op_families": [family] if family else None, "backend": backend}.items() if v}
    hits = _kb().search(query, k, filters or None, mode)
    if as_json:
        sys.stdout.write(json.dumps(hits) + "\n")
        return
    table = Table("score", "id", "title", "source", "evidence")
    for h in hits:
        table.add_row(f"{h['score']:.3f}", h["id"], h["title"], h["source"], h.get("evidence_summary", ""))
    Console().print(table)


@kb_app.command("show")
def show(strategy_id: Annotated[str, typer.Argument()]) -> None:
    """One strategy with its evidence, as JSON."""
    from knowledge_base.facade import UnknownStrategy

    try:
        sys.stdout.write(json.dumps(_kb().show(strategy_id), indent=1) + "\n")
    except UnknownStrategy as exc:
        typer.echo(f"no strategy {strategy_id!r}", err=True)
        raise typer.Exit(2) from exc


@kb_app.command("export")
def export(path: Annotated[Path, typer.Argument()]) -> None:
    """Strategies and archive as JSONL."""
    typer.echo(f"{_kb().export_jsonl(path)} lines written to {path}", err=True)


@kb_app.command("import")
def import_(path: Annotated[Path, typer.Argument(exists=True, dir_okay=False)]) -> None:
    """Merge a JSONL export into this knowledge base."""
    typer.echo(f"{_kb().import_jsonl(path)} lines imported from {path}", err=True)
