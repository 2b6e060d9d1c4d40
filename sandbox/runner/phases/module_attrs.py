"""What the offline engine needs to know of a layer made of other layers, reported with its
call_module node: torch.fx keeps ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer`` and
``nn.TransformerEncoder`` whole (their forward branches on its inputs and cannot be traced
into), so their settings (heads, norm placement, activation, the eps of each norm, the
dropouts) are read off the module and sent as plain data; the weights are in the state_dict
under the module's path (``agents/offline/ir/transformer.py`` writes the layer out)."""

from __future__ import annotations

from typing import Any

import torch


def composite_attrs(mod: torch.nn.Module) -> dict[str, Any]:
    """The settings of a composite layer the engine writes out; {} for any other module."""
    name = type(mod).__name__
    if name == "MultiheadAttention":
        return _attention(mod)
    if name == "TransformerEncoderLayer":
        return _encoder_layer(mod)
    if name == "TransformerEncoder":
        layers = list(getattr(mod, "layers", []))
        norm = getattr(mod, "norm", None)
        return {"layers": [_encoder_layer(layer) for layer in layers],
                "final_norm": _norm(norm) if norm is not None else None}
    return {}


def _attention(mod: Any) -> dict[str, Any]:
    return {"embed_dim": int(mod.embed_dim), "num_heads": int(mod.num_heads), "batch_first": bool(mod.batch_first),
            "dropout": float(mod.dropout), "packed": bool(mod._qkv_same_embed_dim),
            "bias_kv": mod.bias_k is not None, "add_zero_attn": bool(mod.add_zero_attn), "training": bool(mod.training)}


def _norm(mod: Any) -> dict[str, Any]:
    return {"cls": type(mod).__name__, "eps": float(getattr(mod, "eps", 0.0)),
            "affine": bool(getattr(mod, "elementwise_affine", False))}


def _activation(fn: Any) -> dict[str, Any]:
    """F.relu / F.gelu as torch keeps them (a function), or a module (``nn.GELU(approximate)``)."""
    if isinstance(fn, torch.nn.Module):
        return {"name": type(fn).__name__.lower(), "approximate": str(getattr(fn, "approximate", "none"))}
    return {"name": str(getattr(fn, "__name__", type(fn).__name__)).lower(), "approximate": "none"}


def _encoder_layer(mod: Any) -> dict[str, Any]:
    return {"attention": _attention(mod.self_attn), "norm_first": bool(mod.norm_first),
            "activation": _activation(mod.activation), "norms": [_norm(mod.norm1), _norm(mod.norm2)],
            "dropouts": [float(mod.dropout.p), float(mod.dropout1.p), float(mod.dropout2.p)],
            "training": bool(mod.training)}
