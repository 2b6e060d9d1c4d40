"""A warm judge behind a Unix socket: `kforge judged` keeps one judge and its
sandboxed runner started, and `kforge eval` hands it the two files instead of
starting both (two Python processes that import torch: seconds, against a
fraction of a second of judging for a small problem).

One request a connection, one JSON line each way: the files' texts and names and
the command's options in, the judge's result out. Requests are judged one at a
time, in the order they connect (the judge times kernels: two at once would
disturb each other). The socket is the user's own (mode 0600, in a folder only
they can enter); the daemon's settings (KFORGE_* of its environment) are the ones
that apply, and candidates run sandboxed exactly as `kforge eval` runs them.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

# torch-free: `kforge eval` asking a running daemon never imports torch (a second of its start),
# nor pydantic: the settings are read where options are made (the daemon, or judging here)
from sandbox.errors import JudgeError, error_json

from .settings_env import data_dir_from_env

if TYPE_CHECKING:
    from sandbox import EvalOptions

    from .settings import Settings

log = logging.getLogger("kforge.judged")
# What a request may ask for besides the files: the options of `kforge eval`.
OPTIONS = ("backend", "device", "sandbox", "timeout", "memory_mb", "trials")
MAX_REQUEST_BYTES = 64 << 20


def default_socket(settings: Settings | None = None) -> Path:
    if settings is None:
        found = data_dir_from_env()
        if found is None:
            from .settings import get_settings

            settings = get_settings()
        else:
            return found / "judged" / "judge.sock"
    return settings.data_dir / "judged" / "judge.sock"


def validate(options: EvalOptions) -> list[str]:
    """What `kforge eval` refuses before judging, each a sentence naming the option."""
    problems = []
    if options.timeout <= 0:
        problems.append("--timeout must be positive")
    if options.memory_mb < 256:
        problems.append("--memory-mb must be at least 256")
    if options.trials < 5:
        problems.append("--trials must be at least 5")
    if options.device not in ("auto", "cpu", "cuda"):
        problems.append(f"--device {options.device!r}: use auto, cpu or cuda")
    if options.sandbox not in ("process", "docker"):
        problems.append(f"--sandbox {options.sandbox!r}: use process or docker")
    return problems


def options_for(request: dict[str, Any], settings: Settings | None = None) -> EvalOptions:
    """The judge's options from a request's (or the command line's) values."""
    from .compose import eval_options
    from .settings import get_settings

    given = {k: request[k] for k in OPTIONS if request.get(k) is not None}
    backend = given.pop("backend", "triton")
    return eval_options(settings or get_settings(), backend, **given)


def judged(run: Callable[[EvalOptions], dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """``run(options)``'s result for a request's options, or the error a user can act on:
    a bad option, an unusable reference, or (never a crash) an internal error named."""
    from .backends import BackendError

    try:
        options = options_for(request)
    except BackendError as exc:
        return error_json(str(exc))
    problems = validate(options)
    if problems:
        return error_json("; ".join(problems))
    try:
        return run(options)
    except JudgeError as exc:
        return error_json(str(exc))
    except Exception as exc:  # kforge never crashes on a user's files
        log.debug("internal error", exc_info=True)
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return error_json(f"internal error in the judge ({type(exc).__name__}: {exc} at "
                          f"{Path(tb.filename).name}:{tb.lineno}); please report it")


def read_files(reference: Path, candidate: Path) -> tuple[str, str]:
    """Both files' texts, read as `sandbox.evaluate_files` reads them (an unreadable one is a
    ProblemError naming it)."""
    from sandbox.problem import read_sources

    ref, cand = read_sources(str(reference), str(candidate))
    return ref, cand


def ask(path: Path, request: dict[str, Any], wait_s: float) -> dict[str, Any] | None:
    """The daemon's answer to ``request``, or None when no daemon listens at ``path``."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(wait_s)
        conn.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    with conn, conn.makefile("rwb") as stream:
        stream.write(json.dumps(request).encode() + b"\n")
        stream.flush()
        line = stream.readline()
    if not line:
        return error_json(f"the judge daemon at {path} closed the connection without an answer")
    return json.loads(line)


def serve(path: Path, judge: Any, ready: Callable[[], None] | None = None) -> None:
    """Answer requests on ``path`` until SIGTERM or SIGINT; the socket is removed after."""
    if not path.parent.exists():  # a folder of ours: only its owner enters (an existing one is left as it is)
        path.parent.mkdir(parents=True, mode=0o700)
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # left by a daemon that did not stop cleanly
        else:
            probe.close()
            raise OSError(f"a judge daemon already listens at {path}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    listener.listen(16)
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True
        listener.close()  # wakes accept()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    if ready is not None:
        ready()
    try:
        while not stopping:
            try:
                conn, _ = listener.accept()
            except OSError:
                break
            with conn:
                _answer(conn, judge)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        listener.close()
        path.unlink(missing_ok=True)


def _answer(conn: socket.socket, judge: Any) -> None:
    with conn.makefile("rwb") as stream:
        line = stream.readline(MAX_REQUEST_BYTES + 1)
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
            texts = [str(request[k]) for k in ("reference", "candidate")]
            names = [str(request.get(k) or d) for k, d in (("reference_name", "reference.py"),
                                                           ("candidate_name", "candidate.py"))]
        except (ValueError, KeyError) as exc:
            result = error_json(f"a request the judge daemon cannot read ({type(exc).__name__}: {exc})")
        else:
            result = judged(lambda options: judge.evaluate(texts[0], texts[1], names[0], names[1], options).to_json(),
                            request)
            log.info("%s vs %s: %s", names[1], names[0], result["verdict"])
        try:
            stream.write(json.dumps(result).encode() + b"\n")
            stream.flush()
        except OSError:
            pass  # the client gave up
