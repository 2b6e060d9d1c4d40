"""`kforge mcp` spawned over stdio with no service: the embedded backend
judges in-process and runs jobs in a background thread of the server."""

from __future__ import annotations

import anyio

from tests.app.mcp.conftest import (
    BROKEN_REFERENCE,
    CHEAT,
    HONEST,
    REFERENCE,
    TOOLS,
    Progress,
    call,
    error_text,
    ok,
    stdio_session,
)


def embedded_env(tmp_path) -> dict[str, str]:
    return {"KFORGE_DATA_DIR": str(tmp_path / "data"), "KFORGE_DEVICE": "cpu"}


def test_judges_honest_and_cheating_kernels_and_reports_bad_input(tmp_path):
    async def scenario() -> None:
        async with stdio_session(embedded_env(tmp_path)) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert set(listed) == TOOLS
            assert all(t.output_schema and t.description for t in listed.values())
            assert {"verdict", "reasons", "speedup"} <= set(listed["evaluate_kernel"].output_schema["properties"])

            progress = Progress()
            honest = ok(await call(session, "evaluate_kernel", progress, reference=REFERENCE, candidate=HONEST))
            assert honest["verdict"] == "pass" and honest["reasons"] == [] and honest["correct"] is True
            assert honest["speedup"] is None and honest["device"] == "cpu"  # the Triton interpreter: no speed claim
            assert progress.events and all(m for _, _, m in progress.events)
            values = [p for p, _, _ in progress.events]
            assert values == sorted(set(values)), "progress must strictly increase"

            # A bundled problem's name works as the reference.
            cheat = ok(await call(session, "evaluate_kernel", reference="level1/1_relu_scale", candidate=CHEAT))
            assert cheat["verdict"] == "fail" and cheat["correct"] is True
            assert cheat["checks"]["kernel_launched"] == "fail" and cheat["checks"]["no_reference_ops"] == "fail"
            assert any(r.startswith("kernel_launched:") for r in cheat["reasons"])

            broken = await call(session, "evaluate_kernel", reference=BROKEN_REFERENCE, candidate=HONEST)
            assert "reference.py:2" in error_text(broken) and "SyntaxError" in error_text(broken)
            assert "no bundled problem" in error_text(await call(session, "evaluate_kernel", reference="level9/nope",
                                                                  candidate=HONEST))
            assert "no job nope" in error_text(await call(session, "job_status", job_id="nope"))
            assert "max_rounds" in error_text(await call(session, "submit_optimization", reference=REFERENCE,
                                                         max_rounds=-1))

            problems = {p["name"]: p for p in ok(await call(session, "list_problems", level=1))["problems"]}
            assert problems["level1/1_relu_scale"]["input_shapes"] == [[19, 1531]]
            assert all(p["level"] == 1 for p in problems.values())

            hits = ok(await call(session, "search_strategies", query="softmax over long rows", k=3))["results"]
            assert 0 < len(hits) <= 3 and all(h["title"] for h in hits)

    anyio.run(scenario)


def test_a_job_outlives_its_server_and_is_followed_to_its_best_kernel(tmp_path):
    # A short lease, so that the second server may take over the job the first one left running.
    env = {**embedded_env(tmp_path), "KFORGE_STALE_AFTER_S": "2", "KFORGE_HEARTBEAT_S": "0.5"}

    async def scenario() -> None:
        async with stdio_session(env) as session:
            submitted = ok(await call(session, "submit_optimization", reference="level1/1_relu_scale", max_rounds=0))
            assert submitted["status"] in ("queued", "running") and submitted["rounds_planned"] == 1
            assert ok(await call(session, "job_status", job_id=submitted["job_id"]))["job_id"] == submitted["job_id"]
        # The agent closed the server, probably mid-job: a new one resumes the job and follows it.
        async with stdio_session(env) as session:
            progress = Progress()
            status = ok(await call(session, "job_status", progress, job_id=submitted["job_id"], wait_s=300))
            assert status["status"] == "succeeded", status
            assert status["done"] and status["progress"] == 1.0 and status["candidates_passed"] >= 1
            # No backend given: auto, which with the server's device (KFORGE_DEVICE=cpu) is cpu, timed for real.
            assert status["backend"] == "cpu" and status["backend_reason"] == "auto: device cpu asked for -> cpu"
            assert status["device"] and status["best_speedup"] is not None
            values = [p for p, _, _ in progress.events]
            assert status["has_best_kernel"] and values[-1] == 1.0
            assert values == sorted(set(values)), "progress must strictly increase"
            reply = await call(session, "best_kernel", job_id=submitted["job_id"])
            best = ok(reply)
            assert "class ModelNew" in best["code"] and best["verdict"] == "pass"
            assert best["attempt_id"] == status["best_attempt_id"]
            # Both tools carry the comparison; the best kernel's text leads with what to use.
            cmp_ = best["comparison"]
            assert cmp_ == status["comparison"] and cmp_["attempt_id"] == best["attempt_id"]
            assert cmp_["kernel_beats_eager"] == (status["best_speedup"] > 1.0)
            assert reply.content[0].text.startswith(cmp_["recommendation"])

    anyio.run(scenario)
