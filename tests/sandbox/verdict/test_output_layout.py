"""output_layout on plain data: what the sandbox measures of an output's memory
(sandbox.runner.phases.harness.stored_elements) and how the judge reads it
(sandbox.verdict.checks.layout_check). The fixtures that cheat with expanded
views run through the real judge in tests/sandbox/judge/test_redteam.py."""

from __future__ import annotations

import torch

from sandbox.runner.phases.harness import stored_elements
from sandbox.verdict.checks import FAIL, PASS, layout_check


def test_stored_elements_counts_the_memory_an_output_can_reach() -> None:
    full = torch.zeros(4, 5)
    row = torch.zeros(1, 5)
    assert stored_elements(full) == [20]
    assert stored_elements(full.t()) == [20]  # strided, every element its own
    assert stored_elements(full[:, ::2]) == [20]  # a strided slice: 12 elements spread over 20 values
    assert stored_elements(row.expand(4, 5)) == [5]
    assert stored_elements(torch.as_strided(torch.zeros(8), (4, 5), (1, 1))) == [8]  # sliding windows
    assert stored_elements((full, 3.0, torch.zeros(0, 7))) == [20, None, 0]


def _frames(out: torch.Tensor) -> dict:
    return {"outputs": [out.clone()], "spans": stored_elements(out)}


def test_an_expanded_output_fails_where_the_reference_holds_every_element() -> None:
    plan = [{"tag": "default"}, {"tag": "timing"}, {"tag": "timing"}]
    full, row = torch.ones(6, 3), torch.ones(1, 3)
    ref = {0: _frames(full), 1: _frames(full), 2: _frames(full)}
    honest = layout_check(plan, ref, {0: _frames(full.t().contiguous().t())},
                          {"outputs": [[full], [full]], "spans": [[18], [18]]})
    assert honest.outcome == PASS, honest
    checked = layout_check(plan, ref, {0: _frames(row.expand(6, 3))}, None)
    assert checked.outcome == FAIL and "trial 0" in checked.detail and "keeps 3 values" in checked.detail
    timed = layout_check(plan, ref, {0: _frames(full)}, {"outputs": [[full], [full]], "spans": [[18], [3]]})
    assert timed.outcome == FAIL and "timed call 1" in timed.detail and "trial 0" not in timed.detail
    # the reference's own output is an expanded view: the same layout is no cheat
    ref_expanded = {0: _frames(row.expand(6, 3))}
    assert layout_check(plan[:1], ref_expanded, {0: _frames(row.expand(6, 3))}, None).outcome == PASS
