"""Framed messages between the judge, the warm runner and its forked children.

A frame is an 8-byte big-endian length followed by a ``torch.save`` payload.
Frames are always read back with ``torch.load(weights_only=True)``: the side
that reads never unpickles arbitrary objects, only tensors, numbers, strings
and the plain containers that hold them. The judge relies on that, because
frames written by a sandboxed process are untrusted.
"""

from __future__ import annotations

import io
import os
import struct
import tempfile
from typing import Any, BinaryIO

import torch

HEADER = struct.Struct(">Q")
MAX_FRAME_BYTES = 4 << 30


class WireError(Exception):
    """The peer closed the channel or sent something that is not a frame."""


def _payload(obj: Any) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf


def encode(obj: Any) -> bytes:
    payload = _payload(obj).getvalue()
    return HEADER.pack(len(payload)) + payload


def decode(payload: bytes) -> Any:
    try:
        return torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception as exc:  # a malformed or hostile frame
        raise WireError(f"unreadable frame: {exc}") from exc


# Above this many tensor bytes a frame is serialised twice (once to count, once
# straight into the fd) instead of once into memory: a job or trial of GBs
# (KernelBench sizes under --fit-memory) must not need a second copy of itself.
STREAM_ABOVE = 64 << 20


class _Sink:
    """A write-only file for torch.save: counts the bytes, or writes them to an fd."""

    def __init__(self, fd: int | None = None) -> None:
        self.fd, self.n = fd, 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if self.fd is not None:
            _write_all(self.fd, view)
        self.n += view.nbytes
        return view.nbytes

    def flush(self) -> None:
        pass


def tensor_bytes(obj: Any) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


def write_fd(fd: int, obj: Any) -> None:
    """Writes one frame without a copy of its payload in memory."""
    if tensor_bytes(obj) > STREAM_ABOVE:
        counted = _Sink()
        torch.save(obj, counted)
        _write_all(fd, HEADER.pack(counted.n))
        written = _Sink(fd)
        torch.save(obj, written)
        if written.n != counted.n:  # the reader would misframe everything after
            raise WireError(f"frame changed size while written ({counted.n} -> {written.n} bytes)")
        return
    buf = _payload(obj)
    with buf.getbuffer() as payload:
        _write_all(fd, HEADER.pack(payload.nbytes))
        _write_all(fd, payload)


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise WireError("channel closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class _Spill:
    """A large frame's payload on its way to disk: read back with ``mmap=True``
    its tensors are file-backed pages the kernel can drop and re-read, not
    anonymous memory, so a judge holding GBs of trial tensors (KernelBench sizes
    under --fit-memory) does not run the machine out of memory. The file is
    private to the reading process (0600, unlinked once mapped)."""

    def __init__(self, size: int) -> None:
        fd, self.path = tempfile.mkstemp(prefix="kforge-frame-", dir=SPILL_DIR)
        self.file = os.fdopen(fd, "wb")
        self.left = size

    def write(self, data: Any) -> Any:
        """Takes what belongs to this frame; returns the rest of ``data``."""
        view = memoryview(data)
        take = min(self.left, view.nbytes)
        self.file.write(view[:take])
        self.left -= take
        return view[take:]

    def load(self) -> Any:
        self.file.close()
        try:
            return torch.load(self.path, weights_only=True, map_location="cpu", mmap=True)
        except Exception as exc:  # a malformed or hostile frame
            raise WireError(f"unreadable frame: {exc}") from exc
        finally:
            os.unlink(self.path)

    def abandon(self) -> None:
        self.file.close()
        os.unlink(self.path)


SPILL_DIR: str | None = None  # tempfile's default: /tmp


def read(stream: BinaryIO, max_bytes: int = MAX_FRAME_BYTES) -> Any:
    (size,) = HEADER.unpack(read_exact(stream, HEADER.size))
    if size > max_bytes:
        raise WireError(f"frame of {size} bytes exceeds the limit of {max_bytes}")
    if size <= STREAM_ABOVE:
        return decode(read_exact(stream, size))
    spill = _Spill(size)
    try:
        while spill.left:
            chunk = stream.read(min(spill.left, 1 << 20))
            if not chunk:
                raise WireError("channel closed")
            spill.write(chunk)
    except BaseException:
        spill.abandon()
        raise
    return spill.load()


class FrameBuffer:
    """Incremental decoder for a non-blocking fd: feed bytes, pop whole frames.
    A frame larger than STREAM_ABOVE goes to a spill file as it arrives."""

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_bytes
        self._spill: _Spill | None = None

    def feed(self, data: bytes) -> list[Any]:
        frames = []
        rest: Any = data
        while True:
            if self._spill is not None:
                rest = self._spill.write(rest)
                if self._spill.left:
                    break
                spill, self._spill = self._spill, None
                frames.append(spill.load())
                continue
            if len(rest):
                self._buf.extend(rest)
                rest = b""
            if len(self._buf) < HEADER.size:
                break
            (size,) = HEADER.unpack_from(self._buf)
            if size > self._max:
                raise WireError(f"frame of {size} bytes exceeds the limit of {self._max}")
            if size > STREAM_ABOVE and len(self._buf) < HEADER.size + size:
                self._spill = _Spill(size)
                rest = bytes(memoryview(self._buf)[HEADER.size:])
                self._buf.clear()
                continue
            if len(self._buf) < HEADER.size + size:
                break
            payload = bytes(memoryview(self._buf)[HEADER.size : HEADER.size + size])
            del self._buf[: HEADER.size + size]
            frames.append(decode(payload))
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf) + (self._spill.left if self._spill is not None else 0)
