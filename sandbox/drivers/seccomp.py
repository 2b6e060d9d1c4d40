"""The system-call profile of the docker sandbox's containers.

Docker's default profile refuses ``perf_event_open`` to a container without
CAP_PERFMON, and the judge needs it: the runner samples where a clocked job's
calls ran (``sandbox/runner/measure/sampling.py``), with counters the job opens on itself.
Docker applies one profile or none, so this one is written here: every call is
allowed except those below, refused with EPERM (ENOSYS for ``clone3``, whose flags
a filter cannot read, so that the C library falls back to ``clone``). The
container also runs with no capabilities, no new privileges, no network and a
read-only root, so most of what is listed would fail anyway; listing it keeps
the kernel's code for it out of reach. Calls from other architectures' tables
(32-bit x86 on a 64-bit host) match no listed architecture and kill the caller.

The kernel still bounds what a counter may see: with ``kernel.perf_event_paranoid``
at 2 a process samples only user-space addresses of processes it may trace.
"""

from __future__ import annotations

import json
import platform

DENIED = (
    # the kernel's own state: modules, clocks, reboot, swap, accounting, keyrings
    "acct", "add_key", "adjtimex", "clock_adjtime", "clock_settime", "settimeofday", "stime",
    "create_module", "delete_module", "finit_module", "init_module", "get_kernel_syms", "query_module",
    "kexec_file_load", "kexec_load", "keyctl", "request_key", "reboot", "swapon", "swapoff", "syslog",
    "sysfs", "_sysctl", "uselib", "ustat", "vhangup", "nfsservctl", "lookup_dcookie", "quotactl",
    "quotactl_fd",
    # mounts and namespaces
    "mount", "umount", "umount2", "pivot_root", "setns", "unshare", "fsconfig", "fsmount", "fsopen",
    "fspick", "move_mount", "open_tree", "mount_setattr", "name_to_handle_at", "open_by_handle_at",
    # another process's memory, raw I/O, and large kernel surfaces a kernel needs none of
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "ioperm", "iopl", "vm86", "vm86old",
    "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init",
    "pidfd_getfd",
)
# clone's namespace flags: a new namespace of any kind is refused.
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_ARCHES = {"x86_64": ["SCMP_ARCH_X86_64"], "aarch64": ["SCMP_ARCH_AARCH64"]}


def profile() -> dict:
    """The profile, as docker's ``seccomp=`` security option takes it (JSON)."""
    eperm = 1
    rules: list[dict] = [{"names": list(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": eperm},
                         {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]
    for flag in NAMESPACE_FLAGS:
        rules.append({"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": eperm,
                      "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]})
    return {"defaultAction": "SCMP_ACT_ALLOW",
            "architectures": _ARCHES.get(platform.machine(), []),
            "syscalls": rules}


def security_opt() -> str:
    return "seccomp=" + json.dumps(profile(), separators=(",", ":"))
