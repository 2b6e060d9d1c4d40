"""Where the judge fixtures live and what each one is meant to prove.

Fixture files carry their metadata in header comments (``# target: <problem>``,
``# exploit: ...`` / ``# hostile: ...``); honest candidates are named
``<problem>__<variant>.py``. Nothing here imports torch, so the CLI tests can
collect without it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[3]
ROOT = REPO / "tests" / "fixtures" / "judge"
PROBLEMS = ROOT / "problems"
HONEST = ROOT / "honest"
CHEATS = ROOT / "cheats"
HOSTILE = ROOT / "hostile"
BROKEN_REFERENCES = ROOT / "broken" / "references"
BROKEN_CANDIDATES = ROOT / "broken" / "candidates"

# The candidate every broken reference is paired with: it is honest, so the
# verdict can only come from the reference.
PARTNER_OF_BROKEN_REFERENCES = HONEST / "relu_affine__flat.py"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def header(path: Path, key: str) -> str | None:
    """Value of a ``# key: value`` comment among the first lines of ``path``."""
    pattern = re.compile(rf"^#\s*{re.escape(key)}:\s*(.+?)\s*$")
    for line in path.read_text().splitlines()[:6]:
        match = pattern.match(line)
        if match:
            return match.group(1)
    return None


def problem(name: str) -> Path:
    path = PROBLEMS / f"{name}.py"
    if not path.exists():
        raise FileNotFoundError(f"no problem fixture {path}")
    return path


def honest() -> list[tuple[Path, Path]]:
    """(candidate, reference) pairs; the problem is the part of the name before ``__``."""
    return [(p, problem(p.stem.split("__")[0])) for p in _files(HONEST)]


def targeted(folder: Path) -> list[tuple[Path, Path]]:
    """(candidate, reference) pairs for files that name their ``# target:``."""
    pairs = []
    for path in _files(folder):
        target = header(path, "target")
        if target is None:
            raise ValueError(f"{path} has no '# target: <problem>' header")
        pairs.append((path, problem(target)))
    return pairs


def cheats() -> list[tuple[Path, Path]]:
    return targeted(CHEATS)


def hostile() -> list[tuple[Path, Path]]:
    return targeted(HOSTILE)


def broken_candidates() -> list[tuple[Path, Path]]:
    return targeted(BROKEN_CANDIDATES)


def broken_references() -> list[tuple[Path, Path]]:
    return [(PARTNER_OF_BROKEN_REFERENCES, p) for p in _files(BROKEN_REFERENCES)]


def load(path: Path, name: str | None = None) -> ModuleType:
    """Import a fixture file as a fresh module (module-level state is not shared)."""
    name = name or f"fixture_{path.parent.name}_{path.stem}_{id(path)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def size_constants(module: ModuleType) -> dict[str, int]:
    """Module-level ints that look like sizes (>= 8): what a judge may change."""
    return {
        k: v for k, v in vars(module).items()
        if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool) and v >= 8
    }


def perturbations(module: ModuleType) -> list[dict[str, Any]]:
    """Sizes other than the defaults: an odd shrink and a small growth, with the module
    values computed from them (``bias_shape = (channels, 1)``) following, as the judge's
    perturbed trials have them (``sandbox.problem.derived_values``)."""
    from sandbox.problem import derived_values, load_problem

    sizes = size_constants(module)
    if not sizes:
        return []
    shrink = {k: max(1, (v * 2 // 3) | 1) for k, v in sizes.items()}
    grow = {k: v + 5 for k, v in sizes.items()}
    problem = load_problem(module.__file__ or "")
    return [{**s, **derived_values(problem, s)} for s in (shrink, grow)]
