"""`kforge mcp` against a real KForge service (PostgreSQL, Redis, `kforge api`
and a `kforge worker`): over streamable HTTP (--url/--token) and spawned over
stdio (KFORGE_MCP_URL/KFORGE_MCP_TOKEN), with the official MCP client."""

from __future__ import annotations

import socket

import anyio
import pytest

from app.errors import NotAuthenticated
from app.mcp.remote import RemoteBackend
from tests.app.mcp.conftest import (
    BROKEN_REFERENCE,
    CHEAT,
    HONEST,
    REFERENCE,
    TOOLS,
    Progress,
    call,
    error_text,
    free_port,
    http_session,
    ok,
    stdio_session,
    token,
    wait_for,
)


def listening(port: int) -> bool:
    socket.create_connection(("127.0.0.1", port), timeout=1).close()
    return True


def test_remote_service_over_http_and_stdio(procs, service_env):
    api_port, port = free_port(), free_port()
    api = f"http://127.0.0.1:{api_port}"
    # The API, a worker, the token and the MCP server come up side by side; none needs another to boot.
    procs.start("api", "--port", str(api_port), name="api")
    procs.worker("w1")
    secret = token(service_env, "agent")
    procs.start("mcp", "--transport", "http", "--port", str(port), "--url", api, "--token", secret, name="mcp")
    wait_for(lambda: listening(api_port) and listening(port), 60, "api and mcp up")

    async def over_http() -> None:
        async with http_session(f"http://127.0.0.1:{port}/mcp") as session:
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            progress = Progress()
            honest = ok(await call(session, "evaluate_kernel", progress, reference=REFERENCE, candidate=HONEST,
                                   device="cpu"))
            assert honest["verdict"] == "pass" and honest["job_id"] and progress.events
            cheat = ok(await call(session, "evaluate_kernel", reference=REFERENCE, candidate=CHEAT, device="cpu"))
            assert cheat["verdict"] == "fail" and cheat["checks"]["kernel_launched"] == "fail"
            assert any(r.startswith("no_reference_ops:") for r in cheat["reasons"])
            broken = await call(session, "evaluate_kernel", reference=BROKEN_REFERENCE, candidate=HONEST)
            assert "reference.py:2" in error_text(broken)
            assert "no job nope" in error_text(await call(session, "job_status", job_id="nope"))
            hits = ok(await call(session, "search_strategies", query="softmax over long rows", k=2))["results"]
            assert 0 < len(hits) <= 2 and all(h["title"] and h["source"] for h in hits)

    async def over_stdio() -> None:
        env = {"KFORGE_MCP_URL": api, "KFORGE_MCP_TOKEN": secret}
        async with stdio_session(env) as session:
            submitted = ok(await call(session, "submit_optimization", reference="level1/1_relu_scale", max_rounds=0,
                                      device="cpu"))
            progress = Progress()
            status = ok(await call(session, "job_status", progress, job_id=submitted["job_id"], wait_s=300))
            assert status["status"] == "succeeded" and status["has_best_kernel"], status
            assert progress.events and progress.events[-1][0] == 1.0
            best = ok(await call(session, "best_kernel", job_id=submitted["job_id"]))
            assert "ModelNew" in best["code"] and best["attempt_id"] == status["best_attempt_id"]
            assert best["comparison"] == status["comparison"] and best["comparison"]["fastest"] in (
                "kernel", "eager", "torch.compile", "unknown")

    async def wrong_token() -> None:
        backend = RemoteBackend(api, "kf_wrong")
        with pytest.raises(NotAuthenticated, match="refused the token"):
            await backend.job_detail("any")
        await backend.close()

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:  # two agents at once, sharing the service's one worker
            tg.start_soon(over_http)
            tg.start_soon(over_stdio)
        await wrong_token()

    anyio.run(scenario)
