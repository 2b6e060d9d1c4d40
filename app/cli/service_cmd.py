"""Service commands: `serve` (everything on one machine), `api`, `worker`,
`db upgrade`, `token create`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from typing import Annotated

import typer

from ..db.migrate import upgrade_database
from ..settings import get_settings

db_app = typer.Typer(no_args_is_help=True)
token_app = typer.Typer(no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply the migrations to KFORGE_DATABASE_URL (or the embedded SQLite file)."""
    upgrade_database()
    typer.echo("database at head")


@token_app.command("create")
def token_create(name: Annotated[str, typer.Argument(help="User name; created on first use.")],
                 admin: Annotated[bool, typer.Option("--admin", help="The user may read every job.")] = False) -> None:
    """Create an API token; it is printed once, on the last line."""
    from ..auth.tokens import create_token
    from ..db.session import transaction

    settings = get_settings()
    if settings.db_url.startswith("sqlite"):
        upgrade_database()
    with transaction(settings.db_url) as s:
        user, token = create_token(s, name, admin=admin)
    typer.echo(f"token for {user.name}{' (admin)' if user.is_admin else ''} — shown once, keep it safe:", err=True)
    typer.echo(token)


def worker_command(
    queue: Annotated[list[str] | None, typer.Option("--queue", "-Q", help="Queue(s): cpu, gpu-<kind>.")] = None,
    name: Annotated[str | None, typer.Option(help="Worker name (default: kforge@<host>-<pid>).")] = None,
) -> None:
    """Run a Celery worker (one task at a time; start more for more parallelism)."""
    from ..worker.tasks import app

    queues = ",".join(queue or ["cpu"])
    if "cpu" in queues.split(","):
        from .ceilings_cmd import ensure_ceilings

        # once per machine (~2 s, kept), before any job: the judgements it runs give roofline fractions
        ensure_ceilings(lambda line: typer.echo(f"kforge worker: {line}", err=True))
    node = name or f"kforge@{socket.gethostname()}-{os.getpid()}"
    app.worker_main(["worker", "-Q", queues, "-n", node, "--pool", "solo", "--loglevel", "INFO",
                     "--without-gossip", "--without-mingle"])


def api_command(host: Annotated[str, typer.Option()] = "127.0.0.1",
                port: Annotated[int, typer.Option()] = 8000,
                workers: Annotated[int | None, typer.Option(help="Processes (default KFORGE_API_WORKERS, 0: one per core).")]
                = None) -> None:
    """Run the REST API (uvicorn). The processes share nothing but the database
    and the broker: start as many, on as many hosts, as the load needs."""
    import uvicorn

    from ..api.logconfig import log_config

    count = workers if workers is not None else get_settings().api_workers
    count = count or len(os.sched_getaffinity(0))
    uvicorn.run("app.api.main:app", host=host, port=port, workers=count, log_config=log_config(),
                access_log=False, timeout_graceful_shutdown=10)


def serve_command(host: Annotated[str, typer.Option()] = "127.0.0.1",
                  port: Annotated[int, typer.Option()] = 8000) -> None:
    """API, dashboard and a worker on this machine: SQLite and a broker in a
    file, no external server (or PostgreSQL/Redis when KFORGE_* URLs say so)."""
    settings = get_settings()
    upgrade_database()
    typer.echo(f"kforge: database {settings.db_url}\nkforge: broker   {settings.queue_url}", err=True)
    worker = subprocess.Popen([sys.executable, "-m", "app.cli.main", "worker", "--queue", "cpu"], cwd=os.getcwd())
    try:
        api_command(host, port)
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
