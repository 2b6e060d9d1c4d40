"""What a ``cpu``-backend candidate imports to build and call native kernels.

``from kforge_native import load_c, load_cpp``: see sandbox/runner/native.py
(the implementation, which runs inside the sandbox) and docs/cpu_backend.md.
"""

from sandbox.runner.native import (
    NativeArgumentError,
    NativeBuildError,
    NativeError,
    NativeLibrary,
    load_c,
    load_cpp,
)

__all__ = ["NativeArgumentError", "NativeBuildError", "NativeError", "NativeLibrary", "load_c", "load_cpp"]
