"""Retrieval benchmark of the knowledge base: planner-style queries against
the curated seed, each with the seed strategies a kernel engineer would want
to see, and recall@5 for embedding, keyword (BM25) and hybrid retrieval.

    .venv/bin/python benchmarks/kb_retrieval.py [--k 5] [--embedder minilm|hashing] [--verbose]

The queries and their relevant sets were written by hand for this benchmark,
phrased as a planner or an engineer would describe a problem, not copied from
the strategies' titles. "hybrid + filters" also applies the structured filters
a real retrieval derives from the judge's analysis (op family, backend, arch).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from knowledge_base import FileStore, Filters, HashingEmbedder, KnowledgeBase, MiniLMEmbedder  # noqa: E402
from knowledge_base.ranking.embed import Embedder  # noqa: E402

# (query, relevant seed ids without the "seed-" prefix, filters: families, backend, arch)
QUERIES: list[tuple[str, list[str], dict]] = [
    ("row softmax over 4096 columns fp16 on H100", ["row-per-program", "fp32-accumulation", "stable-logsumexp"],
     {"op_families": ["softmax"], "arch": "sm_90"}),
    ("softmax over rows of 65536 elements that do not fit in registers", ["online-softmax"],
     {"op_families": ["softmax"]}),
    ("log_softmax along dim 1, batch 16, 16384 features, float32",
     ["row-per-program", "stable-logsumexp", "online-softmax"], {"op_families": ["softmax"]}),
    ("fp16 GEMM 4096x4096x4096 is far from cuBLAS speed", ["tensor-cores", "tiled-matmul", "software-pipelining"],
     {"op_families": ["matmul"]}),
    ("Linear layer followed by bias add and GELU run as three separate kernels", ["epilogue-fusion"],
     {"op_families": ["matmul", "elementwise"]}),
    ("fp32 matmul kernel with tl.dot fails the 1e-4 tolerance check", ["fp32-matmul-ieee"],
     {"op_families": ["matmul"]}),
    ("matmul of 64x65536 by 65536x64: only a couple of programs are launched", ["split-k"],
     {"op_families": ["matmul"]}),
    ("large matmul whose operand tiles are evicted from L2 before neighbours reuse them",
     ["grouped-launch-order"], {"op_families": ["matmul"]}),
    ("relu, then multiply by a scalar, then add a bias: a chain of pointwise ops",
     ["elementwise-fusion", "broadcast-in-registers"], {"op_families": ["elementwise"]}),
    ("elementwise kernel reaches only 40% of memory bandwidth with scalar loads",
     ["vectorized-loads", "coalesced-access"], {"op_families": ["elementwise"]}),
    ("LayerNorm over a last dimension of 8192, bfloat16 inputs",
     ["row-per-program", "single-pass-norm-stats", "fp32-accumulation"], {"op_families": ["norm"]}),
    ("RMSNorm with a weight, rows longer than one block", ["single-pass-norm-stats", "row-per-program"],
     {"op_families": ["norm"]}),
    ("residual add followed by layer norm in a transformer block", ["fuse-residual-norm"],
     {"op_families": ["norm", "elementwise"]}),
    ("sum reduction over dim 0 of a (32768, 256) tensor", ["reduce-leading-dims", "coalesced-access"],
     {"op_families": ["reduction"]}),
    ("results differ between two runs after using atomic_add to accumulate partial sums", ["avoid-atomics"],
     {"op_families": ["reduction"]}),
    ("mean over the last dim: how to reduce a row inside one thread block", ["warp-reductions", "row-per-program"],
     {"op_families": ["reduction"]}),
    ("cumsum along rows of length 32768", ["parallel-scan"], {"op_families": ["reduction"]}),
    ("logsumexp over the last dimension overflows in fp16", ["stable-logsumexp", "fp32-accumulation"],
     {"op_families": ["reduction"]}),
    ("scaled dot product attention, sequence length 2048, head dim 64",
     ["fused-attention", "online-softmax", "tensor-cores"], {"op_families": ["attention"]}),
    ("causal attention kernel computes the full score matrix including masked tiles", ["fused-attention"],
     {"op_families": ["attention"]}),
    ("the exponentials are the bottleneck of the attention softmax once memory traffic is minimal",
     ["exp2-fast-math"], {"op_families": ["attention"]}),
    ("Conv2d 3x3 with 256 channels, NCHW, float16", ["implicit-gemm-conv", "tensor-cores"],
     {"op_families": ["conv"]}),
    ("convolution followed by ReLU and a per-channel scale", ["epilogue-fusion", "implicit-gemm-conv"],
     {"op_families": ["conv", "elementwise"]}),
    ("max pooling 2D, kernel size 3, stride 2, with padding", ["pool-window-tiles"], {"op_families": ["pool"]}),
    ("adaptive average pooling over an (N, C, 56, 56) feature map", ["pool-window-tiles"],
     {"op_families": ["pool"]}),
    ("transpose an 8192x8192 matrix: the writes are strided and slow",
     ["shared-memory-transpose", "coalesced-access"], {"op_families": ["elementwise"]}),
    ("CUDA kernel whose shared memory tile accesses are serialised according to Nsight Compute",
     ["avoid-bank-conflicts"], {"backend": "cuda"}),
    ("a tiny tensor of 1024 elements: kernel launch overhead dominates", ["minimise-launches"],
     {"op_families": ["elementwise"]}),
    ("which BLOCK_SIZE and num_warps should a Triton kernel use for this shape",
     ["autotune-launch-params", "occupancy-tuning"], {"backend": "triton"}),
    ("the kernel spills registers to local memory with BLOCK_M = 256", ["occupancy-tuning"], {}),
    ("index arithmetic overflows for a tensor with 3 billion elements", ["int64-offsets"], {}),
    ("the K loop stalls waiting for global loads; should num_stages go up?", ["software-pipelining"],
     {"op_families": ["matmul"], "arch": "sm_90"}),
    ("many small output tiles and a last partial wave of programs leaves SMs idle", ["persistent-kernel"],
     {"op_families": ["matmul"]}),
    ("half-precision elementwise op that converts the input to float32 in a separate pass",
     ["narrow-io-dtype"], {"op_families": ["elementwise"]}),
    ("multiply a per-channel scale vector into an (N, C, H, W) tensor", ["broadcast-in-registers"],
     {"op_families": ["elementwise"]}),
    ("softmax over dim 0 (down the columns) of a tall matrix", ["reduce-leading-dims"],
     {"op_families": ["softmax"]}),
    ("bf16 batched matmul loses precision in its accumulator", ["fp32-accumulation", "tensor-cores"],
     {"op_families": ["matmul"]}),
    ("GELU on a 16M-element float32 tensor is memory bound", ["vectorized-loads", "coalesced-access"],
     {"op_families": ["elementwise"]}),
]


def recall(found: list[str], relevant: list[str]) -> float:
    return len(set(found) & set(relevant)) / len(relevant)


def make_embedder(kind: str) -> Embedder:
    """Without its query cache, so every mode's latency includes embedding the query."""
    return MiniLMEmbedder(cache_size=0) if kind == "minilm" else HashingEmbedder()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--verbose", action="store_true", help="print the misses of each mode")
    args = parser.parse_args()
    started = time.perf_counter()
    kb = KnowledgeBase(FileStore(":memory:"), make_embedder(args.embedder))
    setup_s = time.perf_counter() - started
    known = {s.id for s in kb.store.all()}
    runs = [("embedding", "embedding", False), ("keyword", "keyword", False), ("hybrid", "hybrid", False),
            ("hybrid + filters", "hybrid", True)]
    rows = []
    for label, mode, filtered in runs:
        scores, elapsed = [], 0.0
        for query, relevant, filters in QUERIES:
            ids = [f"seed-{r}" for r in relevant]
            assert set(ids) <= known, f"unknown ids in the benchmark: {set(ids) - known}"
            t0 = time.perf_counter()
            hits = kb.retriever.search(query, Filters.of(**filters) if filtered else None, args.k, mode)  # type: ignore[arg-type]
            elapsed += time.perf_counter() - t0
            found = [h.strategy.id for h in hits]
            scores.append(recall(found, ids))
            if args.verbose and scores[-1] < 1.0:
                print(f"[{label}] {query!r}: missed {sorted(set(ids) - set(found))}, got {found}")
        rows.append((label, sum(scores) / len(scores), sum(s == 1.0 for s in scores), 1000 * elapsed / len(QUERIES)))
    print(f"Command: `.venv/bin/python benchmarks/kb_retrieval.py --k {args.k} --embedder {args.embedder}`  ")
    print(f"Embedder: {kb.embedder_name}; {len(known)} seed strategies; {len(QUERIES)} queries; "
          f"setup (load the model, seed the store) {setup_s:.1f} s\n")
    print(f"| retrieval | recall@{args.k} | queries fully recalled | mean latency (ms) |")
    print("| --- | --- | --- | --- |")
    for label, r, full, ms in rows:
        print(f"| {label} | {r:.3f} | {full}/{len(QUERIES)} | {ms:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
