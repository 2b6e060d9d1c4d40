"""A side-by-side diff of two sources, as rows the template escapes and lays
out (difflib's HtmlDiff builds its own markup; these rows leave it to us)."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import zip_longest


@dataclass
class Row:
    kind: str  # equal | replace | delete | insert
    left_no: int | None
    left: str
    right_no: int | None
    right: str


def side_by_side(old: str, new: str) -> tuple[list[Row], dict[str, int]]:
    a, b = old.splitlines(), new.splitlines()
    rows: list[Row] = []
    stats = {"added": 0, "removed": 0, "changed": 0}
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [Row("equal", i + 1, a[i], j + 1, b[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        for i, j in zip_longest(range(i1, i2), range(j1, j2)):
            kind = "replace" if i is not None and j is not None else ("delete" if j is None else "insert")
            stats["changed" if kind == "replace" else "removed" if kind == "delete" else "added"] += 1
            rows.append(Row(kind, None if i is None else i + 1, "" if i is None else a[i],
                            None if j is None else j + 1, "" if j is None else b[j]))
    return rows, stats
