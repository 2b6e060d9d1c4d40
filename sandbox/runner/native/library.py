"""Native CPU kernels for candidates: C or C++ source built into a shared
library by the system compiler and called on tensors' data.

A candidate of the ``cpu`` backend writes::

    from kforge_native import load_c

    SRC = r'''
    #include <stdint.h>
    void relu_scale(const float* x, float* y, int64_t n, float s) {
        #pragma omp parallel for simd
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * s;
    }
    '''
    lib = load_c(SRC, ["void relu_scale(const float* x, float* y, int64_t n, float s)"])

    class ModelNew(nn.Module):
        def forward(self, x):
            y = torch.empty_like(x)
            lib.relu_scale(x, y, x.numel(), 2.0)
            return y

Each exported function is declared by its C prototype. A pointer parameter
takes a contiguous CPU tensor whose dtype matches the pointee (``const``
pointers are inputs, the others outputs the kernel writes); a scalar parameter
takes a Python number. Mismatches raise ``NativeArgumentError`` before any
native code runs, so a wrong call is a clear error, not a crash.

Builds use ``gcc``/``g++ -O3 -march=native -fopenmp -fPIC -shared`` and are
cached by a hash of the source, the language, the flags and the compiler's
version. Libraries link against OpenBLAS (its OpenMP build, so its threads
are the OpenMP threads the judge grants) and oneDNN (also on OpenMP) where
the machine has them, as needed: a kernel that includes ``<cblas.h>`` may
call its ``cblas_*`` routines, one that includes ``<oneapi/dnnl/dnnl.h>`` the
``dnnl_*`` API (sandbox/policy/symbols.py says which part).
Under the judge the libraries are built before the candidate runs,
by trusted code, into a cache the candidate can only read (``prebuilt``);
the candidate's own process never invokes the compiler there.

Standard library and torch only: this module runs inside the sandbox.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

import torch

from . import facts as native_inspect

FLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared")
STD = {"c": "-std=gnu11", "c++": "-std=gnu++17"}
# C only: a call of an undeclared function is an error, so a kernel reaches
# only what the allowed headers declare or the source defines.
STRICT = {"c": ("-Werror=implicit-function-declaration",), "c++": ()}
COMPILER = {"c": "gcc", "c++": "g++"}
# OpenBLAS's OpenMP build (Debian: libopenblas0-openmp), linked only into libraries that call it.
BLAS_DIRS = ("/usr/lib/x86_64-linux-gnu/openblas-openmp", "/usr/lib/aarch64-linux-gnu/openblas-openmp")
BLAS_LIB = "libopenblas.so.0"
# oneDNN (Debian: libdnnl2, OpenMP runtime), likewise linked only into libraries that call it.
DNNL_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
DNNL_LIB = "libdnnl.so.2"
SUFFIX = {"c": ".c", "c++": ".cpp"}
BUILD_TIMEOUT_S = 120.0


class NativeError(Exception):
    """Base of the loader's errors; the message is meant for the kernel's author."""


class NativeBuildError(NativeError):
    """The compiler rejected the source; the message is the compiler's own."""


class NativeArgumentError(NativeError):
    """A call's arguments do not match the declared prototype."""


# C type -> (ctypes type, torch dtypes a pointer to it accepts)
_SCALARS: dict[str, Any] = {
    "float": ctypes.c_float, "double": ctypes.c_double,
    "int": ctypes.c_int32, "int32_t": ctypes.c_int32, "unsigned": ctypes.c_uint32, "uint32_t": ctypes.c_uint32,
    "long": ctypes.c_int64, "int64_t": ctypes.c_int64, "long long": ctypes.c_int64, "size_t": ctypes.c_size_t,
    "ptrdiff_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "short": ctypes.c_int16, "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16,
    "char": ctypes.c_int8, "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "bool": ctypes.c_bool,
}
_POINTEES: dict[str, tuple[torch.dtype, ...]] = {
    "float": (torch.float32,), "double": (torch.float64,),
    "int": (torch.int32,), "int32_t": (torch.int32,), "unsigned": (torch.int32,), "uint32_t": (torch.int32,),
    "long": (torch.int64,), "int64_t": (torch.int64,), "long long": (torch.int64,),
    "short": (torch.int16,), "int16_t": (torch.int16,),
    # 16-bit floats travel as their raw bits
    "uint16_t": (torch.float16, torch.bfloat16, torch.int16),
    "char": (torch.int8,), "int8_t": (torch.int8,), "uint8_t": (torch.uint8, torch.bool), "bool": (torch.bool,),
    "void": (),  # any dtype
}
_FLOAT_RET = {"float", "double"}
_PROTO = re.compile(r"^\s*(?:extern\s+\"C\"\s+)?(?P<ret>[\w\s]+?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*;?\s*$")


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str
    pointer: bool
    const: bool

    @property
    def is_output(self) -> bool:
        """A non-const pointer: memory the kernel may write."""
        return self.pointer and not self.const


@dataclass(frozen=True)
class Prototype:
    name: str
    ret: str
    params: tuple[Param, ...]

    def __str__(self) -> str:
        args = ", ".join(("const " if p.const else "") + p.ctype + ("*" if p.pointer else "") + " " + p.name
                         for p in self.params)
        return f"{self.ret} {self.name}({args})"


def _base_type(words: list[str]) -> str:
    words = [w for w in words if w not in ("restrict", "__restrict", "__restrict__", "signed", "volatile")]
    text = " ".join(words)
    if text in ("unsigned int",):
        return "unsigned"
    if text in ("long int", "long long int"):
        return text.replace(" int", "")
    return text


def parse_prototype(text: str) -> Prototype:
    """``"void f(const float* x, float* y, int64_t n)"`` -> a Prototype."""
    m = _PROTO.match(text)
    if not m:
        raise NativeError(f"not a C prototype: {text!r} (expected e.g. 'void f(const float* x, float* y, int64_t n)')")
    ret = _base_type(m["ret"].split())
    if ret != "void" and ret not in _SCALARS:
        raise NativeError(f"{m['name']}: return type {ret!r} is not supported (use void or a scalar type)")
    params: list[Param] = []
    raw = m["params"].strip()
    for i, part in enumerate([] if raw in ("", "void") else raw.split(",")):
        pointer = part.count("*")
        if pointer > 1 or "[" in part:
            raise NativeError(f"{m['name']}: parameter {part.strip()!r}: only single pointers are supported")
        words = part.replace("*", " * ").split()
        const = "const" in words
        words = [w for w in words if w != "const"]
        name = f"arg{i}"
        if words and words[-1] != "*" and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and len([w for w in words if w != "*"]) > 1:
            name = words.pop()
        ctype = _base_type([w for w in words if w != "*"])
        known = _POINTEES if pointer else _SCALARS
        if ctype not in known:
            raise NativeError(f"{m['name']}: parameter {part.strip()!r}: type {ctype!r} is not supported")
        params.append(Param(name=name, ctype=ctype, pointer=bool(pointer), const=const))
    return Prototype(name=m["name"], ret=ret, params=tuple(params))


@functools.cache
def _compiler_version(compiler: str) -> str:
    """Asked once per process (the warm runner asks before it forks, so a
    candidate's child never starts the compiler, not even for this)."""
    try:
        return subprocess.run([compiler, "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def compiler_versions() -> dict[str, str]:
    """Language -> the compiler's version, as it enters ``source_key``."""
    return {lang: _compiler_version(cc) for lang, cc in COMPILER.items()}


@functools.cache
def blas_dir() -> str | None:
    """Where OpenBLAS's OpenMP build lies on this machine, if it does."""
    return next((d for d in BLAS_DIRS if os.path.exists(os.path.join(d, BLAS_LIB))), None)


@functools.cache
def dnnl_dir() -> str | None:
    """Where oneDNN lies on this machine, if it does."""
    return next((d for d in DNNL_DIRS if os.path.exists(os.path.join(d, DNNL_LIB))), None)


def link_flags() -> tuple[str, ...]:
    """Linker flags after the object: OpenBLAS and oneDNN where present, as
    needed (a library that calls neither does not depend on them)."""
    flags: tuple[str, ...] = ()
    for found, lib in ((blas_dir(), BLAS_LIB), (dnnl_dir(), DNNL_LIB)):
        if found is not None:
            flags += (f"-L{found}", f"-l:{lib}", f"-Wl,-rpath,{found}")
    return ("-Wl,--as-needed", *flags) if flags else ()


def key_spec() -> dict[str, str]:
    """Language -> everything but the source that enters ``source_key`` here
    (flags, standard, compiler version): the judge computes keys from the
    sandbox's spec, so a sandbox with other code or another compiler agrees."""
    return {lang: "\0".join((" ".join(FLAGS + STRICT[lang] + link_flags()), STD[lang], _compiler_version(cc)))
            for lang, cc in COMPILER.items()}


def source_key(source: str, lang: str = "c", spec: str | None = None) -> str:
    """The cache key of a build: source, language, flags and compiler version
    (``spec``: ``key_spec()[lang]`` as computed elsewhere, e.g. in the sandbox)."""
    if lang not in COMPILER:
        raise NativeError(f"lang must be 'c' or 'c++', not {lang!r}")
    h = hashlib.sha256()
    spec = key_spec()[lang] if spec is None else spec
    for part in (lang, spec, source):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:32]


def default_cache_dir() -> str:
    return os.environ.get("KFORGE_NATIVE_CACHE") or os.path.join(tempfile.gettempdir(), f"kforge-native-{os.getuid()}")


def build(source: str, lang: str = "c", name: str = "kernel", cache_dir: str | None = None,
          key: str | None = None) -> str:
    """Compiles ``source`` into a shared library (or finds it in the cache) and returns its path."""
    return build_inspected(source, lang, name, cache_dir, key, inspect=False)[0]


def _compile(cmd: list[str], cwd: str, what: str) -> None:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise NativeBuildError(f"{what}: the compiler took longer than {BUILD_TIMEOUT_S:.0f} s") from exc
    except OSError as exc:
        raise NativeBuildError(f"{cmd[0]} could not be started: {exc}") from exc
    if done.returncode != 0:
        raise NativeBuildError((done.stderr or done.stdout).strip()[:4000] or f"{cmd[0]} exited {done.returncode}")


def build_inspected(source: str, lang: str = "c", name: str = "kernel", cache_dir: str | None = None,
                    key: str | None = None, inspect: bool = True) -> tuple[str, dict[str, Any] | None]:
    """``build``, and with ``inspect`` the facts of ``native_inspect`` about what
    compiled (the object is inspected, then linked as it is into the library)."""
    key = key or source_key(source, lang)
    cache_dir = cache_dir or default_cache_dir()
    target = os.path.join(cache_dir, f"{key}.so")
    if os.path.exists(target) and not inspect:
        return target, None
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix="build-", dir=cache_dir)
    try:
        src = re.sub(r"\W", "_", name) + SUFFIX[lang]
        with open(os.path.join(work, src), "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(source)
        compile_flags = [f for f in FLAGS if f != "-shared"] + [*STRICT[lang], STD[lang]]
        _compile([COMPILER[lang], *compile_flags, "-c", "-o", "k.o", src], work, src)
        facts = native_inspect.inspect_build(COMPILER[lang], compile_flags, lang, src, "k.o", work) \
            if inspect else None
        _compile([COMPILER[lang], *FLAGS, "-o", "lib.so", "k.o", *link_flags()], work, src)
        os.replace(os.path.join(work, "lib.so"), target)  # atomic: a reader never sees half a library
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target, facts


def is_mapped(value: int) -> bool:
    """Whether ``value`` points into memory this process has mapped (read
    only for integers past 32 bits: sizes, strides and counts never get here)."""
    value &= (1 << 64) - 1
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                lo, _, hi = line.partition(" ")[0].partition("-")
                if int(lo, 16) <= value < int(hi, 16):
                    return True
    except (OSError, ValueError):
        return False
    return False


# Set by the judge's runner before the candidate loads: source key -> library
# path built by trusted code. When it is set, nothing else may be loaded.
prebuilt: dict[str, str] | None = None


class NativeFunction:
    """One exported function; checks every call against its prototype."""

    def __init__(self, proto: Prototype, cfunc: Any) -> None:
        self.proto = proto
        self.__name__ = proto.name
        cfunc.argtypes = [ctypes.c_void_p if p.pointer else _SCALARS[p.ctype] for p in proto.params]
        cfunc.restype = None if proto.ret == "void" else _SCALARS[proto.ret]

        # The ctypes function stays in this closure, not in an attribute: a
        # ctypes object would hand the candidate raw calls at any address.
        def invoke(converted: list[Any]) -> Any:
            return cfunc(*converted)

        self._invoke = invoke

    def outputs(self, args: tuple[Any, ...]) -> list[torch.Tensor]:
        """The tensors passed for non-const pointers: what the kernel may write."""
        return [a for p, a in zip(self.proto.params, args) if p.is_output and isinstance(a, torch.Tensor)]

    def convert(self, args: tuple[Any, ...]) -> list[Any]:
        proto = self.proto
        if len(args) != len(proto.params):
            raise NativeArgumentError(f"{proto.name}() takes {len(proto.params)} arguments ({proto}), got {len(args)}")
        out: list[Any] = []
        for p, a in zip(proto.params, args):
            where = f"{proto.name}(): argument {p.name!r}"
            if p.pointer:
                if not isinstance(a, torch.Tensor):
                    raise NativeArgumentError(f"{where} must be a tensor, not {type(a).__name__}")
                if a.device.type != "cpu":
                    raise NativeArgumentError(f"{where} is on {a.device}; native kernels take CPU tensors")
                if not a.is_contiguous():
                    raise NativeArgumentError(f"{where} is not contiguous; call .contiguous() first")
                allowed = _POINTEES[p.ctype]
                if allowed and a.dtype not in allowed:
                    raise NativeArgumentError(f"{where} is {a.dtype}; a {p.ctype}* takes {', '.join(map(str, allowed))}")
                if p.is_output and a.requires_grad and torch.is_grad_enabled():
                    raise NativeArgumentError(f"{where} requires grad; write into a tensor made under torch.no_grad()")
                out.append(a.data_ptr() if a.numel() else None)
            else:
                if isinstance(a, torch.Tensor) or not isinstance(a, (int, float, bool)):
                    raise NativeArgumentError(f"{where} must be a Python number, not {type(a).__name__}")
                if p.ctype not in _FLOAT_RET and isinstance(a, float):
                    raise NativeArgumentError(f"{where} is a {p.ctype}; pass an int, not {a!r}")
                if isinstance(a, int) and not isinstance(a, bool) and abs(a) >= 1 << 32 and is_mapped(a):
                    raise NativeArgumentError(f"{where} is an address in this process's memory; memory reaches "
                                              "a kernel only as a tensor argument of a pointer parameter")
                out.append(a)
        return out

    def __call__(self, *args: Any) -> Any:
        return self._invoke(self.convert(args))

    def __repr__(self) -> str:
        return f"<native {self.proto}>"


class NativeLibrary:
    """The loaded library: one attribute per declared function."""

    def __init__(self, name: str, key: str, functions: dict[str, NativeFunction]) -> None:
        self._name = name
        self._key = key
        self._functions = functions
        for fname, fn in functions.items():
            setattr(self, fname, fn)

    def __dir__(self) -> list[str]:
        return list(self._functions)

    def __repr__(self) -> str:
        return f"<native library {self._name}: {', '.join(self._functions)}>"


def load(source: str, functions: list[str], name: str = "kernel", lang: str = "c") -> NativeLibrary:
    """Builds ``source`` (C, or C++ with ``lang="c++"``) and returns its declared functions.

    ``functions`` lists the C prototypes of the functions to call; in C++
    they must be declared ``extern "C"`` in the source.
    """
    if not isinstance(source, str) or not source.strip():
        raise NativeError("source must be a non-empty string of C/C++ code")
    if not functions or isinstance(functions, str):
        raise NativeError("functions must be a list of C prototypes, e.g. ['void f(const float* x, float* y, int64_t n)']")
    protos = [parse_prototype(f) for f in functions]
    key = source_key(source, lang)
    if prebuilt is not None:
        if key not in prebuilt:
            raise NativeError(f"{name}: this source was not built by the judge; native sources must be string "
                              "literals at module level, passed to load_c/load_cpp as they are")
        path = prebuilt[key]
    else:
        path = build(source, lang, name)
    handle = ctypes.CDLL(path, mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
    out: dict[str, NativeFunction] = {}
    for proto in protos:
        try:
            cfunc = getattr(handle, proto.name)
        except AttributeError:
            hint = ' (C++ functions must be declared extern "C")' if lang == "c++" else ""
            raise NativeError(f"{name}: the library exports no function {proto.name!r}{hint}") from None
        out[proto.name] = NativeFunction(proto, cfunc)
    return NativeLibrary(name, key, out)


def load_c(source: str, functions: list[str], name: str = "kernel") -> NativeLibrary:
    """C source (gnu11) -> library; see the module docstring."""
    return load(source, functions, name, "c")


def load_cpp(source: str, functions: list[str], name: str = "kernel") -> NativeLibrary:
    """C++ source (gnu++17) -> library; exported functions must be ``extern "C"``."""
    return load(source, functions, name, "c++")
