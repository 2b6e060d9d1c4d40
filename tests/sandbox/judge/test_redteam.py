"""The red-team suite: every exploit class of docs/architecture.md ("Exploit
classes") has at least three attacker-written variants, and each variant fails
for the reason that names its class.

Fixtures say what they are in header comments: ``# class:`` (the exploit
class), ``# caught-by:`` (the check that must fail), ``# target:`` (the
problem) and, for GPU-only classes, ``# device: cuda``. Those run on a GPU
host; here the judge's source policy must reject them statically, with a
finding that names the class. Every other fixture in tests/fixtures/judge/
redteam is judged by one warm judge shared by all cases (Triton in its
interpreter, native C on the CPU). The cheats in tests/fixtures/judge/cheats
count towards each class too; test_fixtures.py judges those through the CLI.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.judge import fixture_catalog as fc

REDTEAM = fc.ROOT / "redteam"
DOCS = fc.REPO / "docs" / "architecture.md"
FIXTURES = sorted(p for p in REDTEAM.glob("*.py") if not p.name.startswith("_"))


def classified() -> list[Path]:
    return [p for p in sorted(fc.CHEATS.glob("*.py")) + FIXTURES if fc.header(p, "class")]


def documented_classes() -> set[str]:
    """The first column of the table under '### Exploit classes'."""
    text = DOCS.read_text()
    section = text.split("### Exploit classes", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))


def test_every_documented_class_has_three_variants() -> None:
    classes = documented_classes()
    assert len(classes) >= 10, f"the exploit-class table in {DOCS.name} is missing or short: {classes}"
    counts = Counter(fc.header(p, "class") for p in classified())
    thin = {c: counts.get(c, 0) for c in classes if counts.get(c, 0) < 3}
    assert not thin, f"classes with fewer than three red-team variants: {thin}"
    undocumented = set(counts) - classes
    assert not undocumented, f"fixtures name classes that docs/architecture.md does not list: {undocumented}"


def test_every_redteam_fixture_is_described() -> None:
    for path in FIXTURES:
        for key in ("target", "class", "caught-by", "exploit"):
            assert fc.header(path, key), f"{path.name} has no '# {key}:' header"


@pytest.fixture(scope="module")
def judge() -> Iterator[object]:
    from sandbox import Judge

    with Judge(warm=True) as warm:
        yield warm


def catching_checks() -> dict[str, set[str]]:
    """Class -> the checks its row of the exploit-class table says catch it."""
    text = DOCS.read_text().split("### Exploit classes", 1)[1].split("\n### ", 1)[0]
    return {m[0]: set(re.findall(r"`?(\w+)`?", m[1])) for m in re.findall(r"^\| `(\w+)` \|.*\| ([^|]+) \|$", text, re.M)}


def names_class(reasons: list[str], cls: str, check: str) -> bool:
    """A reason names the class: it is the failed check's own reason (for a
    class the table says that check catches), or a source-policy finding
    tagged with the class."""
    by_table = check in catching_checks().get(cls, set())
    return any(r.startswith(f"{cls}:") or f"(class {cls})" in r
               or ((cls == check or by_table) and r.startswith(f"{check}:")) for r in reasons)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_redteam_fixture_fails_for_its_class(fixture: Path, request: pytest.FixtureRequest) -> None:
    cls, check = fc.header(fixture, "class"), fc.header(fixture, "caught-by")
    assert cls and check
    source = fixture.read_text()
    if fc.header(fixture, "device") == "cuda":
        from sandbox.policy import python as policy

        found = policy.findings(source, fixture.name)
        assert any(f"(class {cls})" in f for f in found), f"no source-policy finding names {cls}: {found}"
        return
    from sandbox import EvalOptions

    judge = request.getfixturevalue("judge")
    problem = fc.problem(fc.header(fixture, "target") or "")
    # A few timed repetitions, each on its own input set: enough for the cheats that change
    # behaviour once an instance has been called several times (warm-up included).
    options = EvalOptions(device="cpu", time_reps=8, compile_baseline=False)
    result = judge.evaluate(problem.read_text(), source, problem.name, fixture.name, options)
    failed = {c.name for c in result.checks if c.outcome == "fail"}
    assert result.verdict == "fail", f"{fixture.name} passed the judge"
    assert check in failed, f"{check} did not fail; failed: {sorted(failed)}; reasons: {result.reasons}"
    assert names_class(result.reasons, cls, check), f"no reason names {cls}: {result.reasons}"
