"""The ``pipeline`` family: a chain of stages (agents/offline/match_pipeline.py), each
rendered by its own family's template for the same backend, composed into one
candidate (compose.py). Parameter set ``rank`` r takes every stage's r-th parameter
set (or its last one, when it has fewer): the stages are tuned together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import NotRenderable, model_class
from .compose import compose


def reshape_stage(ctx: Any, view: str) -> str:
    """A stage that only regroups the dims of a contiguous tensor."""
    return ('"""A reshape (a view of the contiguous output before it)."""\n\nimport torch\nimport torch.nn as nn\n\n\n'
            + model_class(ctx.fresh(), [f"return {view}"], "A view."))


class Pipeline:
    """The pipeline template of one backend, over that backend's family templates."""

    PARAM_SPACE: list[dict[str, Any]] = [{"rank": 0}, {"rank": 1}, {"rank": 2}, {"rank": 3}]

    def __init__(self, families: Mapping[str, Any], backend: str) -> None:
        self.families = families
        self.backend = backend

    def render(self, match: Any, params: dict[str, Any]) -> str:
        stages = match.spec["stages"]
        sources: list[str] = []
        for i, stage in enumerate(stages):
            if stage.match is None:  # a reshape of a contiguous tensor: no kernel
                sources.append(reshape_stage(match.ctx, stage.view))
                continue
            family = self.families.get(stage.match.family)
            if family is None:
                raise NotRenderable(f"stage {i + 1} ({stage.match.kind}): no {stage.match.family} template "
                                         f"for backend {self.backend}")
            space = family.PARAM_SPACE
            sources.append(family.render(stage.match, dict(space[min(int(params["rank"]), len(space) - 1)])))
        doc = (f"{len(stages)} stages, one kernel each (offline engine, no LLM, backend {self.backend}): "
               + " | ".join(s.kind for s in stages) + f".\n\nParameters: rank={params['rank']} "
               "(each stage's parameter set of that rank).\n")
        return compose(sources, [s.name for s in stages], match.ctx.signature.forward_names(), doc)
