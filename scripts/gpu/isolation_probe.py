"""Which confinement stops CUDA in a forked child, variant by variant (run as root from the
project root on a GPU host; one JSON line per variant on stdout).

The runner's real path is judged by ``kforge eval`` / ``selftest``; this names the cause when
it fails. Each variant forks a child that confines itself as named and then forks a grandchild
(as the runner forks a job) that makes a CUDA tensor and a kernel:

  plain            no confinement
  isolated         confine.isolate_runner, the runner's mount plan
  isolated_job     the same, the grandchild under a uid of its own (confine_child)
  proc_read_only   the plan with /proc read-only too (the plan before 2026-12-04)
  net_only         a private network namespace alone
  user_no_groups   no confinement, the grandchild as uid/gid 65534 without supplementary groups
  user_dev_groups  the same, in the groups that own /dev/nvidia* (an ordinary user with GPU access)
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile

os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
sys.path.insert(0, os.getcwd())

from sandbox.drivers.process import DEFAULT_HIDE, runtime_paths  # noqa: E402
from sandbox.runner.process import confine  # noqa: E402

VARIANTS = ("plain", "isolated", "isolated_job", "proc_read_only", "net_only", "user_no_groups", "user_dev_groups")


def device_gids() -> list[int]:
    import glob

    return sorted({os.stat(p).st_gid for p in glob.glob("/dev/nvidia*")})


def cuda_kernel(own_uid: bool, user: str = "") -> str:
    if user:
        os.setgroups(device_gids() if user == "user_dev_groups" else [])
        os.setgid(65534)
        os.setuid(65534)
    if own_uid:
        os.environ["USER"] = os.environ["LOGNAME"] = "kforge-probe"
        confine.confine_child(random.randint(1 << 20, 1 << 30), 8192, 60, 256, False)
    import torch

    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    return f"ok: {float((x * 2).sum())} on {torch.cuda.get_device_name(0)}"


def confine_as(variant: str) -> list[str]:
    if variant == "net_only":
        confine._check(confine._libc.unshare(confine.CLONE_NEWNET), "unshare")
        return ["net namespace"]
    if variant == "plain" or variant.startswith("user_"):
        return []
    scratch = tempfile.mkdtemp(prefix="kforge-probe-")
    os.chmod(scratch, 0o777)
    notes = confine.isolate_runner(scratch, list(DEFAULT_HIDE), runtime_paths())
    if variant == "proc_read_only":
        confine._mount(None, "/proc", None, confine.MS_REMOUNT | confine.MS_BIND | confine.MS_RDONLY
                       | confine.MS_NOSUID | confine.MS_NODEV | confine.MS_NOEXEC)
        notes.append("/proc read-only")
    return notes


def in_child(work, *args) -> str:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = work(*args)
        except BaseException as exc:
            out = f"{type(exc).__name__}: {str(exc)[:400]}"
        os.write(w, out.encode() if isinstance(out, str) else out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read().decode(errors="replace")
    os.waitpid(pid, 0)
    return data


def variant_run(variant: str) -> bytes:
    notes = confine_as(variant)
    import torch  # noqa: F401  (imported after the confinement, as the runner does)

    found = in_child(cuda_kernel, variant == "isolated_job", variant if variant.startswith("user_") else "")
    return json.dumps({"variant": variant, "notes": notes, "cuda": found, "device_gids": device_gids()}).encode()


if __name__ == "__main__":
    for name in sys.argv[1:] or VARIANTS:
        print(in_child(variant_run, name), flush=True)
