"""Backend cpu in the knowledge base: hardware keys from the CPU's ISA, CPU strategies retrieved
for CPU jobs (and GPU-only ones not), archived C kernels keyed by (cpu, ISA)."""

from __future__ import annotations

from knowledge_base import KnowledgeBase, arch_of, problem_signature
from knowledge_base.filters import arch_allows
from knowledge_base.problem_identity import cpu_arch, host_cpu_flags

from .samples import SOFTMAX_REF, softmax_analysis, softmax_trajectory

CPU_LINE = "CPU only: Triton runs in its interpreter; no GPU timing"


def test_cpu_arch_is_the_widest_simd() -> None:
    assert cpu_arch({"cpu": {"isa": ["sse4_2", "avx2", "avx512f"]}}) == "cpu-avx512"
    assert cpu_arch({"cpu": {"isa": ["sse4_2", "avx2", "fma"]}}) == "cpu-avx2"
    assert cpu_arch({"cpu": {"isa": ["neon"]}}) == "cpu"
    assert cpu_arch({"hardware": "AMD EPYC (avx2)"}) == "cpu-avx2"
    # without ISA flags in the analysis, the host's (the judge runs here)
    host = host_cpu_flags()
    want = "cpu-avx512" if "avx512f" in host else "cpu-avx2" if "avx2" in host else "cpu"
    assert arch_of({"hardware": CPU_LINE}, "cpu") == want
    # other backends keep their keys
    assert arch_of({"hardware": CPU_LINE}) == "cpu" and arch_of({"hardware": "NVIDIA H100 (sm_90)"}, "cuda") == "sm_90"


def test_cpu_rules() -> None:
    assert arch_allows("cpu", "cpu-avx2") and arch_allows("cpu-avx2", "cpu-avx512")
    assert not arch_allows("cpu-avx512", "cpu-avx2") and not arch_allows("cuda", "cpu-avx2")
    assert not arch_allows("cpu-avx2", "sm_90") and arch_allows("cuda", "sm_90")


def test_cpu_jobs_retrieve_cpu_strategies_only(kb: KnowledgeBase) -> None:
    analysis = softmax_analysis(CPU_LINE)
    analysis["cpu"] = {"isa": ["avx2", "fma"]}
    got = kb.retrieve(analysis, SOFTMAX_REF, "cpu", k=8)
    ids = [s["id"] for s in got]
    assert ids and all(i.startswith("seed-cpu-") or not i.startswith("seed-") for i in ids), ids
    assert "seed-cpu-row-parallel-reductions" in ids
    assert not any(s["id"].startswith("seed-cpu-") for s in kb.retrieve(analysis, SOFTMAX_REF, "triton", k=8))


def test_cpu_winner_is_archived_under_its_isa(kb: KnowledgeBase) -> None:
    analysis = softmax_analysis(CPU_LINE)
    analysis["cpu"] = {"isa": ["avx2"]}
    report = kb.learn_from(softmax_trajectory(), analysis, "cpu", "cpu", "job-c")
    assert report["archived"]["arch"] == "cpu-avx2"
    entry = kb.archived(SOFTMAX_REF, backend="cpu", arch="cpu-avx2")
    assert entry is not None and entry.backend == "cpu" and entry.signature == problem_signature(SOFTMAX_REF)
    assert entry.speedup == 1.85  # the fastest measured attempt
    assert kb.archived(SOFTMAX_REF, backend="triton") is None
