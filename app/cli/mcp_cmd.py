"""`kforge mcp`: the MCP server, over stdio (default) or streamable HTTP.

With --url (or KFORGE_MCP_URL) it works against a remote KForge service;
without, everything runs on this machine (the embedded backend). In stdio
mode stdout carries only protocol messages: logs go to stderr.
"""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from typing import Annotated

import typer


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def mcp_command(
    transport: Annotated[Transport, typer.Option(help="stdio (spawned by an agent) or http (streamable HTTP, "
                                                      "served at http://HOST:PORT/mcp).")] = Transport.stdio,
    host: Annotated[str, typer.Option(help="HTTP transport: the address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP transport: the port.")] = 8765,
    url: Annotated[str | None, typer.Option(envvar="KFORGE_MCP_URL", help=(
        "A KForge service to work against (e.g. http://gpu-box:8000); none: run on this machine."))] = None,
    token: Annotated[str | None, typer.Option(envvar="KFORGE_MCP_TOKEN", show_default=False, help=(
        "The service's API token (`kforge token create NAME`)."))] = None,
    log_level: Annotated[str, typer.Option(help="Logging level (logs go to stderr).")] = "INFO",
) -> None:
    """Serve KForge's tools (evaluate_kernel, submit_optimization, job_status, best_kernel,
    search_strategies, list_problems) to coding agents over the Model Context Protocol."""
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..mcp.server import build_server

    url = (url or "").strip() or None   # an empty KFORGE_MCP_URL (a config's placeholder) means embedded
    if url:
        if not (token or "").strip():
            raise typer.BadParameter("a remote service needs a token: --token or KFORGE_MCP_TOKEN", param_hint="--token")
        from ..mcp.remote import RemoteBackend

        backend = RemoteBackend(url, (token or "").strip())
    else:
        from ..mcp.embedded import EmbeddedBackend
        from .ceilings_cmd import ensure_ceilings

        # judgements here give roofline fractions: this machine's ceilings, once (stderr: stdout is the protocol's)
        ensure_ceilings(lambda line: logging.getLogger("kforge.mcp").info("kforge mcp: %s", line))
        backend = EmbeddedBackend()
    logging.getLogger("kforge.mcp").info("kforge mcp: %s backend%s, %s transport", backend.name,
                                         f" at {url}" if url else "", transport.value)
    server = build_server(backend)
    if transport is Transport.stdio:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
