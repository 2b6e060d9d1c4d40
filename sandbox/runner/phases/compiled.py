"""torch.compile's cache of one reference, carried between its judge runs
(``sandbox/baseline_cache.py`` keeps it judge-side, per reference source).

A reference's job unpacks what the judge kept into inductor's cache directory
before compiling, and packs the directory once compiled -- before any candidate
runs (a parked job packs it before it parks), so no candidate's process is
ever alive while what is packed could change.
"""

from __future__ import annotations

import io
import os
import tarfile
from typing import Any

import torch

MAX_BYTES = 32 << 20


def cache_dir() -> str | None:
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR")


def unpack(data: Any) -> None:
    """Inductor's cache as a job of this reference left it (a uint8 tensor of a tar)."""
    root = cache_dir()
    if root is None or not isinstance(data, torch.Tensor) or data.numel() > MAX_BYTES:
        return
    os.makedirs(root, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data.numpy().tobytes()), mode="r:gz") as tar:
            tar.extractall(root, filter="data")
    except (tarfile.TarError, OSError, ValueError):
        return  # a compile from scratch, as without it


def pack() -> torch.Tensor | None:
    root = cache_dir()
    if root is None or not os.path.isdir(root):
        return None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in sorted(os.listdir(root)):
            if name != "locks":
                tar.add(os.path.join(root, name), arcname=name)
    data = buf.getvalue()
    if not data or len(data) > MAX_BYTES:
        return None
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def emit_packed(emit: Any) -> None:
    packed = pack()
    if packed is not None:
        emit({"kind": "compiled_cache", "data": packed})
