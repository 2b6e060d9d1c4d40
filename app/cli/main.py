"""`kforge`: the command line entry point."""

from __future__ import annotations

import typer

from .eval_cmd import eval_command
from .optimize_cmd import optimize_command
from .problems_cmd import problems_app
from .service_cmd import api_command, db_app, serve_command, token_app, worker_command

cli = typer.Typer(name="kforge", help="KForge: verified GPU kernels from LLM agents.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)
cli.command("eval", help="Judge a candidate kernel against a reference, in a sandbox.")(eval_command)
cli.command("optimize", help="Search for a faster verified kernel for a problem.")(optimize_command)
cli.add_typer(problems_app, name="problems", help="Problem suites (KernelBench format).")
cli.command("serve", help="Everything on one machine: API, dashboard, worker (embedded defaults).")(serve_command)
cli.command("api", help="Run the REST API.")(api_command)
cli.command("worker", help="Run a worker for one or more queues.")(worker_command)
cli.add_typer(db_app, name="db", help="Database migrations.")
cli.add_typer(token_app, name="token", help="API tokens.")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
