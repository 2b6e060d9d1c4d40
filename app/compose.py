"""The composition root: Settings -> judge options, provider, offline engine,
and the search wiring them with the knowledge base. Every entry point (cli,
worker, batch, mcp) builds these here, never by hand.

Imports of the judge stay inside the functions: `import sandbox` brings torch,
which the MCP server must not load before its first evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backends import ChosenBackend, GpuProbe, device_for, resolve_backend, visible_gpu
from .hardware import cpu_label
from .settings import Settings, get_settings

if TYPE_CHECKING:
    from agents.providers import Provider
    from agents.search import Search, SearchConfig
    from sandbox import EvalOptions


def eval_options(settings: Settings | None = None, backend: str = "triton", *, device: str | None = None,
                 sandbox: str | None = None, timeout: float | None = None, memory_mb: int | None = None,
                 **overrides: Any) -> EvalOptions:
    """The judge's options: what is given, else Settings. ``backend`` cpu
    implies the CPU device (a BackendError when cuda is asked for with it);
    KFORGE_CPU_THREADS is the thread count of CPU timing (candidate and baselines)."""
    from sandbox import EvalOptions

    settings = settings or get_settings()
    values: dict[str, Any] = {
        "device": device_for(backend, device) or settings.device, "sandbox": sandbox or settings.sandbox,
        "timeout": settings.eval_timeout_s if timeout is None else timeout,
        "memory_mb": settings.memory_mb if memory_mb is None else memory_mb, **overrides}
    if settings.cpu_threads is not None:
        values.setdefault("threads", settings.cpu_threads)
    return EvalOptions(**values)


def choose_backend(settings: Settings | None, backend: str, device: str | None = None, *,
                   probe: GpuProbe | None = None) -> ChosenBackend:
    """The one place ``--backend auto`` (every entry point's default) becomes a
    kernel backend: triton where the judge sees a GPU, cpu where none is; an
    explicit backend is honoured as asked. ``probe`` says which GPU is visible
    (tests pass a fake one: this machine may have none)."""
    settings = settings or get_settings()
    return resolve_backend(backend, device or settings.device, probe or visible_gpu,
                           lambda: cpu_label(settings.cpu_threads))


def build_provider(name: str, model: str | None, base_url: str | None) -> Provider | None:
    if name == "offline":
        return None
    settings = get_settings()
    key = getattr(settings, f"{name}_api_key", None)  # each provider's key field: <name>_api_key
    prices = json.loads(settings.prices_json) if settings.prices_json else None
    from agents.providers import make_provider  # the provider SDKs take seconds to import: only when used

    return make_provider(name, model=model or settings.model, base_url=base_url or settings.base_url,
                         api_key=key.get_secret_value() if key else None, prices=prices)


def offline_engine() -> Any:
    try:
        from agents.offline import OfflineEngine
    except ImportError:  # the engine is optional for LLM runs
        return None
    return OfflineEngine()


def guarded(judge: Any, device: str | None, settings: Settings | None = None, *, always: bool = False) -> Any:
    """The judge behind this host's lock for the GPU (app/gpu_lock.py): evaluations
    hold it when they run on CUDA (``always``: whatever the device), so two
    processes never time at once on one GPU; analyses never do."""
    from sandbox.options import resolve_device

    from .gpu_lock import LockedEvaluator, device_key

    settings = settings or get_settings()
    return LockedEvaluator(judge, settings.gpu_lock_dir, device_key(),
                           enabled=always or resolve_device(device) == "cuda")


def make_search(evaluator: Any, options: EvalOptions, provider: str, model: str | None, base_url: str | None,
                config: SearchConfig, *, on_event: Callable[[dict[str, Any]], None] | None = None,
                trajectory_path: Path | None = None, kb: Any = None, archive: bool = True) -> Search:
    """The search every entry point runs: the provider and the offline engine
    from Settings, strategies retrieved from ``kb`` (None: none) and, with
    ``archive``, its archived winners too."""
    from agents.search import Search

    return Search(evaluator, options, provider=build_provider(provider, model, base_url), config=config,
                  offline=offline_engine(), on_event=on_event, trajectory_path=trajectory_path,
                  strategies=kb, archive=kb if archive else None)


@contextmanager
def build_search(provider: str, model: str | None, base_url: str | None, config: SearchConfig,
                 options: EvalOptions, on_event: Callable[[dict[str, Any]], None] | None = None,
                 trajectory_path: Path | None = None) -> Iterator[Search]:
    """A search with its own warm judge and the service's knowledge base (`kforge optimize`)."""
    from sandbox import Judge

    from .kb import knowledge_base

    kb = knowledge_base()
    with Judge(warm=True) as judge:
        yield make_search(judge, options, provider, model, base_url, config, on_event=on_event,
                          trajectory_path=trajectory_path, kb=kb)
