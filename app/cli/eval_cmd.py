"""`kforge eval`: one judgement, as JSON for tools or a table for people.

Exit codes: 0 pass, 1 fail, 2 error (unusable reference or request). Whatever
happens, with --json stdout holds exactly one JSON object.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from sandbox.errors import JudgeError, error_json

from ..judged import ask, default_socket, judged, options_for, read_files, serve

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
    judge_socket: Annotated[Path | None, typer.Option(
        "--judge", help="Socket of a running `kforge judged` to ask (default: its default socket, when one "
                        "listens there).")] = None,
    no_daemon: Annotated[bool, typer.Option("--no-daemon", help="Judge in this process even when a "
                                            "`kforge judged` runs.")] = False,
) -> None:
    request = {"backend": backend, "device": device, "sandbox": sandbox, "timeout": timeout, "memory_mb": memory_mb,
               "trials": trials}
    if backend == "cpu":
        from .ceilings_cmd import ensure_ceilings

        ensure_ceilings(lambda line: typer.echo(line, err=True))
    result = None if no_daemon else ask_daemon(reference, candidate, request, judge_socket)
    if result is None:
        from sandbox import evaluate_files  # the judge here: torch and the sandbox drivers

        result = judged(lambda options: evaluate_files(str(reference), str(candidate), options).to_json(), request)
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        render(result)
    raise typer.Exit(EXIT[result["verdict"]])


def judged_command(
    socket: Annotated[Path | None, typer.Option("--socket", help="Where to listen (default: "
                                                "KFORGE_DATA_DIR/judged/judge.sock, where `kforge eval` looks).")] = None,
) -> None:
    """Answers `kforge eval` from one warm judge until stopped (Ctrl-C or SIGTERM)."""
    from sandbox import Judge

    path = socket or default_socket()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    with Judge(warm=True) as judge:
        daemon_log = logging.getLogger("kforge.judged")
        try:  # the runner of the default options, started and torch.compile warmed before the first request
            daemon_log.info("runner warm: %s", judge.warm_runner(options_for({})))
        except Exception as exc:  # its first request starts it instead
            daemon_log.warning("runner not warmed: %s", exc)
        try:
            serve(path, judge, ready=lambda: print(f"judge daemon listening at {path}", flush=True))
        except OSError as exc:
            typer.echo(f"kforge judged: {exc}", err=True)
            raise typer.Exit(2) from exc


def ask_daemon(reference: Path, candidate: Path, request: dict[str, Any], socket: Path | None) -> dict[str, Any] | None:
    """The answer of a `kforge judged` (the one at ``socket``, else at the default socket when
    one listens there), or None to judge here."""
    path = socket or default_socket()
    if socket is None and not path.exists():
        return None
    try:
        texts = read_files(reference, candidate)
    except JudgeError as exc:
        return error_json(str(exc))
    answer = ask(path, {**request, "reference": texts[0], "candidate": texts[1],
                        "reference_name": reference.name, "candidate_name": candidate.name},
                 wait_s=4 * float(request["timeout"]) + 120)
    if answer is None and socket is not None:
        return error_json(f"no judge daemon listens at {path}: start one with `kforge judged --socket {path}`, "
                          "or leave --judge out to judge here")
    return answer


def render(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

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
    from sandbox.verdict import roofline

    if roofline.describe(result.get("roofline") or {}):
        console.print(f"roofline: {roofline.describe(result['roofline'])}")
    work = result.get("work") or {}
    if work:
        console.print(f"work: kernels {work['kernel_share_flops']:.0%} of the reference's FLOPs "
                      f"({work['kernel_share_bytes']:.0%} of its bytes), torch {work['torch_share_flops']:.0%} "
                      f"({work['torch_share_bytes']:.0%}); at most {work['torch_share_max']:.0%} may be torch")
