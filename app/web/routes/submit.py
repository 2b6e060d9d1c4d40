"""Submit a job: paste a reference or pick a bundled problem. The job is made
by the same function as `POST /v1/jobs` (app/jobs/create.py) and enqueued after commit."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import ValidationError

from ...backends import CHOICES
from ...errors import BadRequest
from ...jobs import create as svc
from ...jobs.create import JOBS_SUBMITTED
from ...jobs.sending.broker import enqueue_after_commit
from ...schemas import JobCreate
from ...settings import PROVIDERS
from ..deps import FormData, WebSession, WebUser
from ..page_route import PageRoute
from ..render import render
from ..security import check_csrf

router = APIRouter(route_class=PageRoute, include_in_schema=False)
FIELDS = ("problem", "reference", "name", "backend", "gpu_kind", "device", "provider", "model", "base_url",
          "max_rounds", "candidates_per_round", "max_repairs", "max_cost_usd", "max_tokens", "max_wall_s",
          "target_speedup")
DEFAULTS = {"backend": "auto", "device": "auto", "provider": "offline", "max_rounds": "3",
            "candidates_per_round": "2", "max_repairs": "2"}


@lru_cache
def bundled_problems() -> list[dict[str, Any]]:
    """The bundled suite, parsed once per process (the judge reads syntax only)."""
    from sandbox import list_problems

    out = []
    for p in list_problems(svc.PROBLEMS_DIR):
        if "error" in p:
            continue
        rel = str(svc.PROBLEMS_DIR.joinpath(p["path"]).resolve().relative_to(svc.PROBLEMS_DIR)).removesuffix(".py")
        number = p["name"].split("_", 1)[0]
        out.append({"value": rel, "level": p["level"], "shapes": p["input_shapes"],
                    "order": (p["level"] or 0, int(number) if number.isdigit() else 0, rel)})
    return sorted(out, key=lambda p: p["order"])


def spec_from(form: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for name in FIELDS:
        value = form.get(name, "").replace("\r\n", "\n")
        if value.strip():
            spec[name] = value if name == "reference" else value.strip()
    return spec


def submit_page(request: Request, user: Any, form: dict[str, str], errors: list[str], status_code: int = 200) -> Response:
    page = {"form": {**DEFAULTS, **form}, "errors": errors, "problems": bundled_problems(), "backends": CHOICES,
            "providers": PROVIDERS}
    return render(request, "submit.html", page, user=user, status_code=status_code, active="submit")


@router.get("/submit")
def submit_form(request: Request, user: WebUser, problem: str = "") -> Response:
    return submit_page(request, user, {"problem": problem} if problem else {}, [])


@router.post("/submit")
def submit(request: Request, session: WebSession, user: WebUser, form: FormData) -> Response:
    check_csrf(request, form)
    try:
        spec = JobCreate.model_validate(spec_from(form))
        job = svc.create_job(session, user, spec)
    except ValidationError as exc:
        errors = [f"{'.'.join(str(p) for p in e['loc']) or 'form'}: {e['msg']}".removeprefix("form: Value error, ")
                  for e in exc.errors()]
        return submit_page(request, user, form, errors, status_code=422)
    except BadRequest as exc:
        return submit_page(request, user, form, [str(exc)], status_code=422)
    enqueue_after_commit(session, job)
    JOBS_SUBMITTED.labels(kind="optimize", queue=job.queue).inc()
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)
