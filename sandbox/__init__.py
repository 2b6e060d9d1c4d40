"""The judge: problem loading, sandboxed runners, checks and timing.

Exports are resolved lazily, so that ``python -m sandbox.runner.process.zygote``
(code that runs inside the sandbox) does not import the judge, or torch,
before it has isolated itself.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "EvalOptions": "judge", "Judge": "judge", "evaluate_files": "judge",
    "EvalResult": "result", "error_json": "errors", "TuneResult": "tuning",
    "JudgeError": "errors", "ProblemError": "errors",
    "Problem": "problem", "list_problems": "problem", "load_problem": "problem",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
