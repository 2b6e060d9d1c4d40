"""Where a clocked job's calls ran (``runner/measure/sampling.py``) and what the judge makes of it
(``verdict/sampled.py``): real counters on a real child, the verdict on plain frames."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import time

import pytest

from sandbox.runner.measure import sampling
from sandbox.verdict import sampled
from sandbox.verdict.checks import FAIL, PASS, SKIPPED

PR_TASK_PERF_EVENTS_DISABLE = 31


def _child(steps: list, sock: socket.socket) -> None:
    code = 1
    try:
        signal.alarm(60)  # a child that hangs dies; the parent then sees it exit, not stop
        fds, why = sampling.open_counters()
        socket.send_fds(sock, [(why or "").encode() or b"-"], fds)
        for fd in fds:
            os.close(fd)
        os.kill(os.getpid(), signal.SIGSTOP)
        for step in steps:
            step()
            os.kill(os.getpid(), signal.SIGSTOP)  # stopped after each call, as a clocked job is
        code = 0
    finally:
        os._exit(code)


def _wait_stopped(pid: int, sampler: sampling.Sampler | None) -> None:
    """Until the child stops; with a sampler, its buffers emptied every 50 ms meanwhile, as
    the runner's watch does."""
    while sampler is not None:
        reaped, status = os.waitpid(pid, os.WUNTRACED | os.WNOHANG)
        if reaped:
            assert os.WIFSTOPPED(status)
            return
        time.sleep(0.05)
        sampler.collect()
    assert os.WIFSTOPPED(os.waitpid(pid, os.WUNTRACED)[1])


def _sampled(steps: list, collect: bool = False) -> list[sampling.Tally]:
    """Runs each step in a child between stops, as the runner's clock does; each step's tally."""
    mine, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        _child(steps, theirs)
    _, fds, _, _ = socket.recv_fds(mine, 1024, 64)
    sampler = sampling.Sampler(fds)
    assert sampler.live, sampler.why_not
    tallies = []
    try:
        assert os.WIFSTOPPED(os.waitpid(pid, os.WUNTRACED)[1])
        for _ in steps:
            sampler.before("party")
            t0 = time.monotonic()
            os.kill(pid, signal.SIGCONT)
            _wait_stopped(pid, sampler if collect else None)
            tallies.append(sampler.after("party", (time.monotonic() - t0) * 1000))
        os.kill(pid, signal.SIGCONT)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    finally:
        sampler.close()
    return tallies


def _torch_work() -> None:
    import torch

    torch.set_num_threads(1)  # no OpenMP pool in a forked child of the test process
    x = torch.randn(600, 600)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        x @ x


def _own_work(seconds: float = 0.3) -> None:
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1


def _hidden_torch_work() -> None:
    # what a candidate could try: switch off every counter it owns, then work on a thread
    import threading

    ctypes.CDLL(None).prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0)
    worker = threading.Thread(target=_torch_work)
    worker.start()
    worker.join()


def test_the_counters_place_each_calls_time_and_no_thread_of_the_job_can_switch_them_off() -> None:
    torch_call, own_call, hidden_call = _sampled([_torch_work, _own_work, _hidden_torch_work])
    # 0.3 s of a thread at a 0.2 ms period: ~1500 samples a call on a quiet host, about a third
    # of that where another run shares the 2 CPUs (496 seen): counters switched off give ~0
    assert torch_call.counts["torch"] > 200, torch_call.frame()
    assert torch_call.counts["torch"] > 0.8 * sum(torch_call.counts.values()), torch_call.frame()
    assert own_call.counts["torch"] < 0.05 * sum(own_call.counts.values()), own_call.frame()
    assert own_call.counts["python"] > 200, own_call.frame()
    # the prctl reaches only counters the caller owns; these were opened by a thread that exited
    assert hidden_call.counts["torch"] > 200, hidden_call.frame()
    # the period follows the longest call: ~300 ms / SAMPLES_PER_CALL
    assert hidden_call.period_ns > sampling.MIN_PERIOD_NS


def test_a_long_first_call_loses_no_samples_when_the_runner_empties_the_buffers_as_it_watches() -> None:
    """1.5 s at the shortest period is ~7500 samples, more than a buffer holds: left alone the
    kernel drops the rest; emptied every 50 ms (``Sampler.collect``) nothing is lost."""
    def long_call() -> None:
        _own_work(1.5)

    (left,) = _sampled([long_call])
    assert left.lost > 0, left.frame()
    (watched,) = _sampled([long_call], collect=True)
    assert watched.lost == 0 and sum(watched.counts.values()) > 5000, watched.frame()


def test_an_openmp_runtime_is_its_own_kind_and_a_missing_mapping_is_unmapped() -> None:
    c = sampling.Classifier()
    assert c.kind(os.path.join(c.torch_dir, "lib", "libtorch_cpu.so")) == "torch"
    assert c.kind(os.path.join(c.torch_dir, "lib", "libgomp.so.1")) == "openmp"
    assert c.kind("/usr/lib/x86_64-linux-gnu/libopenblas.so.0") == "other"
    assert c.kind("") == "anonymous"


def _timing(*calls: dict) -> dict:
    return {"clock": "runner", "samples": list(calls)}


def _call(torch: int = 0, other: int = 0, python: int = 0, lost: int = 0, openmp: int = 0,
          period_ns: int = sampling.MIN_PERIOD_NS) -> dict:
    return {"counts": {"torch": torch, "other": other, "python": python, "openmp": openmp}, "lost": lost,
            "period_ns": period_ns, "top": [["libtorch_cpu.so", torch], ["kernel.so", other]]}


def test_the_verdict_compares_the_foreign_share_with_the_credited_torch_share() -> None:
    honest = _timing(*[_call(torch=1, other=20, python=5)] * 5)
    assert sampled.check(honest, {"torch_share_flops": 0.0}).outcome == PASS
    hidden = _timing(*[_call(torch=15, other=5, python=5)] * 5)
    check = sampled.check(hidden, {"torch_share_flops": 0.0})
    assert check.outcome == FAIL and "libtorch_cpu.so" in check.detail, check
    # torch work the data flow saw and credited is allowed its share
    assert sampled.check(hidden, {"torch_share_flops": 0.5}).outcome == PASS
    # threads waiting in the OpenMP runtime dilute nothing
    waiting = _timing(*[_call(torch=15, other=5, python=5, openmp=200)] * 5)
    assert sampled.check(waiting, {"torch_share_flops": 0.0}).outcome == FAIL


def test_glue_on_short_calls_is_under_the_floor() -> None:
    """Half of a short call in torch (its output allocated, its input made contiguous) is
    ~400 us of CPU a call at most: glue, not work moved into torch."""
    glue = _timing(*[_call(torch=2, other=1, python=1)] * 30)
    check = sampled.check(glue, {"torch_share_flops": 0.0})
    assert check.outcome == PASS and "50% in torch" in check.detail, check
    # the same shares on calls ten times as long: 4 ms of torch a call
    longer = _timing(*[_call(torch=2, other=1, python=1, period_ns=10 * sampling.MIN_PERIOD_NS)] * 30)
    assert sampled.check(longer, {"torch_share_flops": 0.0}).outcome == FAIL
    assert sampled.check(_timing(_call(torch=3, other=1)), {}).outcome == SKIPPED  # too few samples


def test_lost_samples_and_missing_counters_fail_closed() -> None:
    lossy = _timing(*[_call(other=30, lost=5)] * 3)
    assert sampled.check(lossy, {}).outcome == FAIL
    some_lossy = _timing(*[_call(torch=30, lost=5)] * 2, *[_call(other=30)] * 2)
    assert sampled.check(some_lossy, {}).outcome == PASS  # judged on the calls that lost nothing
    blind = _timing({"error": "perf_event_open on CPU 0: Operation not permitted"})
    check = sampled.check(blind, {})
    assert check.outcome == FAIL and "Operation not permitted" in check.detail
    assert sampled.check({"clock": "job"}, {}).outcome == SKIPPED


@pytest.mark.parametrize("kind", sampling.KINDS)
def test_every_kind_is_one_the_verdict_reads_or_leaves_out_on_purpose(kind: str) -> None:
    assert kind in sampled.FOREIGN or kind in ("python", "openmp", "anonymous", "other")


def test_glue_is_allowed_per_kernel_launched_up_to_a_cap() -> None:
    """A pipeline of many small kernels pays glue for each (CI read ~880 us a call beyond credit
    for a 26-kernel transformer): the floor grows with the launches a recorded call made, up to
    ``GLUE_LAUNCHES`` of them, so that empty launches cannot buy room for torch work."""
    period = sampling.MIN_PERIOD_NS
    us_per_sample = period / 1000
    # ~2x the floor foreign beyond credit, on a short call
    per_call = int(2.2 * sampled.FLOOR_US / us_per_sample)
    calls = _timing(*[_call(torch=per_call, other=per_call // 3, python=per_call // 4)] * 20)
    assert sampled.check(calls, {"torch_share_flops": 0.0}).outcome == FAIL
    many = sampled.check(calls, {"torch_share_flops": 0.0}, launches=26)
    assert many.outcome == PASS, many
    # work well past what glue for the cap reaches fails however many kernels were launched
    heavy = int(3 * sampled.allowance_us(sampled.GLUE_LAUNCHES) / us_per_sample)
    hidden = _timing(*[_call(torch=heavy, other=heavy // 3)] * 20)
    check = sampled.check(hidden, {"torch_share_flops": 0.0}, launches=10_000)
    assert check.outcome == FAIL and f"glue for 10000 kernel launches a call is allowed " \
        f"{sampled.allowance_us(10_000):.0f} us" in check.detail, check
    assert sampled.allowance_us(10_000) == sampled.allowance_us(sampled.GLUE_LAUNCHES)


def test_the_fewest_launches_of_any_recorded_call_decide() -> None:
    from sandbox.verdict.work_share import fewest_launches

    post = {"provenance_reps": [{"kernel_launches": 30}, {"kernel_launches": 2}, {}]}
    assert fewest_launches({"kernel_launches": 26}, post) == 2
    assert fewest_launches({"kernel_launches": 26}, None) == 26
    assert fewest_launches({}, None) == 0
