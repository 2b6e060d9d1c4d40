"""Process sandbox: the default driver.

The runner is a child process of the judge, started with an environment that
holds no secrets. When the judge runs as root (workers do, in their own
container), the runner enters a private network namespace (no network at
all) and a private mount namespace where everything is read-only except its
scratch root, and home directories and secret files are covered; each job's
child then runs under a uid of its own with limits on memory, CPU time and
process count, and is killed by uid when the job ends.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from ..runner.channel import shared
from .base import RunnerSession, SandboxError, sandbox_env

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
DEFAULT_HIDE = ("/root", "/home", "/etc/kforge", "/run/secrets", "/var/run/docker.sock", "/run/docker.sock")


def runtime_paths() -> list[str]:
    """What the runner must still see under hidden directories: Python, the
    environment's packages and our own package root."""
    paths = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, PACKAGE_ROOT)}
    paths |= {os.path.realpath(p) for p in site.getsitepackages()}
    user_site = site.getusersitepackages()  # torch installed with ``pip install --user`` (under a hidden /root)
    if user_site in sys.path and os.path.isdir(user_site):
        paths.add(os.path.realpath(user_site))
    paths.add(os.path.realpath(sysconfig.get_paths()["stdlib"]))
    return sorted(paths)


def secret_files(extra: list[str]) -> list[str]:
    found = [str(Path(PACKAGE_ROOT) / ".env"), str(Path.cwd() / ".env")]
    return [p for p in dict.fromkeys(found + extra) if os.path.exists(p)]


class ProcessDriver:
    name = "process"
    # How the interpreter starts the runner (tests start it through a wrapper that changes torch first).
    runner_module: list[str] = ["-m", "sandbox.runner.process.zygote"]

    def __init__(self, hide: list[str] | None = None, isolate: bool | None = None,
                 read_only_dirs: list[str] | None = None) -> None:
        # ``read_only_dirs``: what the judge shares with jobs (its native library cache). A job
        # here sees the host's files as its uid may, so they need no mount; kept for the interface.
        self.read_only_dirs = list(read_only_dirs or [])
        self.extra_hide = hide or []
        self.isolate = os.geteuid() == 0 if isolate is None else isolate
        self._procs: dict[int, tuple[subprocess.Popen, str]] = {}

    def start(self, device: str) -> RunnerSession:
        scratch_root = tempfile.mkdtemp(prefix="kforge-sandbox-")
        os.chmod(scratch_root, 0o711)
        cmd = [sys.executable, *self.runner_module, "--scratch-root", scratch_root, "--device", device]
        if self.isolate:
            cmd += ["--isolate", "--unique-uids"]
            for path in [*DEFAULT_HIDE, *secret_files(self.extra_hide)]:
                cmd += ["--hide", path]
            for path in runtime_paths():
                cmd += ["--keep", path]
        # The side channel: large tensors as sealed memory files beside the frames (runner/channel/shared.py).
        side, runner_side = shared.channel()
        cmd += ["--side-fd", str(runner_side.fileno())]
        env = sandbox_env({"PYTHONPATH": PACKAGE_ROOT, "HOME": scratch_root})
        log = open(os.path.join(scratch_root, "runner.log"), "wb")
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                    cwd=scratch_root, start_new_session=True, pass_fds=(runner_side.fileno(),))
        except OSError as exc:
            side.close()
            raise SandboxError(f"could not start the process sandbox: {exc}") from exc
        finally:
            log.close()
            runner_side.close()
        assert proc.stdin is not None and proc.stdout is not None
        # The session owns duplicates; Popen's own file objects are closed now
        # so that nothing closes the session's descriptors behind its back.
        write_fd, read_fd = os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno())
        proc.stdin.close()
        proc.stdout.close()
        session = RunnerSession(write_fd, read_fd, f"process sandbox pid {proc.pid}", side)
        self._procs[id(session)] = (proc, scratch_root)
        try:
            session.wait_ready(timeout=180)
        except SandboxError as exc:
            detail = _read(os.path.join(scratch_root, "runner.log"))
            self.stop(session)
            raise SandboxError(f"the process sandbox did not start: {exc}\n{detail[-2000:]}") from exc
        return session

    def stop(self, session: RunnerSession) -> None:
        session.close()
        proc, scratch_root = self._procs.pop(id(session), (None, None))
        if proc is not None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if scratch_root:
            shutil.rmtree(scratch_root, ignore_errors=True)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""
