"""Large tensors beside the frames (sandbox/runner/channel/shared.py): sealed memory files
on a side channel. What a reader accepts is a file nobody can change any more, of
exactly the size its placeholder names; anything else is a protocol error."""

from __future__ import annotations

import fcntl
import mmap
import os
import socket
import subprocess
import sys
import textwrap

import pytest
import torch

from sandbox.runner.channel import shared, wire

BIG = (512, 1024)  # 2 MB of float32: above SHARE_MIN_BYTES


def _pair() -> tuple[socket.socket, shared.Inbox]:
    send, recv = shared.channel()
    return send, shared.Inbox(recv)


def test_large_tensors_travel_beside_the_frame_and_read_back_equal() -> None:
    send, inbox = _pair()
    big, small = torch.randn(*BIG), torch.arange(5)
    frame = {"kind": "trial", "outputs": [big, small], "pair": (big.double(), 3), "note": "x"}
    placed = shared.export(frame, send)
    assert isinstance(placed["outputs"][0], dict) and placed["outputs"][1] is small  # small stays inline
    assert wire.tensor_bytes(placed) == small.numel() * small.element_size()
    got = shared.resolve(wire.decode(wire.encode(placed)[wire.HEADER.size:]), inbox, wire.MAX_FRAME_BYTES)
    assert torch.equal(got["outputs"][0], big) and torch.equal(got["pair"][0], big.double())
    assert isinstance(got["pair"], tuple) and got["pair"][1] == 3 and got["note"] == "x"
    got["outputs"][0].add_(1)  # the reader's copy is its own (copy on write)
    assert not inbox.fds


def test_a_shared_file_can_no_longer_be_written_by_anyone() -> None:
    fd = shared._memfd(torch.randn(*BIG))
    try:
        assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & shared.SEALS == shared.SEALS
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"x", 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        with pytest.raises(PermissionError):  # nor mapped to be written later
            mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        with pytest.raises(PermissionError):  # nor unsealed
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, 0x0010)  # F_SEAL_FUTURE_WRITE
    finally:
        os.close(fd)


def test_a_file_its_pages_keep_busy_is_not_sealed_and_its_tensor_goes_inside_the_frame(monkeypatch) -> None:
    # The kernel refuses a write seal (EBUSY) while a writable shared mapping of the file
    # exists: the answer it gives, after its own wait, while anything holds one of its pages.
    fd = os.memfd_create("x", os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, 4096)
        view = mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        assert not shared.seal(fd, tries=1)
        assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE == 0
        view.close()
        assert shared.seal(fd)  # nothing holds it now
    finally:
        os.close(fd)
    monkeypatch.setattr(shared, "seal", lambda fd, tries=shared.SEAL_TRIES: False)
    send, inbox = _pair()
    big = torch.randn(*BIG)
    placed = shared.export({"out": big}, send)
    assert placed["out"] is big
    got = shared.resolve(wire.decode(wire.encode(placed)[wire.HEADER.size:]), inbox, wire.MAX_FRAME_BYTES)
    assert torch.equal(got["out"], big) and not inbox.fds


def _placeholder(token: str, shape: list[int]) -> dict:
    return {shared.KEY: token, "dtype": "float32", "shape": shape}


def _send_file(send: socket.socket, token: str, fd: int) -> None:
    shared.send(send, token, fd)
    os.close(fd)


def test_an_unsealed_memory_file_is_refused() -> None:
    send, inbox = _pair()
    fd = os.memfd_create("x", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4 * 16)
    _send_file(send, "a" * 16, fd)
    with pytest.raises(wire.WireError, match="sealed"):
        shared.resolve({"t": _placeholder("a" * 16, [16])}, inbox, wire.MAX_FRAME_BYTES)


def test_a_regular_file_is_refused(tmp_path) -> None:
    send, inbox = _pair()
    path = tmp_path / "f"
    path.write_bytes(bytes(64))
    _send_file(send, "b" * 16, os.open(path, os.O_RDONLY))
    with pytest.raises(wire.WireError, match="sealed"):
        shared.resolve({"t": _placeholder("b" * 16, [16])}, inbox, wire.MAX_FRAME_BYTES)


def test_a_size_other_than_the_placeholders_is_refused() -> None:
    send, inbox = _pair()
    _send_file(send, "c" * 16, shared._memfd(torch.zeros(*BIG)))
    with pytest.raises(wire.WireError, match="bytes"):
        shared.resolve({"t": _placeholder("c" * 16, [BIG[0] * BIG[1] * 2])}, inbox, wire.MAX_FRAME_BYTES)


def test_unsent_repeated_or_oversized_tensors_are_refused() -> None:
    send, inbox = _pair()
    with pytest.raises(wire.WireError, match="never sent"):
        shared.resolve([_placeholder("d" * 16, [4])], inbox, wire.MAX_FRAME_BYTES)
    _send_file(send, "e" * 16, shared._memfd(torch.zeros(*BIG)))
    with pytest.raises(wire.WireError, match="twice"):
        shared.resolve([_placeholder("e" * 16, list(BIG))] * 2, inbox, wire.MAX_FRAME_BYTES)
    with pytest.raises(wire.WireError, match="limit"):
        shared.resolve([_placeholder("e" * 16, list(BIG))], inbox, 1024)
    _send_file(send, "f" * 16, shared._memfd(torch.zeros(*BIG)))
    with pytest.raises(wire.WireError, match="malformed"):
        shared.resolve([{shared.KEY: "f" * 16, "dtype": "object", "shape": [1]}], inbox, wire.MAX_FRAME_BYTES)


def test_records_without_a_descriptor_are_a_protocol_error() -> None:
    send, inbox = _pair()
    send.sendall(b"g" * shared.TOKEN_BYTES)
    with pytest.raises(wire.WireError, match="malformed record"):
        inbox.drain()


def test_another_process_sends_and_the_reader_maps_without_a_copy() -> None:
    """Across a fork-exec, as between a job's child, the runner and the judge."""
    send, inbox = _pair()
    code = textwrap.dedent(f"""
        import socket, sys, torch
        from sandbox.runner.channel import shared, wire
        side = socket.socket(fileno={send.fileno()})
        frame = shared.export({{"out": torch.full({BIG}, 2.5)}}, side)
        wire.write_fd(1, frame)
    """)
    out = subprocess.run([sys.executable, "-c", code], pass_fds=(send.fileno(),), capture_output=True,
                         check=True, timeout=120).stdout
    got = shared.resolve(wire.decode(out[wire.HEADER.size:]), inbox, wire.MAX_FRAME_BYTES)
    assert torch.equal(got["out"], torch.full(BIG, 2.5))


def test_a_received_tensor_passed_on_unchanged_is_sent_as_its_own_file() -> None:
    """The judge passes the reference's trial inputs on to the candidate's job: the same
    sealed file goes, unless the judge's copy was written to (copy on write) since."""
    send, inbox = _pair()
    got = shared.resolve(shared.export({"x": torch.randn(*BIG)}, send), inbox, wire.MAX_FRAME_BYTES)["x"]
    origin = os.fstat(shared._ORIGIN[got.data_ptr()][0]).st_ino

    def sent_inodes(values: list[torch.Tensor]) -> list[int]:
        placed = shared.export(values, send)
        inbox.drain()
        inodes = [os.fstat(inbox.fds[p[shared.KEY]]).st_ino for p in placed]
        assert all(torch.equal(a, b) for a, b in zip(shared.resolve(placed, inbox, wire.MAX_FRAME_BYTES), values))
        return inodes

    same, copy = sent_inodes([got, got.clone()])
    assert same == origin and copy != origin
    got.add_(1)  # the reader's own pages now: its file no longer holds these values
    (changed,) = sent_inodes([got])
    assert changed != origin



def test_an_unwritten_mapping_is_known_from_its_page_table_and_any_write_counts() -> None:
    """The file goes back without comparing its bytes when no page of the mapping was
    written (pagemap); a written page, even with the same bytes, sends the comparison's way."""
    send, inbox = _pair()
    got = shared.resolve(shared.export({"x": torch.randn(*BIG)}, send), inbox, wire.MAX_FRAME_BYTES)["x"]
    fd, nbytes, _ = shared._ORIGIN[got.data_ptr()]
    assert shared._mapping_untouched(got.data_ptr(), nbytes, fd)
    float(got.sum())  # read: its pages are the file's
    assert shared._mapping_untouched(got.data_ptr(), nbytes, fd)
    other = os.memfd_create("other")
    os.ftruncate(other, nbytes)
    assert not shared._mapping_untouched(got.data_ptr(), nbytes, other)  # not that file's mapping
    assert not shared._mapping_untouched(got.data_ptr() + shared.PAGE, nbytes, fd)  # not from offset 0
    os.close(other)
    got[-1] = got[-1].clone()  # the same bytes, written: the process's own page now
    assert not shared._mapping_untouched(got.data_ptr(), nbytes, fd)
    assert shared._same_file(got) == fd  # the bytes compared: still the file's
    got[0] += 1
    assert shared._same_file(got) is None


LARGE_RELU = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


rows = ROWS
cols = COLS


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

NATIVE_RELU = '''import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r"""
#include <stdint.h>
void relu(const float* x, float* y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""
lib = load_c(SRC, ["void relu(const float* x, float* y, int64_t n)"], name="relu")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = OUT
        lib.relu(x, y, x.numel())
        return y
'''


def relu_problem(rows: int, cols: int) -> str:
    """A ReLU problem over rows x cols (also benchmarks/judge_large.py's)."""
    return LARGE_RELU.replace("ROWS", str(rows)).replace("COLS", str(cols))


def native_relu(out: str = "torch.empty_like(x)") -> str:
    """An honest native ReLU kernel; ``out``: where it writes."""
    return NATIVE_RELU.replace("OUT", out)


@pytest.mark.parametrize("out, verdict", [("torch.empty_like(x)", "pass"), ("x", "fail")],
                         ids=["out_of_place", "into_its_input"])
def test_inputs_and_outputs_of_megabytes_travel_beside_the_frames_and_are_checked(out: str, verdict: str) -> None:
    """4 MB a tensor, through the process sandbox: every tensor a frame carries is a shared
    file, and a kernel that writes its input is still caught (the input comes back as a
    file of its own, not the one the judge sent)."""
    from sandbox import EvalOptions, Judge

    assert 1024 * 1024 * 4 >= shared.SHARE_MIN_BYTES  # the input and output go as shared files
    with Judge(warm=False) as judge:
        result = judge.evaluate(relu_problem(1024, 1024), native_relu(out), "relu_large.py", "cand.py",
                                EvalOptions(device="cpu"))
    checks = result.to_json()["checks"]
    assert result.verdict == verdict, result.reasons
    assert checks["inputs_unchanged"] == verdict, checks


@pytest.mark.parametrize("module, name", [("sandbox.runner.channel.shared", "_same_file"),
                                          ("sandbox.runner.channel.shared", "_mapping_untouched"),
                                          ("sandbox.runner.channel.shared", "export"),
                                          ("sandbox.runner.phases.harness", "taken"),
                                          ("sandbox.runner.phases.harness", "send_now")])
def test_replacing_what_sends_tensors_to_the_judge_is_tampering(module: str, name: str) -> None:
    """A candidate that swapped the sender could send an input it wrote to back as the file
    it came in (the judge would see it unchanged): ``no_tampering`` names the replacement."""
    import importlib

    from sandbox.runner.guards.tamper import TamperGuard

    mod = importlib.import_module(module)
    guard = TamperGuard()
    original = getattr(mod, name)
    setattr(mod, name, lambda *a, **k: None)
    try:
        assert f"{module}.{name}" in guard.changed()
    finally:
        setattr(mod, name, original)
    assert guard.changed() == []
