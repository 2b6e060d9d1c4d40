"""`kforge eval`: one judgement, as JSON for tools or a table for people.

Exit codes: 0 pass, 1 fail, 2 error (unusable reference or request). Whatever
happens, with --json stdout holds exactly one JSON object.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sandbox import EvalOptions, JudgeError, error_json, evaluate_files

from ..backends import BackendError
from ..compose import eval_options
from ..settings import get_settings

EXIT = {"pass": 0, "fail": 1, "error": 2}
log = logging.getLogger("kforge.eval")


def eval_command(
    reference: Annotated[Path, typer.Option("--reference", "-r", help="Reference problem file (defines Model).")],
    candidate: Annotated[Path, typer.Option("--candidate", "-c", help="Candidate file (defines ModelNew).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds each sandboxed run may take.")] = 120.0,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="Memory limit of the candidate, in MB.")] = 4096,
    device: Annotated[str, typer.Option(help="auto | cpu | cuda")] = "auto",
    backend: Annotated[str, typer.Option(help="triton | cuda | cpu (cpu: the judge runs on the CPU and times "
                                         "native kernels)")] = "triton",
    sandbox: Annotated[str, typer.Option(help="process | docker")] = "process",
    trials: Annotated[int, typer.Option(help="Correctness trials at the default sizes (at least 5).")] = 5,
) -> None:
    try:
        options = eval_options(get_settings(), backend, device=device, sandbox=sandbox, timeout=timeout,
                               memory_mb=memory_mb, trials=trials)
    except BackendError as exc:
        result = error_json(str(exc))
    else:
        result = run_eval(str(reference), str(candidate), options)
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        render(result)
    raise typer.Exit(EXIT[result["verdict"]])


def run_eval(reference: str, candidate: str, options: EvalOptions) -> dict[str, Any]:
    problems = validate(options)
    if problems:
        return error_json("; ".join(problems))
    try:
        return evaluate_files(reference, candidate, options).to_json()
    except JudgeError as exc:
        return error_json(str(exc))
    except Exception as exc:  # kforge never crashes on a user's files
        log.debug("internal error", exc_info=True)
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return error_json(f"internal error in the judge ({type(exc).__name__}: {exc} at "
                          f"{Path(tb.filename).name}:{tb.lineno}); please report it")


def validate(options: EvalOptions) -> list[str]:
    problems = []
    if options.timeout <= 0:
        problems.append("--timeout must be positive")
    if options.memory_mb < 256:
        problems.append("--memory-mb must be at least 256")
    if options.trials < 5:
        problems.append("--trials must be at least 5")
    if options.device not in ("auto", "cpu", "cuda"):
        problems.append(f"--device {options.device!r}: use auto, cpu or cuda")
    if options.sandbox not in ("process", "docker"):
        problems.append(f"--sandbox {options.sandbox!r}: use process or docker")
    return problems


def render(result: dict[str, Any]) -> None:
    console = Console()
    colour = {"pass": "green", "fail": "red", "error": "yellow"}[result["verdict"]]
    console.print(f"[bold {colour}]{result['verdict'].upper()}[/]")
    table = Table("check", "outcome", "detail")
    for name, outcome in result.get("checks", {}).items():
        style = {"pass": "green", "fail": "red"}.get(outcome, "dim")
        table.add_row(name, f"[{style}]{outcome}[/]", result.get("check_details", {}).get(name, ""))
    if result.get("checks"):
        console.print(table)
    for reason in result["reasons"]:
        console.print(f"- {reason}")
    timing = result.get("timing") or {}
    if timing.get("candidate"):
        console.print(f"candidate median {timing['candidate']['median_ms']:.4f} ms ({timing.get('label', '')})")
    if result.get("speedup") is not None:
        console.print(f"speedup vs eager: {result['speedup']:.2f}x")
    work = result.get("work") or {}
    if work:
        console.print(f"work: kernels {work['kernel_share_flops']:.0%} of the reference's FLOPs "
                      f"({work['kernel_share_bytes']:.0%} of its bytes), torch {work['torch_share_flops']:.0%} "
                      f"({work['torch_share_bytes']:.0%}); at most {work['torch_share_max']:.0%} may be torch")
