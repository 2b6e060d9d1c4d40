"""Every judge fixture: hostile and broken ones through the real CLI,
``kforge eval ... --json``; honest ones and cheats through one warm judge in
this process (what the CLI runs, without a fresh sandbox per fixture: the
runner forks every job from its zygote either way).

honest -> pass (exit 0, no reasons); cheats, hostile and broken candidates ->
fail (exit 1, reasons); broken references -> error (exit 2). Every run gets
fake secrets in its environment, which must never show in the judge's output,
and hostile runs must leave nothing behind: no files outside the sandbox, no
processes, no connection to a loopback listener.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.judge import fixture_catalog as fc

KFORGE = fc.REPO / ".venv" / "bin" / "kforge"
pytestmark = pytest.mark.skipif(not KFORGE.exists(), reason=f"{KFORGE} is not installed")

SECRETS = {
    "OPENAI_API_KEY": "sk-test-secret-123",
    "ANTHROPIC_API_KEY": "sk-ant-test-secret-456",
    "GEMINI_API_KEY": "AIza-test-secret-789",
    "KFORGE_DATABASE_URL": "postgresql://secret@x/y",
}
# Hostile candidates that never finish: a short limit keeps the suite quick.
HANGS = {"busy_loop_forward", "busy_loop_import", "signals_ignored", "native_busy_loop"}
HANG_TIMEOUT = 10
TIMEOUT = 120
# argv of processes that cheats and hostile candidates try to leave running.
LINGERING = [["sleep", "41.7"], ["sleep", "42.3"], ["sleep", "43.9"], ["sleep", "53.77"]]
ESCAPES = [Path("/tmp/kforge_escape_fixture"), Path("/var/tmp/kforge_escape_fixture"),
           Path("/dev/shm/kforge_escape_fixture"), Path("/work/main/ESCAPED"), fc.REPO / "ESCAPED",
           Path.home() / "kforge_escape_fixture", Path("/root/kforge_escape_fixture"), fc.HOSTILE / "ESCAPED"]
LISTENER_PORT = 47611
STATES = {"pass", "fail", "skipped"}


def evaluate(candidate: Path, reference: Path, timeout: int = TIMEOUT) -> tuple[int, dict[str, Any], str]:
    """Run the CLI; returns (exit code, the one JSON object on stdout, stdout + stderr)."""
    cmd = [str(KFORGE.relative_to(fc.REPO)), "eval", "--reference", str(reference.relative_to(fc.REPO)),
           "--candidate", str(candidate.relative_to(fc.REPO)), "--json", "--timeout", str(timeout)]
    env = {**os.environ, **SECRETS}
    env.pop("TRITON_INTERPRET", None)  # the judge decides how Triton runs, not this test process
    try:
        proc = subprocess.run(cmd, cwd=fc.REPO, env=env, capture_output=True, timeout=3 * timeout + 60)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"kforge eval did not return within {3 * timeout + 60}s: {exc}")
    stdout = proc.stdout.decode("utf-8", "replace")
    combined = stdout + proc.stderr.decode("utf-8", "replace")
    for name, value in SECRETS.items():
        assert value not in combined, f"the value of {name} leaked into the judge's output"
    try:
        report = json.loads(stdout)  # exactly one object: trailing data is an error
    except json.JSONDecodeError as exc:
        pytest.fail(f"stdout is not one JSON object ({exc}); exit {proc.returncode}; "
                    f"stdout tail: {stdout[-1500:]!r}; stderr tail: {combined[len(stdout):][-1500:]!r}")
    assert isinstance(report, dict)
    check_report_shape(report)
    return proc.returncode, report, combined


@pytest.fixture(scope="module")
def warm_judge() -> Iterator[Any]:
    """One judge for the module, started with the fake secrets in its environment."""
    from sandbox import Judge

    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    try:
        with Judge(warm=True) as judge:
            yield judge
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def judged(judge: Any, candidate: Path, reference: Path) -> tuple[int, dict[str, Any]]:
    """What ``kforge eval --json`` answers (same options, same exit code), from the warm judge."""
    from app.cli.eval_cmd import EXIT
    from app.compose import eval_options
    from app.settings import get_settings

    options = eval_options(get_settings(), "triton", device="auto", timeout=TIMEOUT)
    report = judge.evaluate(reference.read_text(), candidate.read_text(), reference.name, candidate.name,
                            options).to_json()
    text = json.dumps(report)
    for name, value in SECRETS.items():
        assert value not in text, f"the value of {name} leaked into the judge's result"
    check_report_shape(report)
    return EXIT[report["verdict"]], report


def check_report_shape(report: dict[str, Any]) -> None:
    assert report["verdict"] in ("pass", "fail", "error")
    assert isinstance(report["reasons"], list) and all(isinstance(r, str) for r in report["reasons"])
    assert "correct" in report and "speedup" in report
    assert report["speedup"] is None or isinstance(report["speedup"], (int, float))
    assert isinstance(report["checks"], dict) and set(report["checks"].values()) <= STATES
    assert isinstance(report.get("check_details", {}), dict)


def explain(code: int, report: dict[str, Any]) -> str:
    failed = {k: report.get("check_details", {}).get(k, "") for k, v in report["checks"].items() if v == "fail"}
    return f"exit {code}, verdict {report['verdict']}, reasons {report['reasons']}, failed checks {failed}"


def syntax_error_line(path: Path) -> int:
    try:
        ast.parse(path.read_text(), filename=path.name)
    except SyntaxError as exc:
        assert exc.lineno is not None
        return exc.lineno
    raise AssertionError(f"{path} parses")


def lingering_processes() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if [a.decode(errors="replace") for a in argv] in LINGERING:
            found.append(f"pid {entry.name}: {b' '.join(argv).decode(errors='replace')}")
    return found


class Listener:
    """A loopback TCP server that records whether anything connected."""

    def __init__(self, port: int) -> None:
        self.accepted: list[str] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except OSError:
                continue
            self.accepted.append(f"{peer[0]}:{peer[1]}")
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener | None]:
    try:
        server = Listener(LISTENER_PORT)
    except OSError:  # port taken: the run still checks everything else
        yield None
        return
    yield server
    server.close()


def _ids(pairs: list[tuple[Path, Path]]) -> list[str]:
    return [c.stem for c, _ in pairs]


HONEST = fc.honest()
CHEATS = fc.cheats()
HOSTILE = fc.hostile()
BROKEN_REFERENCES = fc.broken_references()
BROKEN_CANDIDATES = fc.broken_candidates()


@pytest.mark.parametrize("candidate, reference", HONEST, ids=_ids(HONEST))
def test_honest_candidate_passes(warm_judge: Any, candidate: Path, reference: Path) -> None:
    code, report = judged(warm_judge, candidate, reference)
    assert (code, report["verdict"], report["reasons"]) == (0, "pass", []), explain(code, report)
    assert report["correct"] is True
    assert "fail" not in report["checks"].values()


# Cheats the judge does not catch yet (see docs/architecture.md, "Known gaps").
# strict: the day the judge catches one, this list must shrink.
# Cheats the judge is known to pass (strict: one that starts failing must leave this list).
KNOWN_GAPS: dict[str, str] = {}


def _cheat_params() -> list:
    return [pytest.param(c, r, id=i, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[c.stem])]
                         if c.stem in KNOWN_GAPS else [])
            for (c, r), i in zip(CHEATS, _ids(CHEATS))]


@pytest.mark.parametrize("candidate, reference", _cheat_params())
def test_cheat_fails(warm_judge: Any, candidate: Path, reference: Path) -> None:
    code, report = judged(warm_judge, candidate, reference)
    assert (code, report["verdict"]) == (1, "fail"), explain(code, report)
    assert report["reasons"], "a fail must say why"
    assert_caught_by(candidate, report)
    assert not lingering_processes(), f"left running after the judge returned: {lingering_processes()}"


def assert_caught_by(candidate: Path, report: dict[str, Any]) -> None:
    """A fixture may name the check that must catch it (``# caught-by: <check>``)."""
    expected = fc.header(candidate, "caught-by")
    if expected is not None:
        assert report["checks"].get(expected) == "fail", f"{expected} did not fail: {explain(1, report)}"


@pytest.mark.parametrize("candidate, reference", HOSTILE, ids=_ids(HOSTILE))
def test_hostile_candidate_fails_and_is_contained(candidate: Path, reference: Path,
                                                  listener: Listener | None) -> None:
    for path in ESCAPES:
        path.unlink(missing_ok=True)
    timeout = HANG_TIMEOUT if candidate.stem in HANGS else TIMEOUT
    try:
        code, report, _ = evaluate(candidate, reference, timeout)
        escaped = [str(p) for p in ESCAPES if p.exists()]
        left = lingering_processes()
    finally:
        for path in ESCAPES:
            path.unlink(missing_ok=True)
    assert not escaped, f"files written outside the sandbox: {escaped}"
    assert not left, f"left running after the judge returned: {left}"
    if listener is not None:
        assert not listener.accepted, f"the sandbox reached a loopback listener: {listener.accepted}"
    assert (code, report["verdict"]) == (1, "fail"), explain(code, report)
    assert report["reasons"], "a fail must say why"
    assert_caught_by(candidate, report)
    if candidate.stem == "native_segfault":
        assert "SIGSEGV" in report["check_details"]["runtime"], report["check_details"]["runtime"]


@pytest.mark.parametrize("candidate, reference", BROKEN_REFERENCES, ids=[r.stem for _, r in BROKEN_REFERENCES])
def test_broken_reference_is_an_error(candidate: Path, reference: Path) -> None:
    code, report, _ = evaluate(candidate, reference)
    assert (code, report["verdict"]) == (2, "error"), explain(code, report)
    assert report["reasons"]
    if reference.stem == "broken_syntax":
        where = f"{reference.name}:{syntax_error_line(reference)}"
        assert any(where in r for r in report["reasons"]), f"no reason names {where}: {report['reasons']}"


@pytest.mark.parametrize("candidate, reference", BROKEN_CANDIDATES, ids=_ids(BROKEN_CANDIDATES))
def test_broken_candidate_fails(candidate: Path, reference: Path) -> None:
    code, report, _ = evaluate(candidate, reference)
    assert (code, report["verdict"]) == (1, "fail"), explain(code, report)
    assert report["reasons"]
    if candidate.stem == "syntax_error":
        where = f"{candidate.name}:{syntax_error_line(candidate)}"
        assert any(where in r for r in report["reasons"]), f"no reason names {where}: {report['reasons']}"
