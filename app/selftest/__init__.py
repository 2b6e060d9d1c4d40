"""`kforge selftest`: does the judge on this machine accept what is right, reject what
is wrong and cheating, find speedups, and time steadily? One verdict per part.

Parts: ``solutions`` (bundled correct pass, wrong fail), ``redteam`` (cheat fixtures
that apply to the device fail, for the check their header names), ``engine`` (the
offline engine on a small bundled suite, speedups vs eager and torch.compile) and
``timing`` (spread of repeated medians, agreement with an independent timer).
"""

from __future__ import annotations

from .run import PARTS, Part, run_selftest

__all__ = ["PARTS", "Part", "run_selftest"]
