"""The official MCP client (the `mcp` SDK's ClientSession) talking to a real
`kforge mcp`: spawned over stdio, or reached over streamable HTTP. The
service fixtures (PostgreSQL, Redis, `kforge api` / `kforge worker`
processes) come from tests/app/service."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.app.service.conftest import free_port, pg_url, procs, redis_server, service_env, token, wait_for  # noqa: F401
from tests.conftest import ROOT

REFERENCE = (ROOT / "problems/level1/1_relu_scale.py").read_text()
HONEST = (ROOT / "problems/level1/solutions/relu_scale/correct_triton.py").read_text()
# Correct numbers, no kernel: hands the whole computation back to torch.
CHEAT = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale
'''
BROKEN_REFERENCE = "import torch\nclass Model(:\n    pass\n"
TOOLS = {"evaluate_kernel", "submit_optimization", "job_status", "best_kernel", "search_strategies", "list_problems"}


@asynccontextmanager
async def stdio_session(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    """Spawn `kforge mcp` (stdio) as an agent would; ``env`` is added to the SDK's safe default environment."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "app.cli.main", "mcp"], cwd=str(ROOT), env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


class Progress:
    """Collects the progress notifications of one call."""

    def __init__(self) -> None:
        self.events: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append((progress, total, message))


async def call(session: ClientSession, tool: str, progress: Progress | None = None, **args: Any) -> CallToolResult:
    return await session.call_tool(tool, args, read_timeout_seconds=600, progress_callback=progress)


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured output of a successful call (and its text summary is there too)."""
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, text
    assert text.strip() and result.structured_content is not None
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)
