"""How many of a suite's constructors the offline engine copies into ModelNew, and
whether the copy builds the reference's very state_dict (names and shapes).

For every problem of the folder: ``signature.from_source`` reads the constructor and the
helpers it needs (helper classes and functions of the file, Model's helper methods,
nested definitions, imports); a ModelNew made of that body is built beside the reference's
Model on the meta device (no memory, no compute) and their state_dicts compared.

    .venv/bin/python benchmarks/constructor_copies.py /tmp/KernelBench/KernelBench/level3

Runs the references' constructors in this process: for trusted suites (ours, KernelBench).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import types
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.offline.signature import from_source  # noqa: E402


def state_shapes(module: types.ModuleType, cls: str) -> dict[str, tuple[int, ...]]:
    with torch.device("meta"):
        model = getattr(module, cls)(*module.get_init_inputs())
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def check(path: Path) -> str:
    source = path.read_text()
    sig = from_source(source)
    if sig is None or sig.init_body is None:
        return "not copied"
    new_source = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n" \
        f"    def __init__({sig.params(sig.init)}):\n        super().__init__()\n" \
        + textwrap.indent("\n".join(sig.init_body), "        ") + "\n"
    try:
        ref = types.ModuleType("reference")
        exec(compile(source, str(path), "exec"), ref.__dict__)  # noqa: S102  (trusted suite)
        new = types.ModuleType("copied")
        new.get_init_inputs = ref.get_init_inputs
        exec(compile(new_source, f"copied_{path.name}", "exec"), new.__dict__)  # noqa: S102
        same = state_shapes(ref, "Model") == state_shapes(new, "ModelNew")
    except Exception as exc:  # the reference itself cannot be built here (a missing package)
        return f"error: {type(exc).__name__}: {str(exc)[:80]}"
    return "copied, same state_dict" if same else "copied, DIFFERENT state_dict"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    counts: dict[str, int] = {}
    for path in sorted(args.folder.glob("*.py"), key=lambda p: (len(p.name.split("_")[0]), p.name)):
        verdict = check(path)
        counts[verdict.split(":")[0]] = counts.get(verdict.split(":")[0], 0) + 1
        print(f"{path.name:45s} {verdict}")
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
