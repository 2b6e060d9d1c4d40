"""`kforge optimize PROBLEM.py`: search for a faster, verified kernel.

Live progress goes to stderr (rich); with --json, stdout holds exactly one
JSON object with `best`, `comparison` (the fastest of {best kernel, eager,
torch.compile} in the best kernel's judge run, and what to use) and `rounds`. Exit 0 when a verified kernel was
found, 1 when none was, 2 on an unusable problem or request.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from agents.providers import ProviderError
from agents.search import SearchConfig, Trajectory
from sandbox import EvalOptions, JudgeError

from ..backends import check_backend
from ..compose import build_search, choose_backend, eval_options
from ..kb.job_lessons import learn
from ..settings import PROVIDERS, get_settings

err = Console(stderr=True)


def optimize_command(
    problem: Annotated[Path, typer.Argument(help="Reference problem file (KernelBench format).")],
    provider: Annotated[str | None, typer.Option(help=" | ".join(PROVIDERS) + " (default: KFORGE_PROVIDER)")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for the provider.")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="OpenAI-compatible URL ending in /v1, or the Anthropic API root.")] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", help="LLM rounds after the offline starters.")] = 3,
    candidates_per_round: Annotated[int, typer.Option("--candidates-per-round")] = 2,
    max_repairs: Annotated[int, typer.Option("--max-repairs")] = 2,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Dollar budget.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Token budget.")] = None,
    max_wall: Annotated[float | None, typer.Option("--max-wall", help="Wall-time budget in seconds.")] = None,
    target_speedup: Annotated[float | None, typer.Option("--target-speedup")] = None,
    tune_variants: Annotated[int, typer.Option("--tune-variants", help="Backend cpu: engine variants timed by the "
                                               "tuning pass before the fastest are judged (0: none).")] = 24,
    backend: Annotated[str, typer.Option(help="auto | triton | cuda | cpu (auto: triton with a GPU, cpu without; "
                                              "cpu: C kernels, judged and timed on the CPU)")] = "auto",
    device: Annotated[str | None, typer.Option(help="auto | cpu | cuda")] = None,
    sandbox: Annotated[str | None, typer.Option(help="process | docker")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Folder for trajectory.json, best.py and summary.json.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the trajectory saved in --out.")] = False,
) -> None:
    settings = get_settings()
    try:
        choice = choose_backend(settings, check_backend(backend), device)
        err.print(f"[bold]backend[/] {choice.backend} on {choice.device_name} — {choice.reason}")
        config = SearchConfig(max_rounds=max_rounds, candidates_per_round=candidates_per_round,
                              max_repairs=max_repairs, max_cost_usd=max_cost, max_tokens=max_tokens,
                              max_wall_s=max_wall, target_speedup=target_speedup, backend=choice.backend,
                              tune_variants=tune_variants)
        options = eval_options(settings, choice.backend, device=choice.device, sandbox=sandbox)
        summary = run_optimize(problem, provider or settings.provider, model, base_url, config, options, out, resume,
                               quiet=False, choice=choice.to_dict())
    except (JudgeError, ProviderError, ValueError, OSError) as exc:
        report_error(str(exc), as_json)
        raise typer.Exit(2) from exc
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        render_final(summary)
    raise typer.Exit(0 if summary["best"] else 1)


def report_error(message: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"error": message, "best": None, "comparison": None, "rounds": []}) + "\n")
    err.print(f"[red]error:[/] {message}")


def run_optimize(problem: Path, provider: str, model: str | None, base_url: str | None, config: SearchConfig,
                 options: EvalOptions, out: Path | None, resume: bool, quiet: bool = True,
                 choice: dict[str, Any] | None = None) -> dict[str, Any]:
    """The search, its summary (with ``backend_choice``: what ran and why) and, with ``out``, its files."""
    check_backend(config.backend, allow_auto=False)
    if provider not in PROVIDERS:
        raise ValueError(f"--provider {provider!r}: use {', '.join(PROVIDERS)}")
    try:
        reference = problem.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{problem}: cannot read: {exc}") from exc
    traj_path = out / "trajectory.json" if out else None
    previous = Trajectory.load(traj_path) if resume and traj_path and traj_path.exists() else None
    on_event = (lambda e: None) if quiet else progress_printer()
    with build_search(provider, model, base_url, config, options, on_event, traj_path) as search:
        traj = search.run(reference, problem.name, resume=previous)
        lessons = learn(search.strategies, traj, search.analysis, config.backend, f"local:{problem.name}",
                        search.provider)
    summary = traj.summary()
    summary["learned"] = lessons
    if choice:
        summary["backend_choice"] = choice
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        if summary["best"]:
            (out / "best.py").write_text(summary["best"]["code"])
    return summary


def progress_printer():
    def on_event(event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "analysis":
            a = event["analysis"]
            top = ", ".join(f"{r['op']} {100 * r['share']:.0f}%" for r in a.get("profile", [])[:3])
            err.print(f"[bold]analysed[/] on {a.get('hardware')}: {top}")
            for s in event.get("strategies", []):
                err.print(f"  strategy from {s.get('source', 'knowledge base')}: {s.get('title')}")
        elif kind == "tuning":
            err.print(tuning_line(event["tuning"]))
        elif kind == "round":
            err.print(f"[bold]round {event['index']}[/]: " + "; ".join(p.get("title", "") for p in event["plan"]))
        elif kind == "attempt":
            a = event["attempt"]
            colour = "green" if a.verdict == "pass" else "red"
            speed = f" {a.speedup:.2f}x" if a.speedup is not None else ""
            why = f" — {a.reasons[0][:120]}" if a.reasons else ""
            err.print(f"  {a.id} [{colour}]{a.verdict}[/]{speed}{why}")
        elif kind == "stop":
            err.print(f"[bold]stopped[/]: {event['reason']}")
    return on_event


def tuning_line(tuning: dict[str, Any]) -> str:
    """One line on the tuning pass: how many variants, how many timed, the fastest (an advisory
    ranking: the judge's verdicts and speedups come after it)."""
    counts, order = tuning.get("counts") or {}, tuning.get("order") or []
    line = (f"[bold]tuned[/] {len(tuning.get('variants') or [])} variants in {tuning.get('elapsed_s', 0):.1f} s: "
            f"{counts.get('timed', 0)} timed, {counts.get('wrong', 0)} wrong, "
            f"{sum(v for k, v in counts.items() if k not in ('timed', 'wrong'))} not run")
    proposals = tuning.get("proposals") or []
    variants = {v["index"]: v for v in tuning.get("variants") or []}
    if order and variants.get(order[0], {}).get("median_ms") is not None and order[0] < len(proposals):
        first = proposals[order[0]]
        line += f"; fastest {first['family']} {first['params']} {variants[order[0]]['median_ms']:.4f} ms"
        if tuning.get("eager_ms"):
            line += f" (eager {tuning['eager_ms']:.4f} ms in the same pass)"
    return line


def final_lines(summary: dict[str, Any]) -> list[str]:
    """The result as a comparison first: which of {kernel, eager, torch.compile} was fastest and
    what to use; the best kernel is named after it, and never as a win when it lost to eager."""
    cmp_, best = summary["comparison"], summary["best"]
    lines = [f"result: {cmp_['recommendation']}", f"  {cmp_['summary']}"]
    if best:
        lost = cmp_["speedup_vs_eager"] is not None and cmp_["speedup_vs_eager"] <= 1.0
        what = "fastest verified kernel (slower than eager)" if lost else "best verified kernel"
        lines.append(f"{what}: {best['id']} ({best['source']}) — {summary['label']}")
    else:
        lines.append(f"no verified kernel found — {summary['label']}")
    if cmp_["label"]:
        lines.append(f"timed on: {cmp_['label']}")
    return lines


def render_final(summary: dict[str, Any]) -> None:
    table = Table("candidate", "source", "strategy", "verdict", "speedup", "tokens", "cost $")
    for r in summary["rounds"]:
        for c in r["candidates"]:
            table.add_row(c["id"], c["source"], c["strategy"][:40], c["verdict"],
                          f"{c['speedup']:.2f}x" if c["speedup"] is not None else "-",
                          str(c["input_tokens"] + c["output_tokens"]), f"{c['cost_usd']:.4f}")
    Console().print(table)
    for line in final_lines(summary):
        Console().print(line, highlight=False)
    if summary.get("backend_choice"):
        Console().print(f"backend: {summary['backend_choice']['reason']}")
