"""Where the values a forward call returns come from: custom-kernel writes or torch.

``Provenance`` is a dispatch mode (every aten op passes through it, including
ops issued from C++ extensions) that the harness pushes around each
correctness trial's forward call, before any of the candidate's code for that
call runs. It also receives every custom-kernel launch from the launch counter
(Triton, ``load_inline``/``load`` extension functions, native C functions)
with its argument tensors. From both it keeps, for every storage touched in
the call, a label:

* the set of torch *compute* ops whose results flowed into its contents
  (directly, through views and copies, or through a kernel that read them);
* whether a custom kernel wrote it (or wrote what it was copied from).

Structural ops (allocation, views, reshapes, copies, concatenation, padding,
dtype conversion) move labels and add no work. Every other op is compute and
costs FLOPs and bytes (``cost``). A kernel's written arguments (Triton: every
tensor argument that is not an input, parameter or buffer; native: the
non-const pointers; extensions: the results, and the scratch arguments when
they return nothing) take the union of the labels of all its tensor
arguments: whatever the kernel read may have flowed into what it wrote.

``summary(out)`` then says, per returned tensor, whether a kernel wrote it and
which torch work (by op, FLOPs and bytes) its values depend on; the judge
compares that with the reference's work recorded by the same mode
(``reference_work``). Storages that appear in the call without any recorded
op or kernel having made them, and that did not exist before the call, were
made by something the mode did not see (dispatch switched off, numpy): they
carry the label ``UNRECORDED``.

Runs inside the sandbox: standard library and torch only.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._python_dispatch import _disable_current_modes as _outside_modes  # bound before any candidate

from ..guards.launches import LaunchCounter
from ..guards.ops import _FRESH, _MADE, _STRUCTURAL, _storage

UNRECORDED = -1  # label element: made outside every recorded op and kernel

# Ops that make values from nothing the call computed: allocation, constants
# lifted from Python, random draws. Their results start with an empty label.
_FACTORY = _MADE | {"arange", "scalar_tensor", "rand", "randn", "randint",
                    "rand_like", "randn_like", "randint_like", "normal", "bernoulli", "uniform_", "normal_",
                    "linspace", "logspace", "eye", "randperm", "empty_permuted", "tensor"}
# Moves values without computing new ones (on top of guards.ops._STRUCTURAL).
_MOVES = _STRUCTURAL | {"constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
                        "replication_pad2d", "index_select", "gather", "repeat", "tile", "roll", "flip",
                        "movedim", "swapaxes", "squeeze_copy", "unsqueeze_copy", "view_copy", "permute_copy",
                        "expand_copy", "t_copy", "transpose_copy", "slice_copy", "select_copy", "_unsafe_index",
                        "slice_scatter", "select_scatter", "as_strided_scatter", "index_put_", "index_put"}
# Four FLOPs per element: transcendental and other multi-instruction elementwise ops.
_HEAVY_ELEMENTWISE = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sigmoid", "erf", "erfc",
                      "erfinv", "gelu", "silu", "mish", "softplus", "elu", "selu", "celu", "pow", "sqrt", "rsqrt",
                      "sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "hardswish", "logit",
                      "logsumexp", "div", "reciprocal", "var", "std", "var_mean", "std_mean",
                      "linalg_vector_norm", "norm"}
# Eight per element: softmax and normalisation (max or mean, centring, exp or
# variance, sum, scale, affine), several passes over each row.
_NORMALISING = {"_softmax", "softmax", "_log_softmax", "log_softmax", "native_layer_norm", "layer_norm",
                "native_group_norm", "group_norm", "native_batch_norm", "_native_batch_norm_legit",
                "_native_batch_norm_legit_no_training", "rms_norm", "_fused_rms_norm"}
# Tensors lifted from outside torch (``torch.tensor(...)``, ``torch.from_numpy``):
# a few constants are glue; past this many values in one call, what is lifted
# was computed elsewhere.
_LIFTED = {"lift_fresh", "lift_fresh_copy"}
LIFTED_CONSTANT_MAX = 64
_MATMUL_FIRST_ARG = {"mm", "bmm", "matmul", "mv", "dot", "vdot", "linear", "einsum", "_int_mm", "_scaled_mm"}
_MATMUL_SECOND_ARG = {"addmm", "baddbmm", "addbmm", "addmv", "_addmm_activation"}
_CONV = {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "mkldnn_convolution",
         "_slow_conv2d_forward", "slow_conv3d_forward", "_conv_depthwise2d", "conv_depthwise3d",
         "slow_conv_dilated2d", "convolution_overrideable", "cudnn_convolution"}
_ATTENTION_PREFIX = "_scaled_dot_product"


def tensors_in(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


def _numel(t: torch.Tensor) -> int:
    return int(t.numel())


def cost(name: str, args: tuple, outs: list[torch.Tensor]) -> tuple[float, float]:
    """(FLOPs, bytes) of one compute op: bytes read and written; FLOPs by a
    small model -- 2*M*N*K for products, 2 per multiply-add of a convolution,
    8 per element for softmax and normalisation, 4 for transcendental ops, 1 per element for
    the rest (the larger of what is read and what is written)."""
    ins = tensors_in(args)
    nbytes = float(sum(_numel(t) * t.element_size() for t in ins + outs))
    out_n = sum(_numel(t) for t in outs[:1])
    try:
        if name in _MATMUL_FIRST_ARG or name in _MATMUL_SECOND_ARG:
            mats = [t for t in ins if t.dim() >= 1]
            first = mats[1 if name in _MATMUL_SECOND_ARG and len(mats) > 2 else 0]
            return 2.0 * out_n * max(1, first.shape[-1]), nbytes
        if name in _CONV or name.startswith("conv"):
            x, w = ins[0], ins[1]
            transposed = len(args) > 6 and bool(args[6])
            per_point = _numel(w) / max(1, w.shape[0])
            return 2.0 * (_numel(x) if transposed else out_n) * per_point, nbytes
        if name.startswith(_ATTENTION_PREFIX) or name == "scaled_dot_product_attention":
            q, k = ins[0], ins[1]
            return 4.0 * _numel(q) * (k.shape[-2] if k.dim() >= 2 else 1), nbytes
    except (IndexError, AttributeError):
        pass
    elements = max([_numel(t) for t in ins + outs] or [0])
    per = 8 if name in _NORMALISING else 4 if name in _HEAVY_ELEMENTWISE else 1
    return float(per * elements), nbytes


def _alias_writes(func: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """Arguments the op writes in place (``add_``, ``out=``, running stats)."""
    written = []
    try:
        schema = func._schema
    except AttributeError:
        return written
    for i, arg in enumerate(schema.arguments):
        info = arg.alias_info
        if info is None or not info.is_write:
            continue
        value = args[i] if i < len(args) and not arg.kwarg_only else kwargs.get(arg.name)
        written += tensors_in(value)
    return written


def _returns_fresh(func: Any) -> bool:
    try:
        return not any(r.alias_info is not None for r in func._schema.returns)
    except AttributeError:
        return True


_GEN: list[torch.Generator] = []


def _canaries() -> torch.Generator:
    """A generator of its own (the candidate's RNG stream stays as torch's), seeded from the OS."""
    if not _GEN:
        _GEN.append(torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1))
    return _GEN[0]


# Canary bytes: a block drawn afresh for every buffer, repeated over it. Drawing every
# byte was most of a correctness call's cost at GB sizes (1.5-2.5 s per 470 MB buffer,
# against 0.03 s tiled); a kernel can no more predict a fresh block than fresh bytes, and
# a buffer counts as written when any byte of it changed.
CANARY_BLOCK = 1 << 16


def _canary_fill(raw: torch.Tensor) -> torch.Tensor:
    """Fills ``raw`` with a fresh block, repeated; returns the block."""
    n = raw.numel()
    block = torch.randint(0, 256, (min(n, CANARY_BLOCK),), dtype=torch.uint8, generator=_canaries())
    whole = n - n % block.numel()
    raw[:whole].view(-1, block.numel()).copy_(block)
    raw[whole:].copy_(block[: n - whole])
    return block


# Bytes compared per step against a canary: the block repeated to this size.
CANARY_COMPARE = 1 << 24


def _still_canary(raw: torch.Tensor, block: torch.Tensor) -> bool:
    """Whether ``raw`` still holds the canary ``block`` repeated, byte for byte: no copy of
    the buffer is kept to compare with (a second GB where a kernel's output is one)."""
    b = block.numel()
    tile = block.repeat(max(1, min(raw.numel(), CANARY_COMPARE) // b))
    step = tile.numel()
    return all(torch.equal(raw[i:i + step], tile[:raw[i:i + step].numel()]) for i in range(0, raw.numel(), step))


class Provenance(TorchDispatchMode):
    """Records one forward call's ops, costs and data flow (see the module docstring).

    ``ops`` counts the aten ops run, as the op recorder always has (structural
    ops and the Triton interpreter's own ops left out)."""

    def __init__(self, launches: LaunchCounter | None, keep: Iterable[Any] = (), before: Iterable[Any] = (),
                 canary: bool = False, labels: bool = True) -> None:
        super().__init__()
        self.launches = launches
        # ``labels=False``: ops and records only (the reference's work is all of its records). A
        # label is the set of every record upstream, so through a recurrence unrolled into
        # torch ops (nn.GRU on the CPU: 6 layers x 512 steps, ~86,000 ops) labels grow with
        # the steps and their sum with the square: GBs and minutes for nothing the judge reads.
        self.labels = labels
        # Native calls: which buffers the kernel really wrote (``native_call``), not what its prototype allows.
        self.canary = canary
        self.fresh: set[int] = set()  # storages allocated uninitialised in this call and not written since
        self.ops: dict[str, int] = {}
        self.records: list[tuple[str, float, float]] = []  # compute ops: (name, flops, bytes)
        self.label: dict[int, frozenset[int]] = {}
        self.kernel: set[int] = set()  # storages whose contents a custom kernel wrote
        self.kernel_launches = 0
        # Labels of torch values read into Python (``.item()``, ``float(t)``): a
        # tensor made from Python values afterwards may carry them.
        self.escaped: frozenset[int] = frozenset()
        self.lifted = 0  # values lifted from Python or numpy in this call
        self._keep = {_storage(t) for t in keep if isinstance(t, torch.Tensor)}
        # Tensors the call did not make but may read: inputs, parameters, and
        # what the model and its module hold (constants, buffers kept across calls).
        self._before = {_storage(t) for t in before if isinstance(t, torch.Tensor)} | self._keep

    def __enter__(self) -> Provenance:
        if self.launches is not None:
            self.launches.provenance = self
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        if self.launches is not None:
            self.launches.provenance = None

    def _label_of(self, t: torch.Tensor) -> frozenset[int]:
        key = _storage(t)
        found = self.label.get(key)
        if found is not None:
            return found
        return frozenset() if key in self._before else frozenset((UNRECORDED,))

    def _merge(self, tensors: list[torch.Tensor]) -> tuple[frozenset[int], bool]:
        label: frozenset[int] = frozenset()
        from_kernel = False
        for t in tensors:
            label |= self._label_of(t)
            from_kernel = from_kernel or _storage(t) in self.kernel
        return label, from_kernel

    def _set(self, t: torch.Tensor, label: frozenset[int], from_kernel: bool, fresh: bool) -> None:
        key = _storage(t)
        if fresh:
            self.label[key] = label
            self.kernel.discard(key)
        else:
            self.label[key] = self._label_of(t) | label
        if from_kernel:
            self.kernel.add(key)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.launches is not None and self.launches.in_interpreter:
            return func(*args, **kwargs)  # the Triton interpreter's own moves; the launch is labelled as a whole
        name = func.overloadpacket.__name__
        if name not in _STRUCTURAL:
            self.ops[name] = self.ops.get(name, 0) + 1
        if not self.labels:
            out = func(*args, **kwargs)
            if name not in _MOVES and name not in _FACTORY and name not in _LIFTED and name != "_local_scalar_dense":
                self.records.append((name, *cost(name, args, tensors_in(out))))
            return out
        ins = tensors_in(args) + tensors_in(kwargs)
        written = _alias_writes(func, args, kwargs)
        out = func(*args, **kwargs)
        outs = tensors_in(out)
        if name == "_local_scalar_dense":
            self.escaped |= self._merge(ins)[0]
            return out
        if name in _FRESH:
            self.fresh.update(_storage(t) for t in outs)
        else:
            for t in outs + written:
                self.fresh.discard(_storage(t))
        if name in _FACTORY or name in _LIFTED:
            if name in _LIFTED:
                self.lifted += sum(_numel(t) for t in outs)
            made = self.escaped | (frozenset((UNRECORDED,)) if self.lifted > LIFTED_CONSTANT_MAX else frozenset())
            for t in outs:
                self._set(t, made, False, fresh=not written)
            for t in written:  # fill_ / zero_ in place: Python values written into an existing tensor
                self._set(t, made, False, fresh=False)
            return out
        label, from_kernel = self._merge(ins)
        label |= self.escaped  # Python numbers it was given may hold torch values read out earlier
        if name not in _MOVES:
            self.records.append((name, *cost(name, args, outs)))
            label = label | {len(self.records) - 1}
        fresh = _returns_fresh(func)
        for t in outs:
            self._set(t, label, from_kernel, fresh=fresh)
        for t in written:
            self._set(t, label, from_kernel, fresh=False)
        return out

    def kernel_launch(self, args: Iterable[Any], written: list[torch.Tensor]) -> None:
        """A custom kernel ran on ``args`` and may have written ``written``."""
        self.kernel_launches += 1
        label, _ = self._merge(tensors_in(list(args)))
        label |= self.escaped
        for t in written:
            self._set(t, label, True, fresh=False)

    def native_call(self, run: Any, writable: list[torch.Tensor]) -> tuple[Any, list[torch.Tensor]]:
        """Runs one native call and returns (its result, the buffers it wrote).

        With ``canary`` (every correctness call), a buffer allocated
        uninitialised in this call, or kept from an earlier call (state, not
        an input), is first filled with random bytes; any other writable
        buffer (initialised in this call) is copied; and a buffer counts as written only
        if its bytes differ after the call: a kernel that returns at once, or
        leaves a buffer as it found it, writes nothing. Without it the
        declared non-const pointers are taken at their word (the timed calls,
        whose every output is compared in full on inputs never seen before)."""
        if not self.canary:
            return run(), writable
        # (buffer, the canary block it was filled with, or a copy of its bytes)
        before: list[tuple[torch.Tensor, torch.Tensor, bool]] = []
        with _outside_modes():
            for t in writable:
                if not t.numel():
                    continue
                raw = t.view(-1).view(torch.uint8)
                key = _storage(t)
                # Uninitialised here, or carried over from an earlier call (not an
                # input, parameter or buffer): contents no kernel may rely on.
                if key in self.fresh or (key not in self.label and key not in self._keep):
                    before.append((t, _canary_fill(raw), True))
                else:
                    before.append((t, raw.clone(), False))
        result = run()
        written = []
        with _outside_modes():
            for t, old, canary in before:
                raw = t.view(-1).view(torch.uint8)
                if not (_still_canary(raw, old) if canary else torch.equal(raw, old)):
                    written.append(t)
                    self.fresh.discard(_storage(t))
        return result, written

    def scratch(self, values: Iterable[Any]) -> list[torch.Tensor]:
        """Tensor arguments a kernel may write: not inputs, parameters or buffers."""
        return [t for t in tensors_in(list(values)) if _storage(t) not in self._keep]

    @staticmethod
    def tensors_of(value: Any) -> list[torch.Tensor]:
        return tensors_in(value)

    def summary(self, out: Any) -> dict[str, Any]:
        """Per returned tensor: written by a kernel?, values made outside every
        recorded op?, and the torch work (by op) its values depend on."""
        outputs = []
        union: frozenset[int] = frozenset()
        for t in tensors_in(out):
            label = self._label_of(t)
            union |= label
            outputs.append({"kernel": _storage(t) in self.kernel, "unrecorded": UNRECORDED in label})
        return {"outputs": outputs, "torch": work_of(self.records, union - {UNRECORDED}),
                "all_torch": work_of(self.records, range(len(self.records))),
                "kernel_launches": self.kernel_launches}


def reachable_tensors(model: torch.nn.Module, module: Any, depth: int = 3) -> list[torch.Tensor]:
    """Tensors held by the model's submodules (attributes, class attributes)
    and the candidate module's globals, through containers up to ``depth``."""
    found: list[torch.Tensor] = []
    seen: set[int] = set()
    alive: list[Any] = []  # ids are only unique while their objects live

    def walk(value: Any, level: int) -> None:
        if id(value) in seen or level > depth:
            return
        seen.add(id(value))
        alive.append(value)
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, dict):
            for v in list(value.values()):
                walk(v, level + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in list(value):
                walk(v, level + 1)

    def namespace(obj: Any) -> dict[str, Any]:
        space = getattr(obj, "__dict__", None)
        return {k: v for k, v in space.items() if not str(k).startswith("__")} if isinstance(space, dict) else {}

    for sub in model.modules():
        walk(namespace(sub), 0)
        walk(namespace(type(sub)), 0)
    walk(namespace(module), 0)
    return found


def work_of(records: list[tuple[str, float, float]], ids: Iterable[int]) -> dict[str, Any]:
    """{'flops', 'bytes', 'by_op': {op: [flops, bytes]}} over the chosen records."""
    by_op: dict[str, list[float]] = {}
    for i in ids:
        name, flops, nbytes = records[i]
        entry = by_op.setdefault(name, [0.0, 0.0])
        entry[0] += flops
        entry[1] += nbytes
    total_f = math.fsum(v[0] for v in by_op.values())
    total_b = math.fsum(v[1] for v in by_op.values())
    return {"flops": total_f, "bytes": total_b, "by_op": by_op}


def reference_work(mode: Provenance) -> dict[str, Any]:
    """All compute work of the reference's forward call."""
    return work_of(mode.records, range(len(mode.records)))
