"""The op recorder: the aten ops a forward call runs."""

from __future__ import annotations

from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from .launches import LaunchCounter
from .ops import _STRUCTURAL


class OpRecorder(TorchDispatchMode):
    """Counts aten ops by overload packet name, ignoring the interpreter's own."""

    def __init__(self, launches: LaunchCounter) -> None:
        super().__init__()
        self.launches = launches
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if not self.launches.in_interpreter:
            name = func.overloadpacket.__name__
            if name not in _STRUCTURAL:
                self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))
