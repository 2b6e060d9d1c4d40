"""CUDA and the runner's fork: the runner never touches the CUDA runtime before it forks.

The runner imports torch once and forks a child per job. A child forked from a
process in which the CUDA runtime was touched cannot use CUDA ("Cannot re-initialize
CUDA in forked subprocess"), and torch counts a process as such as soon as it asks
the runtime how many devices there are (``torch._C._cuda_getDeviceCount`` registers
its bad-fork handler): ``torch.cuda.is_available()`` and ``device_count()`` do that
whenever NVML cannot answer. On an H200 host (torch 2.11, 2026-12-04) a query made
while the runner imported torch's modules broke every job this way.

So a cuda runner:

* asks NVML first (``PYTORCH_NVML_BASED_CUDA_CHECK``, set before torch loads), which
  sets up no CUDA state;
* learns the device facts once from a probe child (which may touch CUDA: it exits),
  and while it runs, ``torch._C._cuda_getDeviceCount`` answers with those facts
  (``shield``) instead of asking the runtime; each job's child gets the real function
  back first thing after the fork (``unshield``);
* checks, in a second probe child forked after the warm-up, that the fork is clean
  (``torch._C._cuda_isInBadFork``), and reports both in its ready frame.

Only the standard library and torch are used here.
"""

from __future__ import annotations

import json
import os
from typing import Any

NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
_saved: dict[str, Any] = {}


def prepare() -> None:
    """Before torch is imported: availability and device counts from NVML."""
    os.environ[NVML_CHECK] = "1"


def _in_child(work: Any, timeout_s: float = 120.0) -> dict[str, Any]:
    """``work()``'s dict, computed in a forked child that exits after; an error's text otherwise."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe: whatever it does to CUDA dies with it
        os.close(r)
        try:
            out = work()
        except BaseException as exc:
            out = {"error": f"{type(exc).__name__}: {exc}"[:600]}
        try:
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as f:
        while chunk := f.read(65536):
            chunks.append(chunk)
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {"error": "the CUDA probe child sent nothing readable"}


def _device_facts() -> dict[str, Any]:
    import torch

    count = _saved.get("count", getattr(torch._C, "_cuda_getDeviceCount", None))
    if count is None:
        return {"devices": 0, "error": "torch was built without CUDA"}
    n = int(count())
    facts: dict[str, Any] = {"devices": n}
    if n:
        try:
            torch.zeros(1, device="cuda").add_(1)  # a context and a kernel: what every job will need
            torch.cuda.synchronize()
            facts["name"] = torch.cuda.get_device_name(0)
            facts["capability"] = list(torch.cuda.get_device_capability(0))
        except Exception as exc:
            facts["error"] = f"{type(exc).__name__}: {exc}"[:600]
    return facts


def probe() -> dict[str, Any]:
    """The device facts, asked by a forked child (call after the runner's isolation:
    it then also says whether CUDA works inside it)."""
    return _in_child(_device_facts)


def shield(facts: dict[str, Any]) -> None:
    """In the runner: the device count from ``facts``, never from the CUDA runtime."""
    import torch

    real = getattr(torch._C, "_cuda_getDeviceCount", None)
    if real is None or "count" in _saved:
        return
    _saved["count"] = real
    devices = int(facts.get("devices") or 0)
    torch._C._cuda_getDeviceCount = lambda: devices


def unshield() -> None:
    """In a job's child, right after the fork: the real device count again."""
    real = _saved.pop("count", None)
    if real is not None:
        import torch

        torch._C._cuda_getDeviceCount = real


def fork_is_clean() -> dict[str, Any]:
    """Whether a child forked now may still use CUDA (asked in a child: the flag is
    set there by torch's fork handler, if one was registered)."""
    def check() -> dict[str, Any]:
        import torch

        bad = getattr(torch._C, "_cuda_isInBadFork", None)
        return {"clean": not (bad is not None and bad())}

    found = _in_child(check)
    return found if "clean" in found else {"clean": False, "clean_error": found.get("error", "no answer")}
