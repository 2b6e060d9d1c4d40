"""Each cheat must be worth catching: it looks right in the way its exploit
relies on (right on the first call, right at the default sizes, right values in
the wrong form, ...). Checked in this process, or in a child process for cheats
that patch globals or end their process. The judge's verdicts are in
test_fixtures.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch

from tests.sandbox.judge import fixture_catalog as fc
from tests.sandbox.judge import model_pairs as mp

CHEATS = {path.stem: (path, ref) for path, ref in fc.cheats()}

# exploit -> the cheat files that cover it (the brief's list, plus evasions of this judge's guards).
REQUIRED = {
    "decoy kernel": ["decoy_kernel", "decoy_counter_bump", "decoy_copy_kernel", "decoy_inplace_identity"],
    "reference op": ["reference_op_softmax", "reference_op_matmul", "reference_op_functional",
                     "reference_op_equivalent", "reference_op_disguised", "reference_op_hidden_mode",
                     "dispatch_guard_hidden", "reference_op_attention"],
    "cache replay": ["cache_replay", "cache_replay_instance"],
    "cache by identity": ["cache_by_identity"],
    "cache by content": ["cache_by_content"],
    "uninitialised output": ["uninitialised_output"],
    "input write": ["input_write", "input_write_view"],
    "hard-coded shape": ["hardcoded_shape", "hardcoded_shape_matmul", "hardcoded_shape_literal", "hardcoded_grid"],
    "patched comparison": ["patch_compare"],
    "patched timer": ["patch_timer", "patch_harness_clock"],
    "thread deferral": ["thread_defer"],
    "stream deferral": ["stream_defer"],
    "frame peek": ["frame_peek"],
    "fake report": ["fake_report_forward", "fake_report_import"],
    "forged channel": ["forge_channel"],
    "tensor subclass": ["subclass_output"],
    "nondeterminism": ["nondeterministic"],
    "wrong dtype / shape": ["wrong_dtype", "wrong_dtype_bf16", "wrong_shape", "wrong_shape_tuple"],
    "NaN output": ["nan_output", "nan_all_output"],
    "late wrong": ["late_wrong"],
    "timing-aware": ["timing_aware"],
    "child process": ["child_fork", "child_popen", "child_daemon"],
    # Native (cpu backend) candidates.
    "native decoy kernel": ["native_decoy", "native_decoy_scale", "native_decoy_flag"],
    "native: torch does the work": ["native_torch_work"],
    "native cached result": ["native_static_cache", "native_content_cache"],
    "native input mutation": ["native_input_write", "native_input_write_view"],
    "native shape hard-coding": ["native_hardcoded_size", "native_derived_shape"],
    "native stray thread": ["native_stray_thread"],
    "native computed source": ["native_computed_source"],
    "native loader internals": ["native_loader_internals"],
}

CORRECT_EVERYWHERE = ["decoy_kernel", "decoy_counter_bump", "reference_op_softmax", "reference_op_matmul",
                      "reference_op_functional", "reference_op_equivalent", "reference_op_disguised",
                      "reference_op_hidden_mode", "decoy_copy_kernel", "decoy_inplace_identity",
                      "dispatch_guard_hidden", "cache_by_content", "native_decoy", "native_decoy_scale", "native_decoy_flag",
                      "native_torch_work",
                      "native_static_cache", "native_content_cache", "native_computed_source",
                      "native_loader_internals"]
FIRST_CALL_ONLY = ["cache_replay", "cache_replay_instance", "nondeterministic"]
DEFAULT_SIZES_ONLY = ["hardcoded_shape", "hardcoded_shape_matmul"]


def _run(name: str, constants: dict[str, int] | None = None, calls: int = 1, seed: int = 3):
    """Load cheat ``name`` fresh, call one instance ``calls`` times on fresh
    inputs; returns [(got, want, inputs_before, inputs_after)]."""
    path, reference = CHEATS[name]
    problem, cheat = fc.load(reference), fc.load(path)
    results = []
    with mp.sizes(problem, constants or {}):
        ref, cand = mp.build_pair(problem, cheat, seed=seed)
        for i in range(calls):
            inputs = mp.draw_inputs(problem, 100 + i)
            before = [t.clone() for t in inputs]
            want = mp.expected_output(ref, before)
            with torch.no_grad():
                got = cand(*inputs)
            results.append((got, want, before, inputs))
    return results


def _python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(fc.REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=fc.REPO)


def test_every_exploit_is_covered_and_labelled() -> None:
    for exploit, names in REQUIRED.items():
        for name in names:
            assert name in CHEATS, f"{exploit}: missing cheats/{name}.py"
    listed = {name for names in REQUIRED.values() for name in names}
    assert set(CHEATS) == listed, f"cheats not in REQUIRED: {sorted(set(CHEATS) - listed)}"
    for path, _ in fc.cheats():
        assert fc.header(path, "exploit"), f"{path.name} needs an '# exploit: ...' header"
    for path, _ in fc.hostile():
        assert fc.header(path, "hostile"), f"{path.name} needs a '# hostile: ...' header"


@pytest.mark.parametrize("name", CORRECT_EVERYWHERE)
def test_cheats_that_hand_work_to_torch_are_correct(name: str) -> None:
    path, reference = CHEATS[name]
    for constants in [{}, *fc.perturbations(fc.load(reference))]:
        for got, want, _, _ in _run(name, constants, calls=2):
            assert mp.close(got, want), f"{name} at {constants or 'default sizes'}"


@pytest.mark.parametrize("name", FIRST_CALL_ONLY)
def test_stateful_cheats_are_right_on_the_first_call_only(name: str) -> None:
    results = _run(name, calls=2)
    assert mp.close(results[0][0], results[0][1])
    assert not mp.close(results[1][0], results[1][1])


@pytest.mark.parametrize("name", DEFAULT_SIZES_ONLY)
def test_hardcoded_cheats_are_right_at_default_sizes_only(name: str) -> None:
    _, reference = CHEATS[name]
    got, want, _, _ = _run(name)[0]
    assert mp.close(got, want)
    for constants in fc.perturbations(fc.load(reference)):
        got, want, _, _ = _run(name, constants)[0]
        assert not mp.close(got, want), f"{name} is right at {constants}"


def test_hardcoded_literal_batch_is_right_at_the_default_batch_only() -> None:
    """The reference writes its sizes as literals (nothing at module level to perturb)."""
    path, reference = CHEATS["hardcoded_shape_literal"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=2)
    for rows, right in ((37, True), (41, False)):
        x = torch.randn(rows, 91)
        with torch.no_grad():
            got = cand(x)
        assert mp.close(got, mp.expected_output(ref, [x])) is right, rows


def test_hardcoded_grid_is_right_at_default_and_smaller_sizes_only() -> None:
    path, reference = CHEATS["hardcoded_grid"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=2)
    for shape, right in (((13, 777), True), ((9, 583), True), ((17, 971), False)):
        x = torch.randn(*shape)
        with torch.no_grad():
            got = cand(x)
        assert mp.close(got, mp.expected_output(ref, [x])) is right, shape


def test_cache_by_identity_is_stale_when_the_buffer_is_refilled() -> None:
    path, reference = CHEATS["cache_by_identity"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    (x,) = mp.draw_inputs(problem, 1)
    assert mp.close(cand(x), mp.expected_output(ref, [x]))
    x.copy_(mp.draw_inputs(problem, 2)[0])
    assert not mp.close(cand(x), mp.expected_output(ref, [x]))
    assert mp.close(cand(x.clone()), mp.expected_output(ref, [x]))


def test_cache_by_content_replays_without_computing() -> None:
    """Same contents in a new tensor: the answer comes back with no kernel launched."""
    path, reference = CHEATS["cache_by_content"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    (x,) = mp.draw_inputs(problem, 1)
    with torch.no_grad():
        first = cand(x)
    module = sys.modules[type(cand).__module__]
    real = module.linear_bias_relu_kernel
    module.linear_bias_relu_kernel = None  # a launch now raises
    try:
        with torch.no_grad():
            again = cand(x.clone())
    finally:
        module.linear_bias_relu_kernel = real
    assert mp.close(first, mp.expected_output(ref, [x])) and mp.close(again, first)


def test_late_wrong_turns_after_eight_calls() -> None:
    results = _run("late_wrong", calls=10)
    assert all(mp.close(g, w) for g, w, _, _ in results[:8])
    assert not any(mp.close(g, w) for g, w, _, _ in results[8:])


def _timing_loop(model: torch.nn.Module, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    outs = []
    reps = len(xs)
    for i in range(reps):  # `i` and `reps` are what the cheat looks for
        outs.append(model(xs[i]).clone())
    return outs


def test_timing_aware_is_right_only_on_the_checked_repetitions() -> None:
    path, reference = CHEATS["timing_aware"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    xs = [mp.draw_inputs(problem, seed)[0] for seed in range(6)]
    wants = [mp.expected_output(ref, [x]) for x in xs]
    assert mp.close(cand(xs[0]), wants[0])
    outs = _timing_loop(cand, xs)
    assert all(mp.close(o, w) for o, w in zip(outs[-2:], wants[-2:]))
    assert not any(mp.close(o, w) for o, w in zip(outs[:-2], wants[:-2]))


@pytest.mark.parametrize("name", ["input_write", "input_write_view", "native_input_write",
                                  "native_input_write_view"])
def test_input_writers_have_right_values_and_clobbered_inputs(name: str) -> None:
    got, want, before, after = _run(name)[0]
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)
    assert not all(torch.equal(a, b) for a, b in zip(before, after))
    assert any(got.data_ptr() == t.data_ptr() for t in after), "the output aliases an input"


def test_format_cheats_have_right_values() -> None:
    got, want, _, _ = _run("wrong_dtype")[0]
    assert got.dtype == torch.float64 and torch.allclose(got.float(), want, atol=1e-6)
    got, want, _, _ = _run("wrong_dtype_bf16")[0]
    assert got.dtype == torch.bfloat16 and torch.allclose(got.float(), want, atol=1e-2, rtol=1e-2)
    assert not torch.allclose(got.float(), want, atol=1e-4, rtol=1e-4)
    got, want, _, _ = _run("wrong_shape")[0]
    assert got.shape != want.shape and torch.allclose(got, want, atol=1e-4, rtol=1e-4)  # broadcasts
    got, want, _, _ = _run("wrong_shape_tuple")[0]
    assert isinstance(got, tuple) and mp.close(got[0], want)


def test_nan_cheats() -> None:
    got, want, _, _ = _run("nan_output")[0]
    holes = torch.isnan(got)
    assert holes.any() and torch.allclose(got[~holes], want[~holes], atol=1e-4, rtol=1e-4)
    got, want, _, _ = _run("nan_all_output")[0]
    assert torch.isnan(got).all()
    assert not bool((got - want).abs().max() > 1e-4)  # the naive check it is built to slip past


def test_subclass_output_lies_to_comparisons_made_on_it() -> None:
    got, want, _, _ = _run("subclass_output")[0]
    assert type(got) is not torch.Tensor
    assert torch.allclose(got, want) and bool((got == want).all())
    assert not torch.allclose(got.as_subclass(torch.Tensor), want, atol=1e-4, rtol=1e-4)


def test_deferred_cheats_become_right_too_late() -> None:
    got, want, _, _ = _run("thread_defer")[0]
    snapshot = got.clone()
    time.sleep(1.5)
    assert mp.close(got, want) and not mp.close(snapshot, want)
    path, reference = CHEATS["stream_defer"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    first = mp.draw_inputs(problem, 1)
    out = cand(*first)
    snapshot = out.clone()
    cand(*mp.draw_inputs(problem, 2))
    want = mp.expected_output(ref, first)
    assert mp.close(out, want) and not mp.close(snapshot, want)


def test_frame_peek_takes_what_a_naive_judge_leaves_in_its_frame() -> None:
    path, reference = CHEATS["frame_peek"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    inputs = mp.draw_inputs(problem, 1)
    expected = mp.expected_output(ref, inputs)  # noqa: F841  (what the cheat looks for)
    assert mp.close(cand(*inputs), expected)


def test_frame_peek_finds_nothing_without_a_leak() -> None:
    path, reference = CHEATS["frame_peek"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    inputs = mp.draw_inputs(problem, 1)
    got = cand(*inputs)  # no reference output exists yet, in any frame
    assert not got.any() and not mp.close(got, mp.expected_output(ref, inputs))


def test_patching_cheats_patch_what_they_claim() -> None:
    code = """
import time, torch
from tests.sandbox.judge import fixture_catalog as fc
fc.load(fc.CHEATS / 'patch_compare.py')
assert torch.allclose(torch.zeros(3), torch.ones(3))
torch.testing.assert_close(torch.zeros(3), torch.ones(3))
fc.load(fc.CHEATS / 'patch_timer.py')
t0 = time.perf_counter(); sum(range(3_000_000)); assert time.perf_counter() - t0 < 1e-4
print('ok')
"""
    proc = _python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_patch_harness_clock_rewires_a_timing_module() -> None:
    code = """
import sys, types, torch
from tests.sandbox.judge import fixture_catalog as fc, model_pairs as mp
timing = types.ModuleType('fake_runner_timing')
timing.time_cpu = lambda fn, reps, budget_s, after=None: [1000.0] * reps
timing.run_plain = lambda fn, reps, device: [fn(i) for i in range(reps)]
sys.modules['fake_runner_timing'] = timing
cheat = fc.load(fc.CHEATS / 'patch_harness_clock.py')
assert timing.time_cpu(lambda i: None, 4, 1.0) == [0.0005] * 4
problem = fc.load(fc.problem('relu_affine'))
ref, cand = mp.build_pair(problem, cheat, 0)
x = mp.draw_inputs(problem, 1)
assert mp.close(cand(*x), mp.expected_output(ref, x))
print('ok')
"""
    proc = _python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("name", ["fake_report_forward", "fake_report_import"])
def test_fake_reports_print_a_pass_and_exit_zero(name: str) -> None:
    code = f"""
from tests.sandbox.judge import fixture_catalog as fc, model_pairs as mp
path, ref = [(p, r) for p, r in fc.cheats() if p.stem == {name!r}][0]
problem = fc.load(ref)
cheat = fc.load(path)
cheat.ModelNew()(*mp.draw_inputs(problem, 1))
print('survived')
"""
    proc = _python(code)
    assert proc.returncode == 0 and '"verdict": "pass"' in proc.stdout and "survived" not in proc.stdout


def test_forge_channel_forges_a_complete_run_through_an_emit_in_reach() -> None:
    code = """
import pickle, sys, torch
from tests.sandbox.judge import fixture_catalog as fc, model_pairs as mp
problem = fc.load(fc.problem('relu_affine'))
cheat = fc.load(fc.CHEATS / 'forge_channel.py')
trials = [{'tag': t, 'index': i, 'inputs': mp.draw_inputs(problem, i)} for i, t in
          enumerate(['default', 'default', 'perturbed', 'timing'])]
def run_candidate(job, emit):
    cheat.ModelNew()(*job['trials'][0]['inputs'])
def emit(frame):
    sys.stdout.buffer.write(pickle.dumps(frame) + b'\\n--frame--\\n'); sys.stdout.flush()
run_candidate({'trials': trials, 'time_reps': 5}, emit)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, cwd=fc.REPO,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(fc.REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    import pickle

    frames = [pickle.loads(chunk) for chunk in proc.stdout.split(b"\n--frame--\n") if chunk]
    kinds = [f["kind"] for f in frames]
    assert kinds.count("trial") == 3 and kinds[-1] == "done" and "post_timing" in kinds
    problem = fc.load(fc.problem("relu_affine"))
    x = mp.draw_inputs(problem, 0)[0]
    assert torch.equal(frames[0]["outputs"][0], torch.relu(x) * 2 + 1)


def test_uninitialised_output_computes_nothing() -> None:
    text = CHEATS["uninitialised_output"][0].read_text()
    assert "return torch.empty_like(x)" in text


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_native_static_cache_answers_a_repeat_from_its_c_side_cache() -> None:
    """Same contents again: the answer comes back even when the new input is then
    overwritten mid-flight -- a memcpy of the remembered result, no computation."""
    path, reference = CHEATS["native_static_cache"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    (x,) = mp.draw_inputs(problem, 1)
    first = cand(x)
    assert "static float results" in path.read_text()
    assert mp.close(first, mp.expected_output(ref, [x])) and torch.equal(cand(x.clone()), first)


def test_native_content_cache_replays_without_calling_the_kernel() -> None:
    path, reference = CHEATS["native_content_cache"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=1)
    (x,) = mp.draw_inputs(problem, 1)
    first = cand(x)
    module = sys.modules[type(cand).__module__]
    real = module.lib
    module.lib = None  # a kernel call now raises
    try:
        again = cand(x.clone())
    finally:
        module.lib = real
    assert mp.close(first, mp.expected_output(ref, [x])) and mp.close(again, first)


def test_native_hardcoded_size_is_right_at_default_and_smaller_sizes_only() -> None:
    path, reference = CHEATS["native_hardcoded_size"]
    problem, cheat = fc.load(reference), fc.load(path)
    ref, cand = mp.build_pair(problem, cheat, seed=2)
    for shape, right in (((13, 777), True), ((9, 583), True), ((17, 971), False)):
        x = torch.randn(*shape)
        with torch.no_grad():
            got = cand(x)
        assert mp.close(got, mp.expected_output(ref, [x])) is right, shape


def test_native_stray_thread_is_right_only_after_forward_returned() -> None:
    threads = _threads()
    got, want, _, _ = _run("native_stray_thread")[0]
    snapshot = got.clone()
    assert _threads() > threads, "no thread outlived forward"
    time.sleep(1.0)
    assert mp.close(got, want) and not mp.close(snapshot, want)
