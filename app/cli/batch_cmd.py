"""`kforge batch run SUITE`, `kforge batch report DIR`, `kforge batch compare RUN_A RUN_B`.

`run` searches every (problem, sample) of a suite across worker processes (or
through a running service with --api), resumably, with live progress on
stderr, and writes report.{json,csv,md,html} into --out. Exit 0 when every
task finished, 1 when some failed (a rerun retries them), 2 on a bad request.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from agents.search import SearchConfig
from sandbox import JudgeError

from ..backends import BackendError, check_backend
from ..batch.compare import compare
from ..batch.reporting.text import fmt, headline_rows
from ..batch.run import BatchError, BatchRequest, rewrite_reports, run_batch
from ..batch.suite import suite_root
from ..batch.task import KB_MODES
from ..compose import choose_backend, eval_options
from ..settings import PROVIDERS, get_settings

batch_app = typer.Typer(no_args_is_help=True)
err = Console(stderr=True)


@batch_app.command("run")
def run_command(
    suite: Annotated[Path, typer.Argument(help="Suite folder: problems/, or a KernelBench checkout (or its KernelBench/).")],
    provider: Annotated[str | None, typer.Option(help=" | ".join(PROVIDERS) + " (default: KFORGE_PROVIDER)")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for the provider.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible URL or Anthropic root.")] = None,
    level: Annotated[int | None, typer.Option(help="Only this level.")] = None,
    problems: Annotated[str | None, typer.Option("--problems", help="Glob on the id (level1/19_*) or the name.")] = None,
    samples: Annotated[int, typer.Option(help="Independent searches per problem.")] = 1,
    workers: Annotated[int, typer.Option(help="Worker processes, each with its own warm judge.")] = 1,
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (rerun with the same one to resume).")] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", help="LLM rounds after the offline starters.")] = 3,
    candidates_per_round: Annotated[int, typer.Option("--candidates-per-round")] = 2,
    max_repairs: Annotated[int, typer.Option("--max-repairs")] = 2,
    offline_starters: Annotated[int, typer.Option("--offline-starters", help="Offline starter kernels judged first.")] = 4,
    tune_variants: Annotated[int, typer.Option("--tune-variants", help="Backend cpu: engine variants timed by the "
                                               "tuning pass before the fastest are judged (0: none).")] = 24,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Dollar budget per search.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Token budget per search.")] = None,
    max_wall: Annotated[float | None, typer.Option("--max-wall", help="Wall-time budget per search, seconds.")] = None,
    target_speedup: Annotated[float | None, typer.Option("--target-speedup")] = None,
    backend: Annotated[str, typer.Option(help="auto | triton | cuda | cpu (auto: triton with a GPU, cpu without; with "
                                              "--api, a GPU means --gpu-kind; cpu: C kernels timed on the CPU)")] = "auto",
    device: Annotated[str | None, typer.Option(help="auto | cpu | cuda")] = None,
    sandbox: Annotated[str | None, typer.Option(help="process | docker")] = None,
    held_out: Annotated[bool, typer.Option("--held-out/--no-held-out", help="Judge passing kernels at unseen sizes.")] = True,
    api: Annotated[str | None, typer.Option("--api", help="Run through a KForge API at this URL instead of locally.")] = None,
    token: Annotated[str | None, typer.Option("--token", envvar="KFORGE_TOKEN", help="API token for --api.")] = None,
    gpu_kind: Annotated[str | None, typer.Option("--gpu-kind", help="With --api: run on queue gpu-<kind>.")] = None,
    fit_memory: Annotated[float | None, typer.Option(
        "--fit-memory", metavar="GB", help="Shrink each problem's sizes (proportionally) until one call's inputs and "
        "outputs fit in GB; reports mark such problems as scaled.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report's metrics as one JSON object.")] = False,
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base: off | use (retrieve strategies) | learn (also "
                                                  "archive winners and store lessons). Local runs only.")] = "off",
) -> None:
    """Search every problem of a suite (x --samples), in parallel and resumable; write the reports."""
    settings = get_settings()
    provider = provider or settings.provider
    try:
        # Through --api the jobs run on the service's queue: gpu-<kind> workers have that GPU, queue cpu has none.
        remote_gpu = (lambda: f"queue gpu-{gpu_kind}" if gpu_kind else None) if api else None
        choice = choose_backend(settings, check_backend(backend), device, probe=remote_gpu)
        err.print(f"backend {choice.backend} — {choice.reason}")
        backend, device = choice.backend, choice.device
        options = eval_options(settings, backend, device=device, sandbox=sandbox)
    except BackendError as exc:
        fail(str(exc), as_json)
    config = SearchConfig(max_rounds=max_rounds, candidates_per_round=candidates_per_round, max_repairs=max_repairs,
                          max_cost_usd=max_cost, max_tokens=max_tokens, max_wall_s=max_wall,
                          target_speedup=target_speedup, backend=backend, offline_starters=offline_starters,
                          tune_variants=tune_variants)
    if fit_memory is not None and fit_memory <= 0:
        fail("--fit-memory takes a positive number of GB (e.g. --fit-memory 1)", as_json)
    out = out or Path("batch-runs") / re.sub(r"[^A-Za-z0-9._-]+", "-", f"{suite_root(suite).resolve().name}-{provider}"
                                                                          f"{'-' + model if model else ''}")
    req = BatchRequest(suite=suite, out=out, provider=provider, model=model, base_url=base_url, level=level,
                       pattern=problems, samples=samples, workers=workers, config=config, options=options,
                       held_out=held_out, api=api, token=token,
                       gpu_kind=gpu_kind, fit_memory_gb=fit_memory, kb=kb)
    try:
        validate(req)
        if device in ("cpu", "auto") and not api:  # auto: cpu where no GPU is seen; measuring costs ~2 s
            from .ceilings_cmd import ensure_ceilings

            ensure_ceilings(err.print)
        with LiveProgress() as progress:
            report = run_batch(req, progress.on_event)
    except (BatchError, JudgeError, ValueError, OSError) as exc:
        fail(str(exc), as_json)
    except KeyboardInterrupt:
        err.print(f"interrupted: finished tasks are kept in {out}; run the same command again to resume")
        raise typer.Exit(130) from None
    print_report(report, out, choice.to_dict(), as_json)
    raise typer.Exit(1 if report["metrics"]["per_sample"]["errors"] else 0)


def print_report(report: dict, out: Path, backend_choice: dict, as_json: bool) -> None:
    """The metrics as one JSON object (``--json``) or as tables, and where the reports are."""
    if as_json:
        problems = [{k: p.get(k) for k in ("problem", "correct", "fastest", "recommendation", "speedup_eager",
                                           "speedup_compile")} for p in report["problems"]]
        sys.stdout.write(json.dumps({"out": str(out), "metrics": report["metrics"], "problems": problems,
                                     "backend_choice": backend_choice}) + "\n")
    else:
        render_metrics(report)
        Console().print(f"reports: {out}/report.{{json,csv,md,html}}")


def fail(message: str, as_json: bool) -> NoReturn:
    if as_json:
        sys.stdout.write(json.dumps({"error": message}) + "\n")
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


def validate(req: BatchRequest) -> None:
    if req.provider not in PROVIDERS:
        raise BatchError(f"--provider {req.provider!r}: use {', '.join(PROVIDERS)}")
    if req.kb not in KB_MODES:
        raise BatchError(f"--kb {req.kb!r}: use {', '.join(KB_MODES)}")
    if req.kb != "off" and req.api:
        raise BatchError("--kb is for local runs: service jobs use the service's knowledge base")
    if req.gpu_kind and not req.api:
        raise BatchError("--gpu-kind routes service jobs: use it with --api (locally, --device picks the device)")
    if not Path(req.suite).is_dir():
        raise BatchError(f"{req.suite}: not a directory")


class LiveProgress:
    """A progress bar on stderr (done / total, passes so far) and a line per finished task."""

    def __init__(self) -> None:
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("[green]{task.fields[passed]} pass"), TimeElapsedColumn(), console=err)
        self.task: Any = None

    def __enter__(self) -> LiveProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "start":
            if event["done"]:
                self.progress.console.print(f"resuming: {event['done']} of {event['total']} task(s) already done")
            self.task = self.progress.add_task("batch", total=event["total"], completed=event["done"],
                                               passed=event["passed"])
        elif kind == "finished" and self.task is not None:
            r = event["record"]
            passed = self.progress.tasks[0].fields["passed"] + (1 if r.get("correct") else 0)
            self.progress.update(self.task, advance=1, passed=passed, description=r["problem"])
            self.progress.console.print(task_line(r))


def task_line(r: dict[str, Any]) -> str:
    where = f"{r['problem']} s{r['sample']}"
    if r.get("status") == "error":
        return f"[red]error[/] {where}: {str(r.get('error'))[:160]}"
    verdict = "[green]pass[/]" if r.get("correct") else "[red]fail[/]"
    speed = f" {r['speedup_eager']:.2f}x" if r.get("speedup_eager") else ""
    fastest = (r.get("comparison") or {}).get("fastest")
    speed += f", fastest: {fastest}" if fastest and fastest != "unknown" else ""
    held = f", held-out {(r.get('held_out') or {}).get('status')}" if r.get("held_out") else ""
    return f"{verdict} {where}{speed}{held} ({r.get('wall_s', 0):.1f} s)"


def render_metrics(report: dict[str, Any]) -> None:
    m = report["metrics"]
    table = Table("metric", "value", title=f"{m['problems']} problems x {m['samples']} sample(s)")
    for k, v in headline_rows(m.get("best_of_k") or m["per_sample"]):
        table.add_row(k, v)
    Console().print(table)
    for note in m["per_sample"]["notes"]:
        Console().print(f"[yellow]note:[/] {note}")


@batch_app.command("report")
def report_command(run: Annotated[Path, typer.Argument(help="A run folder (its --out).")]) -> None:
    """Write the reports again from a run folder, e.g. after an interrupted run."""
    try:
        report = rewrite_reports(run)
    except BatchError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    render_metrics(report)


@batch_app.command("compare")
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Run folder (or report.json) A.")],
    run_b: Annotated[Path, typer.Argument(help="Run folder (or report.json) B.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Per-problem changes from A to B: verdicts, speedups, held-out."""
    try:
        diff = compare(run_a, run_b)
    except BatchError as exc:
        if as_json:
            sys.stdout.write(json.dumps({"error": str(exc)}) + "\n")
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        sys.stdout.write(json.dumps(diff) + "\n")
        return
    table = Table("problem", "change", "correct A -> B", "speedup A", "speedup B", "B/A", "held-out A -> B")
    for r in diff["rows"]:
        table.add_row(r["problem"], r["change"], f"{r['correct_a']} -> {r['correct_b']}", fmt(r["speedup_eager_a"], "x"),
                      fmt(r["speedup_eager_b"], "x"), fmt(r["speedup_eager_ratio"], "x"),
                      f"{r['held_out_a'] or 'n/a'} -> {r['held_out_b'] or 'n/a'}")
    Console().print(table)
    Console().print(", ".join(f"{k}: {v}" for k, v in sorted(diff["changes"].items())))
    for k, v in diff["metrics"].items():
        kind = "x" if k.startswith("geomean") else "%"
        Console().print(f"{k}: {fmt(v['a'], kind)} -> {fmt(v['b'], kind)}")
