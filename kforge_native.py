"""What a ``cpu``-backend candidate imports to build and call native kernels.

``from kforge_native import load_c, load_cpp``: see sandbox/runner/native/library.py
(the implementation, which runs inside the sandbox) and docs/cpu_backend.md;
``scratch``: large intermediates kept for the next call (sandbox/runner/native/scratch.py).
"""

from sandbox.runner.native.library import (
    NativeArgumentError,
    NativeBuildError,
    NativeError,
    NativeLibrary,
    load_c,
    load_cpp,
)
from sandbox.runner.native.scratch import scratch

__all__ = ["NativeArgumentError", "NativeBuildError", "NativeError", "NativeLibrary", "load_c", "load_cpp", "scratch"]
