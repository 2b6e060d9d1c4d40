"""`kforge ceilings`: this machine's memory bandwidth and peak compute with the judge's
threads (``sandbox/ceilings.py``), measured once and kept; ``--refresh`` measures again."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from app.hardware import cpu_threads


def ceilings_command(
    threads: Annotated[int | None, typer.Option(help="Threads to measure with (default: the judge's, every core "
                                                "this process may run on, or KFORGE_CPU_THREADS).")] = None,
    refresh: Annotated[bool, typer.Option("--refresh", help="Measure again, replacing the kept numbers.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON entry on stdout.")] = False,
) -> None:
    from sandbox.ceilings import ceilings

    n = threads or judge_threads()
    if n < 1:
        Console(stderr=True).print(f"[red]--threads must be 1 or more, not {n}[/]")
        raise typer.Exit(2)
    if refresh or not as_json:
        Console(stderr=True).print(f"measuring or reading the ceilings with {n} thread(s) ...")
    entry = ceilings(n, refresh=refresh)
    if as_json:
        sys.stdout.write(json.dumps(entry) + "\n")
        return
    m = entry["machine"]
    table = Table("ceiling", "best", "median", "spread", title=f"{m['cpu_model']}, {m['threads']} thread(s), torch "
                  f"{m['torch']} ({'kept from ' if entry['cached'] else 'measured '}{entry['measured_at']}, "
                  f"{entry['seconds']} s)")
    for name, r in entry["bandwidth_gbs"].items():
        table.add_row(f"memory {name} (GB/s)", f"{r['best']:.1f}", f"{r['median']:.1f}", f"{r['spread']:.0%}")
    g = entry["gemm_fp32_gflops"]
    table.add_row("fp32 GEMM (GFLOP/s)", f"{g['best']:.1f}", f"{g['median']:.1f}", f"{g['spread']:.0%}")
    Console().print(table)


def judge_threads() -> int:
    """The threads the judge times with (KFORGE_CPU_THREADS, else every core granted)."""
    from app.settings import get_settings

    return cpu_threads(get_settings().cpu_threads)


def ensure_ceilings(say: Callable[[str], None]) -> None:
    """Before judging native CPU kernels: this machine's ceilings measured once (quiet, before
    any judgement runs), so every judgement can give its roofline fractions. A failure is
    said, never fatal: the fractions are then absent."""
    from sandbox.ceilings import ceilings, kept

    n = judge_threads()
    if kept(n) is not None:
        return
    say(f"measuring this machine's ceilings with {n} thread(s) once (memory bandwidth, fp32 GEMM; a few seconds) ...")
    try:
        ceilings(n)
    except (OSError, RuntimeError, MemoryError) as exc:
        say(f"ceilings not measured ({type(exc).__name__}: {exc}): no roofline fractions")
