"""The ``pipeline`` family: a chain of stages (agents/offline/match/pipeline.py), each
rendered by its own family's template for the same backend, composed into one
candidate (compose.py). Parameter set ``rank`` r takes every stage's r-th parameter
set (or its last one, when it has fewer): the stages are tuned together. The tuning
pass's wider space (``space_for``) also varies them apart: ``ranks`` gives each stage
its own (a conv stage's algorithm with its epilogue's best guess, ...)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from .common import NotRenderable, model_class
from .compose import compose, dying


def reshape_stage(ctx: Any, view: str, bound: Mapping[tuple[int, ...], str] | None = None) -> str:
    """A stage that only regroups the dims of a contiguous tensor; ``bound``: the constructor
    values its sizes read (a head count), which ModelNew keeps."""
    fresh = ctx.fresh()
    fresh.bound.update(bound or {})
    return ('"""A reshape (a view of the contiguous output before it)."""\n\nimport torch\nimport torch.nn as nn\n\n\n'
            + model_class(fresh, [f"return {view}"], "A view."))


class Pipeline:
    """The pipeline template of one backend, over that backend's family templates."""

    PARAM_SPACE: list[dict[str, Any]] = [{"rank": 0}, {"rank": 1}, {"rank": 2}, {"rank": 3}]
    WIDE_MAX = 64  # parameter sets of the wider space at most (a tuning pass times the first --tune-variants)

    def __init__(self, families: Mapping[str, Any], backend: str) -> None:
        self.families = families
        self.backend = backend

    def space_for(self, match: Any, wide: bool = False) -> list[dict[str, Any]]:
        """``PARAM_SPACE``; ``wide``: then per-stage ranks (``ranks``), the stages varied one
        at a time off rank 0, then two at a time, ... (nearest to the first guess first)."""
        space = [dict(p) for p in self.PARAM_SPACE]
        if not wide:
            return space
        sizes = [len(self.families[s.match.family].PARAM_SPACE) if s.match is not None and
                 s.match.family in self.families else 1 for s in match.spec["stages"]]
        uniform = {tuple(min(r, n - 1) for n in sizes) for r in range(len(self.PARAM_SPACE))}
        for changed in range(1, len(sizes) + 1):  # how many stages leave rank 0
            for which in itertools.combinations(range(len(sizes)), changed):
                for values in itertools.product(*(range(1, sizes[i]) for i in which)):
                    ranks = [0] * len(sizes)
                    for i, v in zip(which, values, strict=True):
                        ranks[i] = v
                    if tuple(ranks) not in uniform:
                        space.append({"ranks": ranks})
                    if len(space) >= self.WIDE_MAX:
                        return space
        return space

    def render(self, match: Any, params: dict[str, Any]) -> str:
        stages = match.spec["stages"]
        ranks = params.get("ranks") or [int(params["rank"])] * len(stages)
        chosen = [self._params(i, stage, ranks) for i, stage in enumerate(stages)]
        sources = [self._render(match, stage, p) for stage, p in zip(stages, chosen, strict=True)]
        for i, names in enumerate(self._donations(stages, sources)):
            if names:
                sources[i] = self._render(match, stages[i], {**chosen[i], "donated": sorted(names)})
        which = (f"rank={params['rank']} (each stage's parameter set of that rank)" if "ranks" not in params else
                 f"ranks={list(params['ranks'])} (stage by stage)")
        doc = (f"{len(stages)} stages, one kernel each (offline engine, no LLM, backend {self.backend}): "
               + " | ".join(s.kind for s in stages) + f".\n\nParameters: {which}.\n")
        return compose(sources, [s.name for s in stages], match.ctx.signature.forward_names(), doc)

    def _params(self, i: int, stage: Any, ranks: list[int]) -> dict[str, Any]:
        if stage.match is None:
            return {}
        family = self.families.get(stage.match.family)
        if family is None:
            raise NotRenderable(f"stage {i + 1} ({stage.match.kind}): no {stage.match.family} template "
                                f"for backend {self.backend}")
        space = family.PARAM_SPACE
        return dict(space[min(int(ranks[i]), len(space) - 1)])

    def _render(self, match: Any, stage: Any, params: dict[str, Any]) -> str:
        if stage.match is None:  # a reshape of a contiguous tensor: no kernel
            return reshape_stage(match.ctx, stage.view, stage.bound)
        return self.families[stage.match.family].render(stage.match, params)

    def _donations(self, stages: list[Any], sources: list[str]) -> list[set[str]]:
        """Per stage, the earlier outputs it may write its own output over: it is their last
        reader, a kernel of a family that allocates its output made them (``FRESH_OUTPUT``:
        no view of anything else), no reshape views them (a view would outlive them), and the
        stage's family can write over its input (``DONATES``). A whole model's activation then
        reuses the pages its batch norm read, as inductor's buffer reuse does; a fresh tensor's
        first touch costs a page fault per 4 KB."""
        fresh = {s.name for s in stages if s.match is not None
                 and getattr(self.families.get(s.match.family), "FRESH_OUTPUT", False)}
        viewed = {n for s in stages if s.match is None for n in fresh if re.search(rf"\b{re.escape(n)}\b", s.view)}
        out = []
        for stage, dead in zip(stages, dying(sources, [s.name for s in stages]), strict=True):
            family = self.families.get(stage.match.family) if stage.match is not None else None
            out.append(dead & fresh - viewed if getattr(family, "DONATES", False) else set())
        return out
