"""Shared test helpers: paths and a runner of the real `kforge` CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KFORGE = [sys.executable, "-m", "app.cli.main"]


def run_kforge(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*KFORGE, *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout)


def eval_json(reference: Path | str, candidate: Path | str, *extra: str,
              env: dict[str, str] | None = None) -> tuple[int, dict, subprocess.CompletedProcess]:
    proc = run_kforge("eval", "--reference", str(reference), "--candidate", str(candidate), "--json", *extra, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"stdout must hold exactly one JSON object, got: {proc.stdout!r}\n{proc.stderr}"
    return proc.returncode, json.loads(lines[0]), proc


@pytest.fixture
def tmp_problem(tmp_path: Path):
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write
