"""Frames between the judge and its runners: a large frame streams straight into
the fd (no copy of its payload in memory) and reads back like a small one."""

from __future__ import annotations

import os
import threading

import torch

from sandbox.runner.channel import wire


def _round_trip(objs: list[object]) -> list[object]:
    r, w = os.pipe()
    got: list[object] = []
    stream = os.fdopen(r, "rb")
    reader = threading.Thread(target=lambda: got.extend(wire.read(stream) for _ in objs))
    reader.start()
    for obj in objs:
        wire.write_fd(w, obj)
    os.close(w)
    reader.join(timeout=60)
    stream.close()
    return got


def test_streamed_and_buffered_frames_read_back_in_order(monkeypatch):
    monkeypatch.setattr(wire, "STREAM_ABOVE", 100_000)
    big = {"trials": [{"inputs": [torch.randn(256, 512)], "seed": 3}] * 2, "note": "streamed"}
    small = {"kind": "trial", "outputs": [torch.arange(5)]}
    assert wire.tensor_bytes(big) > wire.STREAM_ABOVE > wire.tensor_bytes(small)
    first, second, third = _round_trip([big, small, big])
    for got in (first, third):
        assert got["note"] == "streamed" and torch.equal(got["trials"][1]["inputs"][0], big["trials"][1]["inputs"][0])
    assert torch.equal(second["outputs"][0], small["outputs"][0])


def test_frame_buffer_pops_whole_frames_from_pieces():
    data = wire.encode({"x": torch.ones(3)}) + wire.encode({"y": 2})
    buf = wire.FrameBuffer()
    frames = [f for i in range(0, len(data), 7) for f in buf.feed(data[i:i + 7])]
    assert [sorted(f) for f in frames] == [["x"], ["y"]] and buf.pending == 0


def test_a_large_frame_spills_to_a_private_file_and_maps_back(monkeypatch, tmp_path):
    monkeypatch.setattr(wire, "STREAM_ABOVE", 10_000)
    monkeypatch.setattr(wire, "SPILL_DIR", str(tmp_path))
    big = {"outputs": [torch.randn(64, 256)], "index": 4}
    data = wire.encode({"kind": "phase"}) + wire.encode(big) + wire.encode({"y": 2})
    buf = wire.FrameBuffer()
    frames = [f for i in range(0, len(data), 4096) for f in buf.feed(data[i:i + 4096])]
    assert [f.get("kind") or f.get("index") or f.get("y") for f in frames] == ["phase", 4, 2]
    assert torch.equal(frames[1]["outputs"][0], big["outputs"][0])
    assert list(tmp_path.iterdir()) == [], "the spill file is unlinked once mapped"
