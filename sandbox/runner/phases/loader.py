"""Loading problem and candidate source inside a runner child."""

from __future__ import annotations

import inspect
import linecache
import sys
import traceback
import types
from typing import Any


class LoadError(Exception):
    """The source could not be loaded; the message names file and line."""


def where(exc: BaseException, filename: str) -> str:
    """'file:line' of the deepest frame in ``filename``, or just the file."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return f"{filename}:{exc.lineno}"
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return f"{filename}:{line}" if line else filename


def describe(exc: BaseException, filename: str) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{where(exc, filename)}: {type(exc).__name__}: {first}"[:2000]


def load_module(source: str, filename: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = filename
    # inspect.getsource (used by triton.jit) reads through linecache.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[name] = module
    try:
        code = compile(source, filename, "exec")
        exec(code, module.__dict__)
    except BaseException as exc:
        raise LoadError(describe(exc, filename)) from exc
    return module


def signature_of(cls: Any) -> dict[str, Any]:
    def params(fn: Any) -> list[list[Any]]:
        sig = inspect.signature(fn)
        return [[p.name, p.kind.name, p.default is inspect.Parameter.empty] for p in list(sig.parameters.values())[1:]]

    return {"init": params(cls.__init__), "forward": params(cls.forward)}
