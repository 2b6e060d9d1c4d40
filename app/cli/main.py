"""`kforge`: the command line entry point.

Commands are imported only when asked for: `kforge mcp` or `kforge token`
must not pay for importing torch and the provider SDKs (seconds), which the
judge and the agents need.
"""

from __future__ import annotations

import sys
from importlib import import_module

import typer

# name -> (module, attribute, "command" | "group", help)
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "eval": ("app.cli.eval_cmd", "eval_command", "command", "Judge a candidate kernel against a reference, in a sandbox."),
    "judged": ("app.cli.eval_cmd", "judged_command", "command",
               "Keep a warm judge behind a socket: `kforge eval` asks it instead of starting one."),
    "optimize": ("app.cli.optimize_cmd", "optimize_command", "command",
                 "Search for a faster verified kernel for a problem."),
    "problems": ("app.cli.problems_cmd", "problems_app", "group", "Problem suites (KernelBench format)."),
    "batch": ("app.cli.batch_cmd", "batch_app", "group", "Run a suite through the search; metrics and reports."),
    "serve": ("app.cli.service_cmd", "serve_command", "command",
              "Everything on one machine: API, dashboard, worker (embedded defaults)."),
    "api": ("app.cli.service_cmd", "api_command", "command", "Run the REST API."),
    "worker": ("app.cli.service_cmd", "worker_command", "command", "Run a worker for one or more queues."),
    "db": ("app.cli.service_cmd", "db_app", "group", "Database migrations."),
    "token": ("app.cli.service_cmd", "token_app", "group", "API tokens."),
    "selftest": ("app.cli.selftest_cmd", "selftest_command", "command",
                 "Check the judge on this machine: solutions, red-team cheats, offline engine, timing quality."),
    "ceilings": ("app.cli.ceilings_cmd", "ceilings_command", "command",
                 "This machine's memory bandwidth and peak compute with the judge's threads (measured once, kept)."),
    "kb": ("app.cli.kb_cmd", "kb_app", "group", "The knowledge base: search, show, export, import."),
    "mcp": ("app.cli.mcp_cmd", "mcp_command", "command", "MCP server for coding agents (stdio by default; --transport http)."),
}


def build(names: list[str] | None = None) -> typer.Typer:
    cli = typer.Typer(name="kforge", help="KForge: verified GPU kernels from LLM agents.", no_args_is_help=True,
                      add_completion=False, pretty_exceptions_enable=False)
    # A callback keeps `kforge NAME ...` a group even when only NAME is registered.
    cli.callback()(lambda: None)
    for name, (module, attr, kind, help_) in COMMANDS.items():
        if names is not None and name not in names:
            continue
        target = getattr(import_module(module), attr)
        if kind == "group":
            cli.add_typer(target, name=name, help=help_)
        else:
            cli.command(name, help=help_)(target)
    return cli


def main() -> None:
    first = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    build([first] if first in COMMANDS else None)()


if __name__ == "__main__":
    main()
