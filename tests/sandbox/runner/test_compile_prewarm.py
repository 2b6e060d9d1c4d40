"""A runner that judges again pays torch.compile's first-use costs once
(runner/process/prewarm.prewarm_compile), before forking the jobs that compile a
baseline: it must come out of that holding no extra thread (a fork copies only the
calling thread, so a thread holding a lock then would leave it held in every child)
and no process (a compile worker a child could hand work to), and the jobs forked
after it still compile into and pack their own cache directory."""

from __future__ import annotations

from sandbox.judge import EvalOptions, Judge
from tests.sandbox.judge import fixture_catalog as fc

REFERENCE = fc.problem("relu_affine").read_text()
HONEST = (fc.HONEST / "relu_affine__native.py").read_text()


def _options() -> EvalOptions:
    return EvalOptions(device="cpu", trials=2, time_reps=5, timing_sets=2, compile_baseline=True)


def test_a_warmed_runner_holds_no_new_thread_or_process_and_its_jobs_compile_and_pack(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KFORGE_JUDGE_BASELINE_CACHE", str(tmp_path / "baselines"))
    with Judge(warm=True) as judge:
        warmed = judge.warm_runner(_options())
        assert warmed["kind"] == "warmed" and "error" not in warmed, warmed
        assert warmed["threads"] == warmed["threads_before"], warmed
        assert warmed["children"] == 0, warmed
        assert judge.warm_runner(_options()) == warmed  # once per runner
        first = judge.evaluate(REFERENCE, HONEST, options=_options())
        assert first.verdict == "pass", first.reasons
        assert first.to_json()["timing"]["baseline_compile"]["median_ms"] > 0
        # the first job's inductor cache was packed and kept judge-side, for the next run
        kept = list((tmp_path / "baselines").rglob("*"))
        assert any(p.is_file() and p.stat().st_size > 1000 for p in kept), kept
        second = judge.evaluate(REFERENCE, HONEST, options=_options())
        assert second.verdict == "pass", second.reasons
        assert second.to_json()["timing"]["baseline_compile"]["median_ms"] > 0


def test_a_kept_runner_warms_at_its_second_compile_and_a_single_compile_never_warms(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KFORGE_JUDGE_BASELINE_CACHE", str(tmp_path / "baselines"))
    with Judge(warm=True) as once:
        assert once.evaluate(REFERENCE, HONEST, options=_options()).verdict == "pass"
        assert once.warm_runner(_options())["on"] == "op"  # the one compile did not warm it
    with Judge(warm=True) as again:
        for _ in range(2):
            assert again.evaluate(REFERENCE, HONEST, options=_options()).verdict == "pass"
        warmed = again.warm_runner(_options())
        assert warmed["on"] == "job" and "error" not in warmed, warmed
