"""Structured filters: which strategies apply to an op family, backend, GPU
architecture and dtype. An empty field on either side means "any"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import ANY, Strategy


@dataclass(frozen=True)
class Filters:
    op_families: tuple[str, ...] = ()   # keep strategies tagged with any of these (or "any")
    backend: str | None = None          # "triton" | "cuda" | "cpu"
    arch: str | None = None             # "sm_90", "cpu", "cpu-avx2", "cpu-avx512"
    dtype: str | None = None            # "float16"
    sources: tuple[str, ...] = ()       # "seed", "learned:llm", "learned:offline"

    @classmethod
    def of(cls, op_families: list[str] | tuple[str, ...] | str | None = None, backend: str | None = None,
           arch: str | None = None, dtype: str | None = None,
           sources: list[str] | tuple[str, ...] | None = None) -> Filters:
        fams = (op_families,) if isinstance(op_families, str) else tuple(op_families or ())
        return cls(fams, backend or None, arch or None, dtype or None, tuple(sources or ()))

    def matches(self, strategy: Strategy) -> bool:
        a = strategy.applies_to
        if self.sources and strategy.source not in self.sources:
            return False
        if self.op_families and not family_match(strategy, self.op_families):
            return False
        if self.backend and a.get("backends") and self.backend not in a["backends"]:
            return False
        if self.dtype and a.get("dtypes") and self.dtype not in a["dtypes"]:
            return False
        return not (self.arch and a.get("archs") and not any(arch_allows(r, self.arch) for r in a["archs"]))


def family_match(strategy: Strategy, families: tuple[str, ...] | list[str]) -> float:
    """1.0 when tagged with one of ``families`` (or they include "other"), 0.5 via "any", else 0."""
    tagged = set(strategy.families)
    if tagged & set(families):
        return 1.0
    if ANY in tagged or "other" in families:
        return 0.5
    return 0.0


def _sm(arch: str) -> int | None:
    found = re.fullmatch(r"sm_?(\d+)a?", arch.strip().lower())
    return int(found.group(1)) if found else None


# CPU hardware keys, each allowing what the ones after it need (an AVX-512 CPU has AVX2)
_CPU_LEVELS = ("cpu", "cpu-avx2", "cpu-avx512")


def arch_allows(rule: str, arch: str) -> bool:
    """``rule`` is "sm_80" (exactly), ">=sm_80" (that or newer), "cuda" (any GPU), "cpu" (any CPU)
    or a CPU ISA level ("cpu-avx2": that ISA or a wider one)."""
    rule, arch = rule.strip().lower(), arch.strip().lower()
    if rule in (ANY, arch):
        return True
    if rule == "cuda":
        return not arch.startswith("cpu")
    if rule in _CPU_LEVELS and arch in _CPU_LEVELS:
        return _CPU_LEVELS.index(arch) >= _CPU_LEVELS.index(rule)
    if rule.startswith(">="):
        need, have = _sm(rule[2:]), _sm(arch)
        return need is not None and have is not None and have >= need
    return False
