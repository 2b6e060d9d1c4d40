"""Recurrent layers (LSTM, GRU, RNN) have no Triton template yet: the step-by-step
recurrence is one small matrix product per step, which a GPU template would write as a
persistent kernel; the cpu backend's C template (``cpu/recurrent.py``) writes them."""

from __future__ import annotations

from typing import Any

from ..common import NotRenderable

PARAM_SPACE: list[dict[str, Any]] = [{}]


def render(match: Any, params: dict[str, Any]) -> str:
    raise NotRenderable(f"{match.kind}: no Triton template for recurrent layers (the cpu backend writes them)")
