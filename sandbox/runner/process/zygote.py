"""The warm runner: imports torch and triton once, then forks a child per job.

Started by a sandbox driver (``python -m sandbox.runner.process.zygote ...``) inside the
sandbox. It speaks framed messages (``wire``) on its stdin/stdout:

  judge -> runner  {"op": "run", "job": {...}, "timeout": s, "memory_mb": m, "max_procs": n}
                   {"op": "interleave", "jobs": [id, ...], "timeout": s}
                   {"op": "drop", "jobs": [id, ...]}
                   {"op": "warm"}  (torch.compile's first-use costs, paid now: prewarm.py)
                   {"op": "exit"}
  runner -> judge  {"kind": "ready", ...} once, then for every job the child's
                   frames, each preceded by {"kind": "stamp", "t": monotonic},
                   and finally {"kind": "exit", ...}. A job whose spec says
                   ``park`` ends its "run" with {"kind": "parked", "job": id}
                   instead, stopped before its timed pass; "interleave" runs
                   parked jobs' passes by turns (``turns``: stamps and exits
                   then carry the job's id), "drop" ends them; "warm" answers
                   {"kind": "warmed", ...} once torch.compile is warm (a CPU runner
                   also warms it before the second job that compiles a baseline with
                   ``warm_compile``: a judge that keeps its runner).

The child's stdout and stderr go to a log file in its scratch directory, never
to the judge: printing a success report achieves nothing. The runner's clock
stamps every frame as it arrives; the child cannot reach that clock.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Any, BinaryIO

from . import clocking, confine, cuda_fork, turns
from .jobs import Job

F_SETPIPE_SZ = 1031
RUNNER_NICE = -5



def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kforge-runner")
    p.add_argument("--scratch-root", required=True)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--isolate", action="store_true", help="enter private net/mount namespaces")
    p.add_argument("--hide", action="append", default=[])
    p.add_argument("--keep", action="append", default=[])
    p.add_argument("--unique-uids", action="store_true", help="run each child under a uid of its own")
    p.add_argument("--socket", help="talk to the judge over one connection to a unix socket listening here, "
                   "instead of stdin/stdout")
    p.add_argument("--side-fd", type=int, default=-1,
                   help="a unix socket (inherited) beside the judge's channel: large tensors travel as sealed "
                        "memory files on it (runner/channel/shared.py), not inside frames")
    p.add_argument("--kill-leftovers", action="store_true",
                   help="after each job, SIGKILL every other process of this uid (only for a runner alone "
                        "under its uid, as in a container)")
    return p.parse_args(argv)


class Runner:
    def __init__(self, args: argparse.Namespace, out: BinaryIO, notes: list[str]) -> None:
        self.args = args
        self.out = out
        self.notes = notes
        # What the scratch root holds before any job: everything else a job
        # leaves there (possible when children share the runner's uid) goes.
        self.keep = set(os.listdir(args.scratch_root))
        self.parked: dict[str, Job] = {}
        self.turning: list[Job] = []  # the parked jobs an "interleave" is running (``turns``)
        self.lock = threading.Lock()  # the judge's channel: forwarders' threads and this one
        self.wake_fd = -1  # read end of the SIGCHLD wake-up pipe (``main``), -1 without one
        self.sessions: set[int] = set()  # every live job's session (its child's pid)
        # The judge that started this runner: once it is gone (its process killed), a running
        # job is ended rather than left computing for nobody (``Job.watch``).
        self.parent = os.getppid()
        # Large tensors beside the frames (runner/channel/shared.py), where the driver gave a side channel.
        from ..channel import shared

        self.inbox = shared.Inbox(socket.socket(fileno=args.side_fd)) if args.side_fd >= 0 else None
        self.compile_warm: dict[str, Any] | None = None  # what prewarm_compile did, once it ran
        self.compile_jobs = 0  # jobs asked to compile a baseline with ``warm_compile``

    def warm_compile(self, on: str) -> dict[str, Any]:
        """torch.compile's first-use costs paid here, once, so that no job forked
        afterwards pays them (``prewarm.prewarm_compile``); CPU runners only."""
        if self.compile_warm is None:
            if self.args.device != "cpu":
                self.compile_warm = {"skipped": "CUDA must not be initialised before the fork"}
            else:
                from .prewarm import prewarm_compile

                try:
                    self.compile_warm = prewarm_compile(self.args.scratch_root)
                except Exception as exc:  # the jobs compile cold, as without it
                    self.compile_warm = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                self.compile_warm["on"] = on  # what asked for it: the "warm" op or a job
        return self.compile_warm

    def _write(self, data: bytes | memoryview) -> None:
        self.out.write(data)
        self.out.flush()

    def send_raw(self, data: bytes | memoryview) -> None:
        with self.lock:
            self._write(data)

    def send(self, obj: dict[str, Any]) -> None:
        self.send_locked(obj)

    def run_job(self, msg: dict[str, Any]) -> None:
        job = msg["job"]
        if job.get("warm_compile"):  # set by the judge on a job that compiles a baseline
            # From the second such job on: the warm-up (11-15 s) pays for itself from the
            # third compile (each saves 2-5 s); a judge with one compile never pays it.
            self.compile_jobs += 1
            if self.compile_jobs >= 2:
                self.warm_compile("job")
        unique = self.args.unique_uids and os.geteuid() == 0
        uid = random.randint(1 << 20, (1 << 30)) if unique else os.getuid()
        scratch = job_dirs(self.args.scratch_root, uid if unique else None)
        read_fd, write_fd = os.pipe()
        try:  # 1 MB chunks instead of 64 KB: large frames (big tensors) cross in fewer reads
            fcntl.fcntl(write_fd, F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        from ..channel import shared

        child_side, side = shared.channel() if self.inbox is not None else (None, None)
        # a job clocked by the runner hands it its memory (``clocking``), before any untrusted code runs
        mem_child, mem_side = socket.socketpair() if job.get("clocked") else (None, None)
        started = time.monotonic()
        mem_fd, sampler = -1, None
        with clocking.others_stopped(self) if mem_child is not None else contextlib.nullcontext(False) as expose:
            pid = os.fork()
            if pid == 0:  # child
                if mem_child is not None:
                    try:
                        clocking.hand_memory(mem_child, expose)
                        mem_side.close()
                    except BaseException:
                        os._exit(3)
                self._child(job, msg, uid, unique, scratch, read_fd, write_fd, child_side)
            if mem_child is not None:
                mem_child.close()
                mem_fd, sampler = clocking.take_memory(mem_side)
        os.close(write_fd)
        if child_side is not None:
            child_side.close()
        live = Job(self, msg, pid, uid, unique, read_fd, scratch, started,
                   shared.Inbox(side) if side is not None else None)
        live.mem_fd = mem_fd
        if sampler is not None:
            live.sampler = sampler
        if job.get("park") and live.watch(until_stop=True) == "stopped" and live.hold():
            # Parked before its timed pass (``turns``): held, stopped, until the judge
            # interleaves it with another job's pass or drops it.
            self.parked[live.id] = live
            self.send({"kind": "parked", "job": live.id})
            return
        if live.reason is None and live.status is None:
            live.watch()
        self.send(live.end())

    def send_locked(self, obj: dict[str, Any] | None, raw: bytes | memoryview | None = None,
                    fds: list[tuple[str, int]] | None = None) -> None:
        """One frame (and the raw frame after it), whole, whichever thread writes;
        ``fds``, the shared tensors a child sent (runner/channel/shared.py), go ahead of it."""
        from ..channel import shared
        from ..channel.wire import encode

        with self.lock:
            for token, fd in fds or ():
                try:
                    if self.inbox is not None:
                        shared.send(self.inbox.side, token, fd)
                finally:
                    os.close(fd)
            if obj is not None:
                self._write(encode(obj))
            if raw is not None:
                self._write(raw)

    def live_dirs(self) -> set[str]:
        return {os.path.basename(j.scratch) for j in [*self.parked.values(), *self.turning]}

    def _child(self, job: dict[str, Any], msg: dict[str, Any], uid: int, unique: bool, scratch: str,
               read_fd: int, write_fd: int, side: socket.socket | None) -> None:
        code = 0
        try:
            cuda_fork.unshield()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                os.setpriority(os.PRIO_PROCESS, 0, 0)  # a job gets no more than any other process
            except OSError:
                pass
            os.setsid()
            os.close(read_fd)
            from ..channel import shared

            log = os.open(os.path.join(scratch, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            # the files of this job's shared tensors (runner/channel/shared.py; no other job's): an input
            # the call leaves unchanged goes back to the judge as that same file
            own = shared.origin_fds(job) if side is not None else []
            shared.keep_only(own)
            kept = sorted({write_fd, *([side.fileno(), *own] if side is not None else [])})
            for low, high in zip([3, *(k + 1 for k in kept)], [*kept, 1024]):
                os.closerange(low, high)
            if unique:
                os.chown(os.path.join(scratch, "log.txt"), uid, uid)
            home = os.path.join(scratch, "home")
            for var in ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "XDG_CACHE_HOME"):
                os.environ[var] = home
            # A job's own uid has no passwd line: a library that asks for the user's name
            # (getpass.getuser: inductor's and dynamo's cache and debug directories) finds it
            # here instead of failing in pwd.getpwuid (every cuda reference job did on a GPU host).
            for var in ("USER", "LOGNAME"):
                os.environ[var] = job_user(uid)
            # its own directory: what a reference's job packs for its next run (runner/phases/compiled.py)
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(home, "inductor")
            # No precompiled C++ headers: inductor keeps them outside its cache directory, where a
            # job cannot reuse them, so every torch.compile baseline paid ~12 s for one even when
            # its kernels came from the packed cache (runner/phases/compiled.py): 15 s -> 2 s warm here.
            from .prewarm import no_precompiled_headers

            no_precompiled_headers()
            tempfile.tempdir = home  # the runner may have cached another (inductor asks gettempdir)
            os.chdir(os.path.join(scratch, "cwd"))
            confine.confine_child(
                uid, msg["memory_mb"], confine.cpu_budget(msg["timeout"], job.get("threads")), msg["max_procs"],
                limit_address_space=job["device"] == "cpu", own_uid=unique,
            )
            from ..channel.wire import write_fd as emit_to
            from . import child

            job["unique_uid"] = unique
            job["memory_mb"] = msg["memory_mb"]  # the limit its timing sets keep within (timed.timing_bytes)
            if side is None:
                child.run(job, lambda frame: emit_to(write_fd, frame))
            else:
                from ..phases import harness

                side.setblocking(True)
                harness.send_now = lambda values: shared.export(values, side)
                child.run(job, lambda frame: emit_to(write_fd, shared.export(frame, side)))
        except BaseException as exc:  # the judge sees a missing "done" and this
            try:
                from ..channel.wire import write_fd as emit_to

                emit_to(write_fd, {"kind": "error", "phase": "runner", "message": f"{type(exc).__name__}: {exc}"})
            except BaseException:
                pass
            code = 3
        finally:
            os._exit(code)

def job_user(uid: int) -> str:
    """The user name a job's child reports (``USER``, ``LOGNAME``): its uid's, or a made-up one."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"kforge-job-{uid}"


def job_dirs(scratch_root: str, uid: int | None) -> str:
    """A job's directory, removed when the job ends: ``log.txt``; ``home``, the
    child's own (HOME, TMPDIR, compiler caches); and ``cwd``, its working
    directory, empty and not writable by it. Nothing a job writes outlives it,
    and a file a job expects in its working directory is never there."""
    scratch = tempfile.mkdtemp(dir=scratch_root, prefix="job-")
    os.chmod(scratch, 0o711)
    home = os.path.join(scratch, "home")
    os.mkdir(home, 0o700)
    os.mkdir(os.path.join(scratch, "cwd"), 0o555)
    os.chmod(os.path.join(scratch, "cwd"), 0o555)
    if uid is not None:
        os.chown(home, uid, uid)
    return scratch


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Listen before the slow imports so that the judge can connect while they
    # run; its connection waits in the backlog until accepted below.
    listener = _listen(args.socket) if args.socket else None
    # Frames go to the judge on a private copy of stdout; anything printed
    # by libraries lands on stderr instead.
    out: BinaryIO = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    notes: list[str] = []
    if args.isolate:
        notes += confine.isolate_runner(args.scratch_root, args.hide, args.keep)
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        cuda_fork.prepare()
    # OpenMP's wait policy stays libgomp's default, as in a user's process: idle threads spin
    # a while before they sleep. Sleeping at once (OMP_WAIT_POLICY=PASSIVE, set here until
    # 2026-12-02) made every parallel region of eager's op-by-op forward wake its threads:
    # an LSTM's 6 x 512 steps took 515 ms a call against 144 ms in a plain process, and the
    # judge reported a 0.45x kernel as 1.24x (docs/benchmarks/history/2026-12-02.md). torch, inductor's code, the
    # native kernels and OpenBLAS share torch's one libgomp, so no two pools spin against
    # each other.
    import torch

    cuda: dict[str, Any] = {}
    if args.device == "cuda":
        # Asked by a child before the warm-up's imports (after the isolation: it says whether
        # CUDA works inside it); the runner itself never asks the CUDA runtime (cuda_fork.py).
        cuda = cuda_fork.probe()
        cuda_fork.shield(cuda)
    import triton

    from ..measure import timing
    from ..native import library as native
    from . import child  # noqa: F401  (imported once, inherited by every child)

    torch.set_num_threads(1)
    from .prewarm import prewarm

    prewarm(args.device)
    if args.device == "cuda":
        cuda.update(cuda_fork.fork_is_clean())
    confine._libc.prctl(confine.PR_SET_DUMPABLE, 0, 0, 0, 0)
    out, stdin = _channel(listener, out, notes)
    try:
        # The runner's clock stamps frames as it reads them: on a loaded machine it must get
        # a CPU promptly. Its threads (started below) inherit this; children go back to 0.
        os.setpriority(os.PRIO_PROCESS, 0, RUNNER_NICE)
    except OSError:
        notes.append("runner priority: unchanged (no privilege to raise it)")
    runner = Runner(args, out, notes)
    # A child that stops or exits wakes the job's watch at once (a turn ends with a stop).
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    runner.wake_fd = wake_r
    runner.send({
        "kind": "ready", "pid": os.getpid(), "notes": notes, "torch": str(torch.__version__),
        "triton": str(triton.__version__), "device": args.device,
        # Asked here, once: children inherit the answers and never start the compiler to learn them.
        "native": native.key_spec(), "cpu_model": timing.cpu_model(), "cpus": timing.granted_cpus(),
        "allocator": timing.allocator(),
        **({"cuda": cuda} if args.device == "cuda" else {}),
    })
    _serve(runner, stdin, args.kill_leftovers)


def _channel(listener: socket.socket | None, out: BinaryIO, notes: list[str]) -> tuple[BinaryIO, BinaryIO]:
    """Where frames go and messages come from: the judge's connection on the socket, else
    the private copy of stdout and stdin."""
    if listener is None:
        return out, os.fdopen(0, "rb")
    conn, _ = listener.accept()
    listener.close()
    out.close()
    notes.append("channel: unix socket")
    return conn.makefile("wb"), conn.makefile("rb")


def _serve(runner: Runner, stdin: BinaryIO, kill_leftovers: bool) -> None:
    """The judge's messages, one at a time, until it says exit or hangs up."""
    from ..channel import shared
    from ..channel.wire import MAX_FRAME_BYTES, read

    while True:
        try:
            msg = shared.resolve(read(stdin), runner.inbox, MAX_FRAME_BYTES)
        except Exception:
            return
        op = msg.get("op")
        if op == "run":
            runner.run_job(msg)
        elif op == "interleave":
            turns.interleave(runner, msg)
        elif op == "drop":
            turns.drop(runner, msg)
        elif op == "warm":
            runner.send({"kind": "warmed", **runner.warm_compile("op")})
        elif op == "exit":
            return
        if op in ("run", "interleave", "drop") and not runner.parked and kill_leftovers:
            # A child that left its process group (setsid, double fork)
            # survives killpg; with no uid of its own per child, the uid
            # is the only handle left on it.
            confine.kill_uid_except(os.getuid(), os.getpid())


def _listen(path: str) -> socket.socket:
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    # Whoever may enter the directory may connect: the driver guards the
    # directory, and may itself run under another uid than this runner.
    os.chmod(path, 0o666)
    listener.listen(1)
    return listener


if __name__ == "__main__":
    main()

