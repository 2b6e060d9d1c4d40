"""Holding a job still while another one is timed (the runner's side of interleaved timing).

Two jobs are alive at once while their timed passes alternate (``turns``): the
reference's (eager and torch.compile) and the candidate's. While one is timed,
every process of the other is stopped (SIGSTOP: every thread of a process
stops, and a stopped process cannot fork), so that the waiting party cannot
run anything -- a candidate's busy thread or forked helper that would slow the
baselines down stops with it. Stopping is checked, not assumed: the scope is
listed again until every process in it reads stopped, and the CPU time of the
waiting scope is read before and after the other's turn (``cpu_ticks``): a
waiting job that ran anyway is reported, and so is a process that appeared in it.

Listing /proc is what a turn costs (0.3 ms with 85 processes here, five listings
a turn, a hundred turns an evaluation; more on a busy host), so a turn lists it
once (``confine.owners``), for the job that ends its turn and for every held job alike,
and a held scope keeps the processes its freeze confirmed stopped (``held``):
a stopped process cannot fork, so none can join it until it runs again.

A job's scope is what the runner can name: with a uid per child, every process
of that uid; with children sharing the runner's uid, the processes of the job's
session (each child starts one) and, in a container where the uid is the
sandbox's alone (``--kill-leftovers``), every process of it outside the active
job's session but the runner.

Only the standard library is used here.
"""

from __future__ import annotations

import os
import signal
import time

from . import confine

STOPPED_STATES = frozenset("TtZX")
FREEZE_ROUNDS = 200


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()
    except OSError:
        return None


# One pass over /proc (``confine.owners``): every process and the uid that owns it.
Listing = dict[int, int]


def session_of(pid: int) -> int | None:
    st = _stat(pid)
    return int(st[3]) if st else None


class Scope:
    """The processes of one job (see the module docstring). ``sessions`` are
    the sessions of every live job of the runner (shared between scopes)."""

    def __init__(self, pid: int, uid: int, unique: bool, sole_uid: bool, sessions: set[int]) -> None:
        self.pid, self.uid, self.unique, self.sole_uid, self.sessions = pid, uid, unique, sole_uid, sessions
        self.held: list[int] | None = None  # what the last freeze confirmed stopped, until thawed

    def pids(self, strays: bool = False, listing: Listing | None = None) -> list[int]:
        """The job's processes (from ``listing``, else from /proc now); with
        ``strays`` (to stop, never to continue), also those of a sole uid in no
        live job's session: one that left its session cannot be told apart, and
        stays stopped."""
        owner = confine.owners() if listing is None else listing
        if self.unique:
            return [pid for pid, uid in owner.items() if uid == self.uid]
        me = os.getpid()
        found = []
        for pid, uid in owner.items():
            if pid == me:
                continue
            sid = session_of(pid)
            if sid == self.pid:
                found.append(pid)
            elif strays and self.sole_uid and sid is not None and sid not in self.sessions and uid == self.uid:
                found.append(pid)
        return found


def freeze(scope: Scope, listing: Listing | None = None) -> bool:
    """SIGSTOP every process of ``scope`` until all read stopped (the first
    round from ``listing``, if given, every later one from /proc anew); False
    if some still ran after ``FREEZE_ROUNDS`` listings. The processes found
    stopped are the scope's ``held``."""
    for _ in range(FREEZE_ROUNDS):
        running = []
        pids = scope.pids(strays=True, listing=listing)
        listing = None
        for pid in pids:
            st = _stat(pid)
            if st is not None and st[0] not in STOPPED_STATES:
                running.append(pid)
        if not running:
            scope.held = pids
            return True
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        time.sleep(0.0002)
    return False


def thaw(scope: Scope, last: int | None = None) -> float:
    """SIGCONT every process of ``scope`` (those its freeze held, else those
    listed now), ``last`` after all others: the clock (monotonic) just before
    ``last`` was continued."""
    pids, scope.held = (scope.held if scope.held is not None else scope.pids()), None
    for pid in pids:
        if pid != last:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
    at = time.monotonic()
    if last is not None:
        try:
            os.kill(last, signal.SIGCONT)
        except OSError:
            pass
    return at


def cpu_ticks(scope: Scope, listing: Listing | None = None) -> dict[int, int]:
    """User + system CPU time of each of the scope's processes, in clock ticks:
    those of ``listing`` if given, else those its freeze held (none can have
    joined a stopped scope), else those listed now."""
    found = {}
    pids = scope.pids(strays=True, listing=listing) if listing is not None or scope.held is None else scope.held
    for pid in pids:
        st = _stat(pid)
        if st is not None:
            try:
                found[pid] = int(st[11]) + int(st[12])
            except (IndexError, ValueError):
                continue
    return found


def ran(before: dict[int, int], after: dict[int, int]) -> int:
    """Clock ticks the scope ran between two ``cpu_ticks`` readings; a process
    that appeared in between counts whole, and at least one tick (it was forked:
    something of the scope ran, if for less than a tick)."""
    return sum(max(0, t - before[pid]) if pid in before else max(1, t) for pid, t in after.items())


def stop_others(uid: int, sole_uid: bool, sessions: set[int]) -> list[int] | None:
    """Stops (SIGSTOP, confirmed) every process beside the runner that may run untrusted
    code: with a sole uid, every other process of it; otherwise those of the live jobs'
    sessions. The processes it stopped (``cont`` them after; those already stopped, a held
    job's, stay as they were), or None, with all of them continued, if some would not stop."""
    me, stopped = os.getpid(), set()
    for _ in range(FREEZE_ROUNDS):
        running = []
        for pid, owner in confine.owners().items():
            if pid == me or owner != uid or not (sole_uid or session_of(pid) in sessions):
                continue
            st = _stat(pid)
            if st is not None and st[0] not in STOPPED_STATES:
                running.append(pid)
        if not running:
            return sorted(stopped)
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
            except OSError:
                pass
        time.sleep(0.0002)
    cont(sorted(stopped))
    return None


def cont(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
