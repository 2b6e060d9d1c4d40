"""The MCP tools take backend cpu (a real `kforge mcp` over stdio, embedded):
the schemas list it, evaluate_kernel with it judges on the CPU even when the
server's own device is cuda, and a clash with device cuda is a tool error."""

from __future__ import annotations

import anyio

from tests.agents.search.test_cpu import GOOD_C
from tests.app.mcp.conftest import HONEST, REFERENCE, call, error_text, ok, stdio_session


def test_tools_take_backend_cpu(tmp_path):
    env = {"KFORGE_DATA_DIR": str(tmp_path / "data"), "KFORGE_DEVICE": "cuda"}  # no GPU here: cuda alone fails

    async def scenario() -> None:
        async with stdio_session(env) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
            for tool in ("evaluate_kernel", "submit_optimization", "search_strategies"):
                schema = str(listed[tool].input_schema["properties"]["backend"])
                assert "'cpu'" in schema and "'triton'" in schema, (tool, schema)

            judged = ok(await call(session, "evaluate_kernel", reference=REFERENCE, candidate=HONEST, backend="cpu"))
            assert judged["verdict"] == "pass" and judged["device"] == "cpu"
            assert judged["roofline"] == {}  # Triton's interpreter: nothing timed for speed
            # A native C kernel is timed for real: its roofline against the ceilings the server kept at its start.
            native = await call(session, "evaluate_kernel", reference=REFERENCE, candidate=GOOD_C, backend="cpu")
            roof = ok(native)["roofline"]
            assert roof["bound_by"] == "memory" and {"kernel", "eager"} <= set(roof["parties"])
            assert roof["parties"]["kernel"]["fraction"] > 0
            assert "Roofline: " in " ".join(getattr(c, "text", "") for c in native.content)
            assert "no CUDA device" in error_text(await call(session, "evaluate_kernel", reference=REFERENCE,
                                                             candidate=HONEST))
            clash = await call(session, "evaluate_kernel", reference=REFERENCE, candidate=HONEST, backend="cpu",
                               device="cuda")
            assert "--backend cpu runs on the CPU" in error_text(clash)
            # A cpu job does not inherit the server's device (cuda here): it is created and queued.
            job = ok(await call(session, "submit_optimization", reference="level1/1_relu_scale", backend="cpu",
                                max_rounds=0))
            assert job["job_id"] and job["status"] in ("queued", "running", "succeeded")
            hits = ok(await call(session, "search_strategies", query="fused elementwise", k=3, backend="cpu"))
            assert isinstance(hits["results"], list)

    anyio.run(scenario)
