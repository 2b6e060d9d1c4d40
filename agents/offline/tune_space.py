"""A family's wider parameter space, for the tuning pass.

A family's ``PARAM_SPACE`` lists a few hand-picked parameter sets, best guess
first. The tuning pass (``sandbox/tuning.py``) can afford many more: every
combination of the values those sets use (per set of keys: a BLAS rank and a
tiled rank are separate spaces), nearest to the first set first -- those that
change one value, then two, ... -- so that a cut keeps the neighbourhood of the
best guess. Besides the values the sets use, a key the template takes gets
the values of ``MORE`` (vector widths, parallel thresholds, block and tile
sizes: each a value the templates render for any shape).
"""

from __future__ import annotations

import itertools
from typing import Any

MORE: dict[str, tuple[Any, ...]] = {
    "simdlen": (0, 4, 8, 16),
    "par_min": (4096, 16384, 65536, 262144),
    "BLOCK": (2048, 4096, 8192, 16384, 32768, 65536),
    "TILE": (32, 64, 128, 256, 512),
    "KC": (128, 192, 256, 384, 512),
    "IB": (32, 64, 128, 256, 512),
}


def _key(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def widen(space: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``space`` first, then the combinations of its values, nearest to the first set first."""
    out = [dict(p) for p in space]
    seen = {_key(p) for p in out}
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for p in space:
        groups.setdefault(tuple(p), []).append(p)
    extra: list[tuple[int, int, dict[str, Any]]] = []
    for g, (keys, entries) in enumerate(groups.items()):
        values = {k: list(dict.fromkeys([*(e[k] for e in entries if isinstance(e[k], (int, float, str, bool))),
                                         *MORE.get(k, ())])) for k in keys}
        if any(not v for v in values.values()):
            continue  # a value the template takes that cannot be varied here (a list, a dict)
        first = entries[0]
        for combo in itertools.product(*(values[k] for k in keys)):
            params = dict(zip(keys, combo))
            if _key(params) in seen:
                continue
            seen.add(_key(params))
            extra.append((sum(params[k] != first[k] for k in keys), g, params))
    extra.sort(key=lambda t: (t[0], t[1]))  # stable: product order within a distance
    return out + [p for _, _, p in extra]
