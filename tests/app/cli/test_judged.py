"""`kforge judged` and `kforge eval` asking it: the real CLI, a real daemon process on a
Unix socket, the bundled relu-scale problem. The daemon's verdicts are the local
judge's (checks, reasons), an eval finds a daemon at the default socket by itself,
and a named socket without a daemon is a clear error (exit 2), not a silent fallback."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.conftest import KFORGE, ROOT, eval_json

PROBLEM = ROOT / "problems" / "level1" / "1_relu_scale.py"
WRONG = ROOT / "problems" / "level1" / "solutions" / "relu_scale" / "wrong_hardcoded_size.py"
CORRECT = ROOT / "problems" / "level1" / "solutions" / "relu_scale" / "correct_triton.py"


def test_eval_asks_the_daemon_at_the_default_socket_and_gets_the_local_verdict(tmp_path: Path) -> None:
    env = {**os.environ, "KFORGE_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([*KFORGE, "judged"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "judge daemon listening at" in line, (line, proc.stderr.read() if proc.stderr else "")
        socket = tmp_path / "judged" / "judge.sock"
        assert socket.exists() and socket.stat().st_mode & 0o777 == 0o600
        code, report, _ = eval_json(PROBLEM, CORRECT, "--device", "cpu", env=env)
        assert code == 0 and report["verdict"] == "pass", report
        code, asked, _ = eval_json(PROBLEM, WRONG, "--device", "cpu", env=env)
        local_code, local, _ = eval_json(PROBLEM, WRONG, "--device", "cpu", "--no-daemon", env=env)
        assert code == local_code == 1
        # The checks that do not read what this wrong kernel leaves unwritten at perturbed sizes
        # (``finite``, ``deterministic``, ... see memory the allocator handed back, whose contents
        # differ from one process to the next) nor what it writes past a smaller output's end
        # (``runtime``: the heap it corrupts crashes the process later in some runs, 2 in 6 here)
        decisive = ("compile", "signature", "source_policy", "correctness", "perturbed_sizes", "kernel_launched")
        assert [asked["checks"][k] for k in decisive] == [local["checks"][k] for k in decisive]
        assert asked["verdict"] == local["verdict"] == "fail" and asked["checks"]["perturbed_sizes"] == "fail"
        code, refused, _ = eval_json(PROBLEM, CORRECT, "--device", "tpu", env=env)
        assert code == 2 and "--device 'tpu'" in refused["reasons"][0], refused
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and not socket.exists()
    # the daemon judged what it was asked (a log line each), not the --no-daemon run
    assert err.count("1_relu_scale.py: pass") == 1 and err.count("1_relu_scale.py: fail") == 1, err
    assert err.count("1_relu_scale.py: error") == 1, err


def test_a_named_socket_without_a_daemon_is_an_error(tmp_path: Path) -> None:
    code, report, _ = eval_json(PROBLEM, CORRECT, "--device", "cpu", "--judge", str(tmp_path / "none.sock"))
    assert code == 2 and "no judge daemon listens at" in report["reasons"][0], report


def test_asking_a_daemon_never_imports_torch_pydantic_or_rich(tmp_path: Path) -> None:
    """`kforge eval` with a judge daemon running is a client: importing torch there cost a
    second of its 2.8 s (the judge's own work was 1.1 s); pydantic (the settings) and rich
    (the table it does not print with --json) 0.1 s of the 0.2 s left."""
    import sys

    code = ("import sys; import app.cli.eval_cmd, app.judged; app.judged.default_socket(); "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pydantic', 'pydantic_settings', "
            "'rich')); assert not heavy, heavy")
    env = {**os.environ, "KFORGE_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_socket_is_where_the_settings_put_the_data_dir(tmp_path: Path, monkeypatch) -> None:
    """Found without pydantic where it can be (the environment, or no .env file to read),
    and from Settings otherwise: the same folder either way."""
    from app import judged
    from app.settings import Settings, get_settings

    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.lower() == "kforge_data_dir"]:
        monkeypatch.delenv(name)
    cases = [({}, None), ({"KFORGE_DATA_DIR": str(tmp_path / "a")}, None), ({"kforge_data_dir": str(tmp_path / "b")}, None),
             ({}, f"KFORGE_DATA_DIR={tmp_path / 'c'}\n"), ({"KFORGE_DATA_DIR": str(tmp_path / "d")}, "KFORGE_DATA_DIR=/x\n"),
             ({}, "KFORGE_PROVIDER=offline\n")]
    for env, dotenv in cases:
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            if dotenv is not None:
                (tmp_path / ".env").write_text(dotenv)
            get_settings.cache_clear()  # read once a process, as a command reads them
            assert judged.default_socket() == Settings().data_dir / "judged" / "judge.sock", (env, dotenv)
            (tmp_path / ".env").unlink(missing_ok=True)
    assert judged.default_socket() == Path(".kforge") / "judged" / "judge.sock"
