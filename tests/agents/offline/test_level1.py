"""The offline engine over the bundled level-1 suite, whatever it holds.

For every problem either the engine's candidate passes the real judge, or the
engine proposes nothing and says which op it has no template for. A proposal
that fails is a bug in a template or in the matching.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.offline import OfflineEngine, run_offline
from sandbox import EvalOptions, Judge

ROOT = Path(__file__).resolve().parents[3]
PROBLEMS = sorted((ROOT / "problems" / "level1").glob("*.py"))


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


@pytest.mark.parametrize("path", PROBLEMS, ids=[p.name for p in PROBLEMS])
def test_passes_or_explains(judge: Judge, path: Path) -> None:
    result = run_offline(judge, path.read_text(), path.name, EvalOptions(device="cpu"))
    if not result.attempts:
        prefix = "no offline template fits this reference: "
        assert result.reason.startswith(prefix) and len(result.reason) > len(prefix) + 10
        return
    assert result.best is not None, result.reason
    assert result.best.verdict == "pass"
    assert result.best.proposal.family in OfflineEngine().families()
