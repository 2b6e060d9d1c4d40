"""Trusted builds of a candidate's native sources.

The judge found the sources in the candidate's syntax tree
(``native_sources``) and checked them (``policy_native``). Each is built at
most once per machine: a build job in the sandbox (the runner's child runs
only ``harness.run_build``: the compiler is the only thing that reads the
untrusted text) sends back the library's bytes, and the judge stores them in
its cache (``native_cache``), which candidates see read-only. The candidate's
child then gets ``{source_key: path}`` and may load nothing else.

Each build also reports facts about what compiled (``runner/native/facts``):
the source policy judges them (``native_inspect``) on every evaluation, from
the cache too, and a source they reject is never handed to the candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..drivers.base import JobOutcome
from ..native_sources import NativeSource
from ..policy import symbols as native_inspect
from ..runner.native import library as native
from . import cache as native_cache


@dataclass
class Built:
    prebuilt: dict[str, str] = field(default_factory=dict)  # source key -> library path
    errors: list[str] = field(default_factory=list)  # the compiler's messages, for the compile check
    findings: list[str] = field(default_factory=list)  # the source policy on what compiled (source_policy)
    built_now: int = 0


def key_of(src: NativeSource, specs: dict[str, str] | None) -> str:
    """The key the sandbox computes too: the sandbox's flags and compiler version (its ready frame's ``native``)."""
    return native.source_key(src.text, src.lang, (specs or {}).get(src.lang))


def _judge(out: Built, key: str, src: NativeSource, path: str, facts: str | None, candidate: str) -> None:
    found = native_inspect.check_facts(src, native_inspect.parse_facts(facts), candidate or src.filename)
    if found:
        out.findings += found
        out.errors.append(f"{src.filename}: not built: the source policy rejected what compiled (see source_policy)")
    else:
        out.prebuilt[key] = path


def build_sources(sources: list[NativeSource], specs: dict[str, str] | None, rejected: set[int],
                  run: Callable[[dict[str, Any]], JobOutcome], device: str, candidate: str = "") -> Built:
    """``rejected``: indices of sources the text policy refused; they are not handed to the compiler.
    ``candidate``: the candidate's file name, for the line numbers of findings."""
    out = Built()
    todo: dict[str, NativeSource] = {}
    for i, src in enumerate(sources):
        if i in rejected:
            out.errors.append(f"{src.filename}: not built: the source policy rejected it (see source_policy)")
            continue
        key = key_of(src, specs)
        path = native_cache.lookup(key)
        if path:
            _judge(out, key, src, path, native_cache.cached_facts(key), candidate)
        else:
            todo[key] = src
    if not todo:
        return out
    job = {"role": "build", "filename": todo[next(iter(todo))].filename, "device": device,
           "sources": [{"key": k, "lang": s.lang, "text": s.text, "name": s.name} for k, s in todo.items()]}
    outcome = run(job)
    done: set[str] = set()
    for frame in outcome.of_kind("built"):
        key = frame.get("key")
        lib = frame.get("lib")
        facts = frame.get("facts")
        if key in todo and key not in done and hasattr(lib, "numpy") and isinstance(facts, str):
            path = native_cache.store(key, lib.numpy().tobytes(), facts)
            _judge(out, key, todo[key], path, facts, candidate)
            out.built_now += 1
            done.add(key)
    for frame in outcome.of_kind("build_error"):
        if frame.get("key") in todo and frame.get("key") not in done:
            out.errors.append(str(frame.get("message", ""))[:4000])
            done.add(frame["key"])
    for key, src in todo.items():
        if key not in done:
            err = outcome.first("error")
            why = err.get("message") if err else _exit_text(outcome.exit)
            out.errors.append(f"{src.filename}: the build did not finish: {why}")
    return out


def _exit_text(ex: dict[str, Any]) -> str:
    if ex.get("reason"):
        return str(ex["reason"])
    if ex.get("signal"):
        return f"killed by signal {ex['signal']}"
    return f"exit code {ex.get('exit_code')}"
