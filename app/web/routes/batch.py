"""Batch runs: a leaderboard of the runs in KFORGE_BATCH_DIR with their fast_p
curves, and a run's page (headline metrics, curves, per level, per problem)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from markupsafe import Markup

from ...batch.reporting.roofline_plot import plot_rooflines
from ...errors import NotFound
from ..batch_runs import BatchDir, list_runs, load_run
from ..chart import fast_p_curves
from ..deps import WebUser
from ..page_route import PageRoute
from ..render import render

router = APIRouter(route_class=PageRoute, include_in_schema=False)
CURVES_SHOWN = 6


@router.get("/batch")
def leaderboard(request: Request, user: WebUser, root: BatchDir) -> Response:
    runs = list_runs(root) if root else []
    series = [(r.name, r.view["fast_p_eager"]) for r in runs[:CURVES_SHOWN]]
    p_values = runs[0].report["metrics"]["p_values"] if runs else []
    return render(request, "batch.html", {"root": root, "runs": runs, "curves": fast_p_curves(series, p_values)},
                  user=user, active="batch")


@router.get("/batch/{name}")
def batch_run(name: str, request: Request, user: WebUser, root: BatchDir) -> Response:
    if root is None:
        raise NotFound("no runs folder is configured: set KFORGE_BATCH_DIR")
    report = load_run(root, name)
    m = report["metrics"]
    views = [("per sample", m["per_sample"])] + ([("best of k", m["best_of_k"])] if "best_of_k" in m else [])
    series = [(f"vs {base}, {title}", v[f"fast_p_{base}"]) for title, v in views for base in ("eager", "compile")]
    roof = plot_rooflines([(p["problem"], p.get("roofline") or {}) for p in report["problems"]],
                          "every verified problem against this machine's roofs")
    return render(request, "batch_run.html", {"name": name, "report": report, "views": views,
                                              "curves": fast_p_curves(series, m["p_values"]),
                                              "roofline": Markup(roof) if roof else None},  # noqa: S704
                  user=user, active="batch")
