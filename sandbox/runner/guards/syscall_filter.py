"""The timed pass's system-call filter: a CPU candidate's process starts nothing new.

Before a ``cpu`` candidate's timed pass the runner installs a seccomp filter on
every thread of the candidate's process (``SECCOMP_FILTER_FLAG_TSYNC``). From
then on a new thread or process (``clone``, ``clone3``, ``fork``, ``vfork``), a
new program (``execve``, ``execveat``) and another process's memory or tracing
(``ptrace``, ``process_vm_readv``, ``process_vm_writev``) kill the whole process
with SIGSYS, whoever asks: Python, torch, or native code that found
``pthread_create`` through the ELF tables. The kernel enforces it, so nothing the
candidate reads or writes in its own memory undoes it; a filter cannot be
removed, and the process ends after the pass (the ablation is its last call).

Every pool an honest candidate uses has started by then: its correctness
trials, at the default size and at larger ones, ran first, and the timed sets
have the default size. The filter is the reason a ``runtime`` failure of a
timed pass reads "killed by SIGSYS" (``sandbox/drivers/base.py``).
It is a barrier, not an observer: the kernel holds it, outside the candidate's reach.

Calls from another architecture's table (the 32-bit ``int 0x80`` entry on
x86-64, the x32 numbers) kill the process too: a filter that checks numbers of
one table must not let another table's numbers through.

Only the standard library is used here.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

# <linux/audit.h> AUDIT_ARCH_* and the syscall numbers of each table
_TABLES: dict[str, tuple[int, int, dict[str, int]]] = {
    # machine: (audit arch, seccomp's own number, forbidden name -> number)
    "x86_64": (0xC000003E, 317, {"clone": 56, "fork": 57, "vfork": 58, "execve": 59, "ptrace": 101,
                                 "process_vm_readv": 310, "process_vm_writev": 311, "execveat": 322,
                                 "clone3": 435}),
    "aarch64": (0xC00000B7, 277, {"clone": 220, "execve": 221, "ptrace": 117, "process_vm_readv": 270,
                                  "process_vm_writev": 271, "execveat": 281, "clone3": 435}),
}
X32_BIT = 0x40000000  # x86-64's x32 ABI sets this bit in the number

# <linux/filter.h>, <linux/seccomp.h>
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # in struct seccomp_data
RET_KILL_PROCESS, RET_ALLOW = 0x80000000, 0x7FFF0000
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
PR_SET_NO_NEW_PRIVS = 38

FORBIDDEN = "a new thread or process, a new program, ptrace or another process's memory"


class FilterError(Exception):
    pass


def forbidden_calls(machine: str | None = None) -> dict[str, int]:
    """Name -> number of the calls the filter kills for, on this machine's table."""
    return dict(_table(machine)[2])


def _table(machine: str | None) -> tuple[int, int, dict[str, int]]:
    machine = machine or platform.machine()
    if machine not in _TABLES:
        raise FilterError(f"no system-call table for {machine!r} (known: {', '.join(_TABLES)})")
    return _TABLES[machine]


def program(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as classic BPF: (code, jump if true, jump if false, k) per instruction."""
    arch, _, calls = _table(machine)
    numbers = sorted(set(calls.values()))
    x86 = machine_is_x86(machine)
    kill_at = 4 + int(x86) + len(numbers) + 1  # the last instruction: arch, check, load, x32, numbers, allow
    prog: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _ARCH_OFFSET)]
    prog.append((_JEQ_K, 1, 0, arch))  # this table: go on; any other: kill
    prog.append((_RET_K, 0, 0, RET_KILL_PROCESS))
    prog.append((_LD_W_ABS, 0, 0, _NR_OFFSET))
    if x86:
        here = len(prog)
        prog.append((_JGE_K, kill_at - here - 1, 0, X32_BIT))
    for number in numbers:
        here = len(prog)
        prog.append((_JEQ_K, kill_at - here - 1, 0, number))
    prog.append((_RET_K, 0, 0, RET_ALLOW))
    assert len(prog) == kill_at
    prog.append((_RET_K, 0, 0, RET_KILL_PROCESS))
    return prog


def machine_is_x86(machine: str | None) -> bool:
    return (machine or platform.machine()) == "x86_64"


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> None:
    """Installs the filter on every thread of this process; raises FilterError if
    the kernel refuses (the timed pass does not run unfiltered)."""
    _, seccomp_nr, _ = _table(None)
    prog = program()
    raw = b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in prog)
    buf = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise FilterError(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
    libc.syscall.restype = ctypes.c_long
    ret = libc.syscall(ctypes.c_long(seccomp_nr), ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
                       ctypes.c_ulong(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if ret != 0:
        err = ctypes.get_errno()
        why = f"thread {ret} could not take it" if ret > 0 else os.strerror(err)
        raise FilterError(f"the timed pass's system-call filter could not be installed: {why}")
