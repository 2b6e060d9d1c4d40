"""The search loop end to end: real judge, real SDK clients, scripted model on loopback."""

from __future__ import annotations

import pytest

from agents.providers import make_provider
from agents.search import Search, SearchConfig, Trajectory
from sandbox import EvalOptions, Judge
from tests.agents.search import scripted
from tests.fakes.llm_server import FakeLLMServer, Reply


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_compile_error_is_repaired_and_reaches_the_next_prompt(judge, vendor, tmp_path):
    with FakeLLMServer() as srv:
        srv.queue(*[Reply(text) for text in scripted.SCRIPT])
        base = srv.openai_base_url if vendor == "openai" else srv.anthropic_base_url
        provider = make_provider(vendor, base_url=base, api_key="sk-test-key")
        config = SearchConfig(max_rounds=1, candidates_per_round=1, max_repairs=2, offline_starters=0)
        path = tmp_path / "traj.json"
        search = Search(judge, EvalOptions(device="cpu"), provider=provider, config=config, trajectory_path=path)
        traj = search.run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name)
        requests = srv.requests

    attempts = traj.attempts()
    assert [a.id for a in attempts] == ["r1-c0", "r1-c0-fix1"]
    assert attempts[0].verdict == "fail" and any("SyntaxError" in r for r in attempts[0].reasons)
    assert attempts[1].verdict == "pass" and attempts[1].repair_of == "r1-c0"
    assert traj.best() is not None and traj.best().id == "r1-c0-fix1"
    # The compiler's message, with the candidate's line, is in the coder's next prompt.
    repair_prompt = str(requests[2].body)
    assert "SyntaxError" in repair_prompt and "r1-c0.py:13" in repair_prompt
    assert len(requests) == 4, "plan, code, repair, review"
    assert traj.usage["input_tokens"] > 0 and traj.usage["output_tokens"] > 0
    # Saved after every attempt, and loadable.
    saved = Trajectory.load(path)
    assert [a.verdict for a in saved.attempts()] == ["fail", "pass"]
    assert saved.summary()["best"]["code"] == scripted.GOOD


def test_budget_stops_the_search(judge):
    with FakeLLMServer() as srv:
        srv.queue(*[Reply(text) for text in scripted.SCRIPT])
        provider = make_provider("openai", base_url=srv.openai_base_url, api_key="k")
        config = SearchConfig(max_rounds=3, candidates_per_round=1, max_repairs=2, offline_starters=0, max_candidates=1)
        traj = Search(judge, EvalOptions(device="cpu"), provider=provider, config=config).run(
            scripted.PROBLEM.read_text(), scripted.PROBLEM.name)
    assert traj.stop_reason.startswith("limit: candidate budget of 1")
    assert len(traj.attempts()) == 1


def test_resume_judges_a_saved_but_unjudged_attempt(judge, tmp_path):
    traj = Trajectory(problem=scripted.PROBLEM.name, reference=scripted.PROBLEM.read_text(), config={}, label="x")
    from agents.search import Attempt, Round

    traj.rounds.append(Round(index=1, attempts=[Attempt(id="r1-c0", round=1, strategy="s", code=scripted.GOOD,
                                                         source="llm")]))
    config = SearchConfig(max_rounds=1, offline_starters=0)
    done = Search(judge, EvalOptions(device="cpu"), provider=None, config=config).run(
        traj.reference, traj.problem, resume=traj)
    assert done.attempts()[0].verdict == "pass"
