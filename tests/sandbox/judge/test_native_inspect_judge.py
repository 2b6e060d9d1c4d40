"""The judge applies the source policy to what compiled on every evaluation:
on a fresh build and on a cached one, and a source rejected there never
reaches the candidate. Real sandbox, real gcc."""

from __future__ import annotations

import ast
import os
import uuid
from collections.abc import Iterator

import pytest

from sandbox import native_sources
from sandbox.judge import Judge
from sandbox.native import cache as native_cache
from sandbox.runner.native import library as native
from tests.sandbox.judge.test_native_judge import GOOD, QUICK, RELU, candidate

# `static` through a macro: no text rule sees it; the object's .bss does.
HIDDEN_STATE = "#define KEEP static\n    KEEP long calls;\n    calls++;\n" + GOOD


@pytest.fixture(scope="module")
def judge() -> Iterator[Judge]:
    with Judge(warm=True) as j:
        yield j


def key_of(text: str) -> str:
    (src,) = native_sources.extract(ast.parse(text), "c.py").sources
    return native.source_key(src.text, "c")


def test_rejected_on_what_compiled_fresh_and_cached(judge: Judge) -> None:
    text = candidate(HIDDEN_STATE, uuid.uuid4().hex)
    for attempt in ("fresh", "cached"):
        result = judge.evaluate(RELU, text, "relu_affine.py", "c.py", options=QUICK)
        checks = {c.name: c for c in result.checks}
        assert result.verdict == "fail", attempt
        assert checks["source_policy"].outcome == "fail", (attempt, result.reasons)
        assert "mutable state kept between calls" in checks["source_policy"].detail
        assert "calls" in checks["source_policy"].detail and "(c.py:" in checks["source_policy"].detail
        assert "not built: the source policy rejected what compiled" in checks["compile"].detail
        assert checks["runtime"].outcome == "skipped", attempt  # the candidate never ran
        assert native_cache.lookup(key_of(text)) is not None  # cached with its facts, still judged


def test_cached_library_without_facts_is_no_hit(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KFORGE_JUDGE_NATIVE_CACHE", str(tmp_path))
    key = uuid.uuid4().hex
    path = native_cache.path_for(key)
    with open(path, "wb") as f:
        f.write(b"\x7fELF")
    assert native_cache.lookup(key) is None
    native_cache.store(key, b"\x7fELF", '{"v": -1}')
    assert native_cache.lookup(key) is None, "facts of another version are no hit"
    assert os.path.exists(native_cache.facts_path(key))
