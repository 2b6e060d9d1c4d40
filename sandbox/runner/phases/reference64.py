"""The reference once more, in float64, on trials it already ran (role ``reference64``).

When a candidate misses the float32 tolerance by a little, the judge asks for this: each
trial's model and inputs are made again exactly as the reference's job made them (same
seeds, same size constants; the timing sets share one model, built once, called in
order), then converted to float64 and called under the trial's forward seed. The
outputs tell the judge how far the float32 reference itself is from the value it
rounds (``compare.calibrated_close``): a sum over thousands of terms in another order is
that far off for any honest kernel. A trial that cannot run in float64 sends an error
and keeps the plain tolerance.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from ..measure.timed import seed_all
from . import domain
from .harness import Emit, build, forward_seed, snapshot_taken, sync, to_device
from .loader import load_module


def _double(values: list[Any]) -> list[Any]:
    return [v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]


def run_reference64(job: dict[str, Any], emit: Emit) -> None:
    device = job["device"]
    module = load_module(job["source"], job["filename"], "kforge_reference")
    defaults = {**(job.get("defaults") or {}),
                **{k: module.__dict__[k] for k in job.get("constants", []) if k in module.__dict__}}
    timing_model: torch.nn.Module | None = None  # the timing sets' one model, in float64
    for trial in job["trials"]:
        module.__dict__.update(defaults)
        module.__dict__.update(trial.get("constants") or {})
        frame: dict[str, Any] = {"kind": "trial64", "index": trial["index"]}
        try:
            seed_all(trial["seed"])
            init_inputs = list(module.get_init_inputs())
            if trial["tag"] == "timing" and timing_model is not None:
                wide = timing_model
            else:
                wide = copy.deepcopy(build(module, "Model", {**trial, "init_inputs": init_inputs}, device))
                wide = wide.to(torch.float64)
                if trial["tag"] == "timing":
                    timing_model = wide
            seed_all(trial["input_seed"])
            inputs = to_device(list(module.get_inputs()), device)
            if trial["tag"] == "domain":
                inputs = domain.stretch(inputs, trial["input_seed"])
            seed_all(forward_seed(trial))
            with torch.no_grad():
                out = wide(*_double(inputs))
            sync(device)
            frame["structure"], frame["outputs"], _ = snapshot_taken(out)
        except Exception as exc:  # a model that cannot run in float64: the plain tolerance stands
            frame["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        emit(frame)
    module.__dict__.update(defaults)
