"""Confinement applied inside the sandbox, by the runner itself.

Two layers:

* ``isolate_runner`` runs once in the warm runner, before torch is imported:
  a private network namespace (no interface but a downed loopback, so no
  network at all) and a private mount namespace in which every mount is
  read-only except the scratch root and procfs (what the CUDA driver writes
  there: ``WRITABLE_PROC``; its system-wide parts stay read-only), and paths
  that may hold secrets are covered by empty ones.
* ``confine_child`` runs in each forked child before untrusted code loads:
  resource limits, a uid of its own (so the process-count limit is per child
  and the judge can kill the whole tree by uid), no new privileges.

Only the standard library is used here.
"""

from __future__ import annotations

import ctypes
import os
import resource
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4

_libc = ctypes.CDLL(None, use_errno=True)


class ConfineError(Exception):
    pass


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    ret = _libc.mount(
        src.encode() if src else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    _check(ret, f"mount {target}")


def _mount_points() -> list[tuple[str, set[str]]]:
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            target = fields[4].encode().decode("unicode_escape")
            points.append((target, set(fields[5].split(","))))
    return points


def _remount_readonly(target: str, opts: set[str]) -> None:
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    flags |= MS_NOSUID if "nosuid" in opts else 0
    flags |= MS_NODEV if "nodev" in opts else 0
    flags |= MS_NOEXEC if "noexec" in opts else 0
    try:
        _mount(None, target, None, flags)
    except ConfineError:
        pass  # a mount we cannot see into (covered, or not ours); it stays as it is


# The one mount left writable besides the scratch root: procfs. The CUDA driver names the
# threads it starts by writing /proc/<pid>/task/<tid>/comm; under a read-only /proc every
# CUDA call in an isolated runner's children failed ("cudaGetDeviceCount ... Error 304: OS
# call failed", an H200 host, 2026-12-04). What a job may write there is its own process's
# files (its uid's); the system-wide parts stay read-only, as Docker keeps them.
WRITABLE_PROC = "/proc"
READ_ONLY_PROC = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def _read_only_bind(path: str) -> None:
    _mount(path, path, None, MS_BIND | MS_REC)
    _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def isolate_runner(scratch_root: str, hide: list[str], keep: list[str]) -> list[str]:
    """Enter private net + mount namespaces; returns notes on what was done."""
    notes = []
    flags = CLONE_NEWNET | CLONE_NEWNS
    if os.geteuid() != 0:
        flags |= CLONE_NEWUSER
    _check(_libc.unshare(flags), "unshare")
    notes.append("network: private namespace, no interfaces up")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Keep handles on runtime paths that a hidden directory would cover.
    held = {p: os.open(p, os.O_PATH) for p in keep if os.path.exists(p)}
    for target in hide:
        if os.path.isdir(target) and not os.path.islink(target):
            _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755")
            notes.append(f"hidden: {target}")
    for path, fd in held.items():
        if any(path.startswith(h.rstrip("/") + "/") for h in hide):
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    # Files last: a secret file inside a re-exposed path stays covered.
    for target in hide:
        if os.path.isfile(target):
            _mount("/dev/null", target, None, MS_BIND)
            notes.append(f"hidden: {target}")
    points = _mount_points()
    for target, opts in points:
        if target != WRITABLE_PROC:
            _remount_readonly(target, opts)
    mounted = {target for target, _ in points}
    for path in READ_ONLY_PROC:
        if path not in mounted and os.path.exists(path):
            _read_only_bind(path)
    notes.append(f"{WRITABLE_PROC}: a process's own files writable (thread names), {', '.join(READ_ONLY_PROC)} read-only")
    # The scratch root is the one writable place.
    _mount(scratch_root, scratch_root, None, MS_BIND)
    _mount(None, scratch_root, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
    notes.append(f"filesystem: read-only except {scratch_root}")
    return notes


def cpu_budget(timeout_s: float, wanted_threads: int | None) -> int:
    """A job's ``RLIMIT_CPU``: its wall timeout on each thread it may run (a backstop, the wall
    timeout ends a job first). The timeout alone ended 2-thread references halfway through
    their time with SIGXCPU (KernelBench level3/10 and 45 on a 2-CPU host)."""
    from ..measure.timing import granted_cpus

    n = granted_cpus()
    if wanted_threads:
        n = max(1, min(int(wanted_threads), n))
    return (int(timeout_s) + 5) * n


def confine_child(uid: int, memory_mb: int, cpu_seconds: int, max_procs: int, limit_address_space: bool,
                  own_uid: bool = False) -> None:
    """Limits for one forked child; after this it cannot regain privileges. ``own_uid``: the
    uid is this child's alone (nothing else runs under it yet)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
    if limit_address_space:
        # The child inherits the runner's mappings (torch alone maps several GB
        # of address space), so the budget is on top of what is mapped now.
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
        cap = vm * 1024 + memory_mb * (1 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # RLIMIT_NPROC counts every process and thread of the real uid. A uid of its own starts
    # with this one process; a uid shared with the runner and the judge (a runner that is not
    # root, or a container's single user) already has theirs: the budget is on top of those,
    # or a job of a batch run as an ordinary user on an H200 could not start the CUDA driver's
    # threads ("cudaGetDeviceCount ... OS call failed", 2026-12-04).
    limit = max_procs + (1 if own_uid else tasks_of_uid(os.getuid()))
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)


def tasks_of_uid(uid: int) -> int:
    """Processes and threads whose real uid is ``uid`` (what RLIMIT_NPROC counts)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if line.startswith(("Uid:", "Threads:")))
            if int(fields["Uid"].split()[0]) == uid:
                total += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return total


def owners() -> dict[int, int]:
    """Every process in /proc now and the uid that owns it."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                found[int(name)] = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
    return found


def processes_of_uid(uid: int) -> list[int]:
    return [pid for pid, owner in owners().items() if owner == uid]


def kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every process of ``uid`` until none is left (forks race us)."""
    if uid == 0:
        raise ConfineError("refusing to kill uid 0")
    for _ in range(rounds):
        pids = processes_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        os.sched_yield()


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return True  # gone already


def kill_uid_except(uid: int, keep_pid: int, patience_s: float = 1.0) -> None:
    """SIGKILL every process of ``uid`` but ``keep_pid``, for a runner that
    shares its uid with its children (a container's single user).

    A runner that is a container's pid 1 inherits every orphan, so the dead
    are reaped here too: zombies would count against the container's process
    limit. Zombies cannot be signalled; we wait for them to reach us."""
    if uid == 0:
        raise ConfineError("refusing to kill uid 0")
    deadline = time.monotonic() + patience_s
    while True:
        _reap_children()
        pids = [p for p in processes_of_uid(uid) if p != keep_pid]
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            if not _is_zombie(pid):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        time.sleep(0.001)


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def private_rss_of_uid_mb(uid: int) -> float:
    """Proportional set size of the uid's processes: pages shared copy-on-write
    with the runner (or between forks) count once in total, not once per fork."""
    total_kb = 0
    for pid in processes_of_uid(uid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total_kb += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return total_kb / 1024


_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def resident_of_uid_mb(uid: int) -> float:
    """Resident set size of the uid's processes summed (shared pages once per
    process): read from the kernel's counters (``statm``), without the page-table
    walk of ``smaps_rollup`` that holds a process's memory lock meanwhile."""
    total = 0
    for pid in processes_of_uid(uid):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total * _PAGE_MB
