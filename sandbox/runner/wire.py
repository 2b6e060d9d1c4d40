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


def write_fd(fd: int, obj: Any) -> None:
    """Writes one frame without copying the payload: a frame of large tensors
    (hundreds of MB under --fit-memory) must not need three copies of itself in
    a child whose address space is capped."""
    buf = _payload(obj)
    with buf.getbuffer() as payload:
        for view in (memoryview(HEADER.pack(payload.nbytes)), payload):
            while view:
                n = os.write(fd, view)
                view = view[n:]


def read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise WireError("channel closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read(stream: BinaryIO, max_bytes: int = MAX_FRAME_BYTES) -> Any:
    (size,) = HEADER.unpack(read_exact(stream, HEADER.size))
    if size > max_bytes:
        raise WireError(f"frame of {size} bytes exceeds the limit of {max_bytes}")
    return decode(read_exact(stream, size))


class FrameBuffer:
    """Incremental decoder for a non-blocking fd: feed bytes, pop whole frames."""

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_bytes

    def feed(self, data: bytes) -> list[Any]:
        self._buf.extend(data)
        frames = []
        while len(self._buf) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buf)
            if size > self._max:
                raise WireError(f"frame of {size} bytes exceeds the limit of {self._max}")
            if len(self._buf) < HEADER.size + size:
                break
            payload = bytes(self._buf[HEADER.size : HEADER.size + size])
            del self._buf[: HEADER.size + size]
            frames.append(decode(payload))
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)
