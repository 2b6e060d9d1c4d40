"""What a ``cpu``-backend candidate imports to build and call native kernels.

``from kforge_native import load_c, load_cpp``: see sandbox/runner/native.py
(the implementation, which runs inside the sandbox) and docs/cpu_backend.md;
``scratch``: large intermediates kept for the next call (sandbox/runner/scratch.py).
"""

from sandbox.runner.native import (
    NativeArgumentError,
    NativeBuildError,
    NativeError,
    NativeLibrary,
    load_c,
    load_cpp,
)
from sandbox.runner.scratch import scratch

__all__ = ["NativeArgumentError", "NativeBuildError", "NativeError", "NativeLibrary", "load_c", "load_cpp", "scratch"]
