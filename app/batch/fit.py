"""`--fit-memory GB`: scale a problem's sizes down until one call's inputs and
outputs fit in GB (its parameters and the largest tensor its forward makes within
caps of their own), and the clear message when a problem cannot fit without it.

The sizes are the ones the judge perturbs (sandbox/problem.py): module-level
size constants, or -- for a reference that writes literal sizes in get_inputs --
those literals, named. All are scaled by one factor, each rounded down to a
multiple of the largest power of two that divides it (so sizes that divided one
another mostly still do), never below 8. A first factor comes from the input
shapes read off the syntax tree (no code runs); the bytes are then *measured*
by the judge's sandboxed analysis (`Judge.analyze`: the reference runs in a
sandboxed runner, never in this process), and the factor shrinks until the
measurement fits. GB is 10^9 bytes. Parameters that no size shrinks (literal widths
in the constructor) are taken up to FIXED_PARAMS_GB, and the fit says so
(`params_fixed`).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sandbox import EvalOptions, ProblemError, load_problem
from sandbox.problem import Problem, input_bytes

from .suite import SuiteProblem

GB = 1e9
FLOOR = 8
_ITEMSIZE = {"float64": 8, "double": 8, "int64": 8, "long": 8, "complex64": 8, "complex128": 16, "float32": 4,
             "float": 4, "int32": 4, "int": 4, "float16": 2, "half": 2, "bfloat16": 2, "int16": 2, "int8": 1,
             "uint8": 1, "bool": 1}
Analyze = Callable[[str, str], dict[str, Any]]  # (source, filename) -> Judge.analyze's result


class FitError(Exception):
    """The problem cannot be brought under the budget; the message says why."""


@dataclass
class Fit:
    budget_gb: float
    bytes: int                  # inputs + outputs of one call at `sizes`, measured in the sandbox
    defaults: dict[str, int]    # the problem's own sizes
    sizes: dict[str, int]       # the sizes used (== defaults when nothing was scaled)
    factor: float
    source: str                 # the reference as run: the sizes written in
    params_bytes: int = 0       # the model's parameters and buffers at `sizes`, measured in the sandbox
    largest_bytes: int = 0      # the largest tensor one call makes at `sizes`, measured in the sandbox
    params_fixed: bool = False  # parameters over params_cap that no size shrinks (literals in the constructor)

    @property
    def scaled(self) -> bool:
        return self.sizes != self.defaults

    def record(self) -> dict[str, Any] | None:
        """What reports carry: None when the problem ran at its own sizes."""
        if not self.scaled:
            return None
        return {k: v for k, v in asdict(self).items() if k != "source"}


def size_names(problem: Problem) -> dict[str, int]:
    """The sizes to scale: module-level int constants >= 8 and the size-like ints of the
    tuples and lists get_inputs or get_init_inputs reads (``input_shape = (32768,)`` as
    ``input_shape[0]``, a whole network's ``hidden_layer_sizes = [32768, 32768]``: scaled by
    the same factor and rounding as ``batch_size = 32768``, so sizes a reference needs equal
    stay equal); or, for literal sizes in get_inputs, those literals."""
    sizes = problem.size_constants()
    if not sizes:
        return dict(problem.literal_dims)
    return {**sizes, **_tuple_sizes(problem.source)}


def _tuple_sizes(source: str) -> dict[str, int]:
    tree = ast.parse(source)
    reads = {n.id for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in ("get_inputs", "get_init_inputs")
             for n in ast.walk(f) if isinstance(n, ast.Name)}
    out: dict[str, int] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in reads and isinstance(node.value, (ast.Tuple, ast.List))
                and node.value.lineno == node.value.end_lineno
                and all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.value.elts)):
            out.update({f"{node.targets[0].id}[{j}]": e.value for j, e in enumerate(node.value.elts)
                        if e.value >= FLOOR})
    return out


def scale(value: int, factor: float, coarse: bool | int = False, floor: int = FLOOR) -> int:
    """``value`` x ``factor``, rounded down to a multiple of a power of two dividing ``value``
    (at most a quarter of the result; with ``coarse``, at least 8 where ``value`` has it: sizes
    that must divide each other -- 32 channels in 8 groups -- keep doing so). ``coarse`` may
    also be a step of its own (``coarse_step``: 24 where the problem has 3 groups): a value it
    divides is rounded down to a multiple of it. Never below ``floor`` (FLOOR)."""
    if factor >= 1 or value <= floor:
        return value
    target = value * factor
    if not isinstance(coarse, bool) and coarse & (coarse - 1) and value % coarse == 0:
        return min(value, max(coarse, int(target / coarse + 1e-6) * coarse))
    step = value & -value  # the largest power of two dividing value
    least = 8 if coarse else 1
    while step > least and step > target / 4:
        step //= 2
    return max(min(value, floor), int(target / step + 1e-6) * step)


def scaled_sizes(defaults: dict[str, int], factor: float, coarse: bool | int = False,
                 floors: dict[str, int] | None = None) -> dict[str, int]:
    return {k: scale(v, factor, coarse, (floors or {}).get(k, FLOOR)) for k, v in defaults.items()}


def coarse_step(problem: Problem) -> int:
    """8, times the small ints (2-7) among the module's constants that sizes may have to divide
    into (``groups = 3``: a ShuffleNet unit's channels)."""
    step = 8
    for v in problem.constants.values():
        if type(v) is int and 2 <= v < FLOOR:
            step = math.lcm(step, v)
    return step


def measured_bytes(analysis: dict[str, Any]) -> int:
    total = 0

    def walk(meta: Any) -> None:
        nonlocal total
        if isinstance(meta, list):
            for m in meta:
                walk(m)
        elif isinstance(meta, dict) and "shape" in meta:
            total += math.prod(meta["shape"]) * _ITEMSIZE.get(str(meta.get("dtype")), 4)

    walk(analysis.get("inputs"))
    walk(analysis.get("outputs"))
    return total


def with_sizes(problem: Problem, sizes: dict[str, int], in_place: bool = True) -> str:
    """The reference with ``sizes`` written in: a module constant's value is
    replaced on its own line (so constants computed from it follow); one bound by a
    chain or an unpacking (``height = width = 256``, ``d, h, w = 16, 32, 32``), or any
    with ``in_place=False``, is set again at the end of the module instead, as the
    judge perturbs sizes (what was computed from it keeps its default: a reference
    may need ``norm_shape = (out_channels,)`` to stay equal to a spatial size it
    normalises over). A named literal goes back where it was."""
    if problem.literal_dims:
        return re.sub(r"\b_kforge_dim\d+\b", lambda m: str(sizes.get(m.group(0), problem.literal_dims[m.group(0)])),
                      problem.run_source)
    lines = problem.source.splitlines(keepends=True)
    tail: list[str] = []
    done: set[str] = set()
    for node in reversed(ast.parse(problem.source).body):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if isinstance(node.value, (ast.Tuple, ast.List)) and any(k.startswith(f"{name}[") for k in sizes):
            v = node.value
            items = [str(sizes.get(f"{name}[{j}]", e.value)) for j, e in enumerate(v.elts)]  # type: ignore[attr-defined]
            text = ("[" + ", ".join(items) + "]" if isinstance(v, ast.List) else
                    "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")")
            done.add(name)
            if not in_place:
                tail.append(f"{name} = {text}\n")
                continue
            raw = lines[v.lineno - 1].encode("utf-8")
            lines[v.lineno - 1] = (raw[:v.col_offset] + text.encode() + raw[v.end_col_offset:]).decode()
            continue
        if name not in sizes or sizes[name] == problem.constants.get(name) or name in done:
            continue
        done.add(name)
        v = node.value
        if v.lineno != v.end_lineno or not in_place:  # over several lines, or not in place: set at the end
            tail.append(f"{name} = {sizes[name]}\n")
            continue
        raw = lines[v.lineno - 1].encode("utf-8")  # ast offsets count UTF-8 bytes
        lines[v.lineno - 1] = (raw[:v.col_offset] + str(sizes[name]).encode() + raw[v.end_col_offset:]).decode()
    # names bound by a chain or an unpacking, never rewritten above
    tail += [f"{k} = {v}\n" for k, v in sizes.items()
             if "[" not in k and k not in done and v != problem.constants.get(k)]
    text = "".join(lines)
    return text + ("" if text.endswith("\n") else "\n") + "".join(tail) if tail else text


def first_factor(problem: Problem, defaults: dict[str, int], budget: float) -> float:
    """The largest factor whose inputs (read off the tree) take half the budget
    (outputs are usually no larger); 1 when that cannot be read."""
    if input_bytes(problem, defaults) is None or (input_bytes(problem, defaults) or 0) <= budget / 2:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if (input_bytes(problem, scaled_sizes(defaults, mid)) or 0) <= budget / 2:
            lo = mid
        else:
            hi = mid
    return max(lo, 1e-6)


def fit_problem(path: str, budget_gb: float, analyze: Analyze, attempts: int = 8, batch_floor: int = FLOOR) -> Fit:
    """Sizes for ``path`` whose one call fits in ``budget_gb``, measured in the sandbox. A
    problem that cannot fit with every size at least FLOOR is tried again with its batch
    sizes (``batch_size``: nothing else depends on them) allowed down to 1 (VGG at 224 x 224
    with a batch of 8: a 0.41 GB activation)."""
    problem = load_problem(path)
    budget = budget_gb * GB
    defaults = size_names(problem)
    floors = {k: batch_floor for k in defaults if "batch" in k.lower()}
    factor = first_factor(problem, defaults, budget) if defaults else 1.0
    last = ""
    in_place, coarse = True, 0
    prev: tuple[float, int] | None = None  # (factor, parameter bytes) of the last measurement
    for attempt in range(attempts):
        sizes = scaled_sizes(defaults, factor, coarse, floors)
        source = with_sizes(problem, sizes, in_place)
        params = largest = 0
        try:
            analysis = analyze(source, f"{problem.name}.py")
            used, params = measured_bytes(analysis), int(analysis.get("params_bytes") or 0)
            largest = int(analysis.get("largest_bytes") or 0)
        except ProblemError as exc:  # e.g. the sandbox's memory limit: try smaller
            last, used = str(exc), None
            if attempt == 0:
                # constants computed from the sizes may have to keep their defaults (with_sizes)
                in_place = False
                continue
            if attempt == 1 and sizes != scaled_sizes(defaults, factor, coarse_step(problem), floors):
                # sizes that must divide each other (channels and groups): rounded coarser
                in_place, coarse = True, coarse_step(problem)
                continue
            if attempt == 2 and coarse:
                in_place = False
                continue
        if used is not None and used <= budget and params <= params_cap(budget_gb) \
                and largest <= largest_cap(budget_gb):
            return Fit(budget_gb, used, defaults, sizes, factor, source, params, largest)
        if used is not None and used <= budget and largest <= largest_cap(budget_gb) \
                and params <= FIXED_PARAMS_GB * GB and prev and fixed_params(prev, (factor, params)):
            return Fit(budget_gb, used, defaults, sizes, factor, source, params, largest, params_fixed=True)
        if used is not None:
            prev = (factor, params)
        if not defaults or sizes == scaled_sizes(defaults, factor / 4, 0, floors):
            break  # nothing left to shrink
        over = max(used / budget, params / params_cap(budget_gb), largest / largest_cap(budget_gb)) if used else 0.0
        shrink = (1 / over) ** 0.5 * 0.9 if over else 0.25
        factor *= min(max(shrink, 0.05), 0.9)
    if floors and batch_floor > 1:
        return fit_problem(path, budget_gb, analyze, attempts, batch_floor=1)
    why = (f"{used / GB:.2f} GB of inputs and outputs, {params / GB:.2f} GB of parameters (at most "
           f"{params_cap(budget_gb) / GB:g}), a tensor of {largest / GB:.2f} GB made in forward (at most "
           f"{largest_cap(budget_gb) / GB:g}) at the smallest sizes tried") if used else (last or "no measurement")
    raise FitError(f"{problem.name}: cannot fit one call in {budget_gb:g} GB by scaling "
                   f"{', '.join(defaults) or 'its sizes (none found)'}: {why}")


def fixed_params(before: tuple[float, int], after: tuple[float, int]) -> bool:
    """Whether the parameters are the constructor's literals: between two measurements
    (factor, bytes) the sizes shrank and the parameters fell by less than a quarter of
    what parameters growing linearly with the sizes would have."""
    (f0, p0), (f1, p1) = before, after
    return f1 < f0 and p0 - p1 < 0.25 * p0 * (1 - f1 / f0)


def params_cap(budget_gb: float) -> float:
    """Bytes the model's parameters and buffers may take: the budget counts one call's
    inputs and outputs, but the reference, every candidate and the tuning pass's variants
    each hold the weights too, within the sandbox's memory (KernelBench level 2 has GEMMs
    of 32768 x 32768: 4 GB of weight for 16 MB of input). PARAMS_GB, or the budget when
    larger."""
    return max(budget_gb, PARAMS_GB) * GB


PARAMS_GB = 0.5
# Parameters no size shrinks (VGG's 4096-wide classifier written as literals) are taken
# up to this: one job holds them, their float64 copy and a candidate's packed copy
# within the sandbox's 4 GB base memory.
FIXED_PARAMS_GB = 1.0


def largest_cap(budget_gb: float) -> float:
    """Bytes the largest tensor forward makes may take: the budget counts what goes in and
    comes out, but a reference that reduces a large intermediate (a 3-D transposed
    convolution's 512 MB output before a global pool, KernelBench level2/96: 15 MB of input
    and output) holds several such tensors at once, and more at the judge's sizes grown by a
    quarter each (2.4x for four sizes): its job ran out of memory. LARGEST_GB, or the
    budget when larger."""
    return max(budget_gb, LARGEST_GB) * GB


LARGEST_GB = 0.25


def budget_options(options: EvalOptions, budget_gb: float) -> EvalOptions:
    """The judge's limits for problems fitted to ``budget_gb``: a sandboxed run
    holds a call's inputs and outputs several times over (the trial's tensors,
    their frame to the judge, the timing buffers), so the memory limit is at
    least SANDBOX_COPIES x the budget on top of the base 4 GB, and the time limit
    allows TIMEOUT_S_PER_GB for each GB (allocating and timing eager and
    torch.compile over GB-sized tensors takes minutes on a small machine).
    Limits set higher stay as they are."""
    from dataclasses import replace

    return replace(options, memory_mb=max(options.memory_mb, 4096 + int(SANDBOX_COPIES * budget_gb * 1000)),
                   timeout=max(options.timeout, 120 + TIMEOUT_S_PER_GB * budget_gb))


SANDBOX_COPIES = 6
TIMEOUT_S_PER_GB = 600


def too_big_message(path: str, memory_mb: int) -> str | None:
    """Without --fit-memory: a message naming the flag when one call's inputs,
    read off get_inputs, exceed the sandbox's memory limit; None otherwise."""
    try:
        problem = load_problem(path)
    except ProblemError:
        return None
    need = input_bytes(problem, size_names(problem))
    if need is None or need <= memory_mb * 2**20:
        return None
    return (f"{problem.name} does not fit: rerun with --fit-memory GB (e.g. --fit-memory 1) to scale its sizes "
            f"down; one call's inputs take {need / GB:.1f} GB at its default sizes, more than the sandbox's memory "
            f"limit ({memory_mb} MB, KFORGE_MEMORY_MB)")


MEMORY_HINT = ("; if the problem's sizes do not fit this machine, rerun with --fit-memory GB "
               "(e.g. --fit-memory 1) to scale them down")


def with_memory_hint(message: str) -> str:
    """An allocator error ("can't allocate memory", MemoryError, killed for memory) gets the flag named."""
    if "--fit-memory" in message:
        return message
    lowered = message.lower()
    if any(k in lowered for k in ("allocate memory", "memoryerror", "out of memory", "memory limit", "(memory)")):
        return message + MEMORY_HINT
    return message


def fit_suite(out: Path, problems: list[SuiteProblem], budget_gb: float | None, options: EvalOptions,
              ) -> dict[str, dict[str, Any] | str]:
    """Per problem id: what its tasks run instead of the file as is ({"path", "scaled"}),
    or the message of an error record. Fits are kept in problems/<id>/fit.json
    (with the scaled reference.py next to it), so a resumed run reuses them."""
    if budget_gb is None:
        found = {p.id: too_big_message(p.path, options.memory_mb) for p in problems}
        return {k: v for k, v in found.items() if v}
    from sandbox import Judge

    result: dict[str, dict[str, Any] | str] = {}
    with Judge(warm=True) as judge:
        for p in problems:
            folder = out / "problems" / p.id
            try:
                fit = _cached(folder, budget_gb) or _store(folder, fit_problem(
                    p.path, budget_gb, lambda src, name: judge.analyze(src, name, options, shapes_only=True)))
            except (FitError, ProblemError) as exc:
                result[p.id] = str(exc)
                continue
            result[p.id] = {"path": str(folder / "reference.py"), "scaled": fit.record()}
    return result


def _cached(folder: Path, budget_gb: float) -> Fit | None:
    try:
        data = json.loads((folder / "fit.json").read_text())
        source = (folder / "reference.py").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    return Fit(**data, source=source) if data.get("budget_gb") == budget_gb else None


def _store(folder: Path, fit: Fit) -> Fit:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(fit.source, encoding="utf-8")
    (folder / "fit.json").write_text(json.dumps({k: v for k, v in asdict(fit).items() if k != "source"}, indent=1))
    return fit
