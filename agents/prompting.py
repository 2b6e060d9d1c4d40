"""Prompt templates (agents/prompts/*.md) and parsing of model replies.

Templates use ``string.Template`` placeholders (``$name``); every placeholder
must be given, so a missing piece of context is an error, not a silent gap.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

PROMPTS = Path(__file__).parent / "prompts"


class FormatError(Exception):
    """The model's reply does not have the shape the prompt asked for."""


@cache
def _template(name: str) -> Template:
    return Template((PROMPTS / f"{name}.md").read_text(encoding="utf-8"))


def render(name: str, **values: Any) -> str:
    try:
        return _template(name).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise KeyError(f"prompt {name}.md needs ${exc.args[0]}") from exc


def variant(name: str, backend: str) -> str:
    """``name_backend`` when the backend has its own template (system_coder_cpu.md), else ``name``."""
    return f"{name}_{backend}" if (PROMPTS / f"{name}_{backend}.md").exists() else name


_FENCE = re.compile(r"```([a-zA-Z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def fenced(text: str, languages: tuple[str, ...]) -> str:
    """The last fenced block in one of ``languages`` (or unlabelled)."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    chosen = [b for lang, b in blocks if lang in languages] or [b for lang, b in blocks if not lang]
    if not chosen:
        raise FormatError(f"the reply holds no ```{languages[0]} block")
    return chosen[-1].strip() + "\n"


def code_block(text: str) -> str:
    code = fenced(text, ("python", "py"))
    if "ModelNew" not in code:
        raise FormatError("the code block defines no ModelNew")
    return code


def json_block(text: str) -> dict[str, Any]:
    try:
        body = fenced(text, ("json",))
    except FormatError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise
        body = text[start : end + 1]
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise FormatError(f"the JSON block does not parse: {exc}") from exc
    if not isinstance(value, dict):
        raise FormatError("the JSON block is not an object")
    return value
