"""The judge: problem loading, sandboxed runners, checks and timing.

Public interface (what agents/ and app/ import):
"""

from __future__ import annotations

from .errors import JudgeError, ProblemError
from .judge import EvalOptions, Judge, evaluate_files
from .problem import Problem, list_problems, load_problem
from .result import EvalResult, error_json

__all__ = ["EvalOptions", "EvalResult", "Judge", "JudgeError", "Problem", "ProblemError", "error_json",
           "evaluate_files", "list_problems", "load_problem"]
