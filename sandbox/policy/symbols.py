"""The source policy applied to what a native build actually compiled.

``policy_native`` reads the text the author wrote; the build in the sandbox
also reports facts about the translation unit and the object file
(``runner/native/facts``), and these rules judge them. They are the truth:
a name hidden by splices, digraphs or macros is in the preprocessed tokens; a
header included through a digraph directive is in the include stack; a
library call, however it was spelled, is an undefined symbol of the object;
state kept between calls, however it was declared, is writable data; a clock
read through an intrinsic is an instruction in the disassembly.

A kernel's object may reference only: libm, the memory and arithmetic parts
of libc, libgomp's entry points and its read-only queries, the C++ runtime
pieces that <vector>/<algorithm> need, and compiler glue. It may define no
writable data, run nothing at load, and contain no instruction that reads a
clock or counter, enters the kernel or inspects the machine.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..native_sources import NativeSource
from ..runner.native.facts import FACTS_VERSION
from . import native as policy_native

_MATH = ("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 log log2 log10 "
         "log1p logb ilogb pow pow10 sqrt cbrt hypot erf erfc tgamma lgamma lgamma_r gamma ceil floor trunc round "
         "lround llround rint lrint llrint nearbyint fmod remainder remquo copysign nan nextafter nexttoward "
         "nextup nextdown fdim fmax fmin fma frexp ldexp modf scalb scalbn scalbln significand fabs sincos j0 j1 "
         "jn y0 y1 yn").split()
_COMPLEX = ("cabs carg cimag creal conj cproj cexp clog cpow csqrt csin ccos ctan csinh ccosh ctanh casin cacos "
            "catan casinh cacosh catanh").split()
_LIBC = {
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp", "strchr",
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "abs", "labs", "llabs", "div", "ldiv", "lldiv", "imaxabs", "imaxdiv", "qsort", "bsearch",
    "__errno_location", "__assert_fail", "fegetround", "fetestexcept", "feclearexcept",
    "__stack_chk_fail", "__stack_chk_guard", "__dso_handle", "_GLOBAL_OFFSET_TABLE_",
    "__cpu_model", "__cpu_features2", "__cpu_indicator_init", "__libc_single_threaded",
}
# The OpenMP queries a kernel uses to split its work; omp_set_* (changes the
# runtime for everyone), the wall clock and omp_get_num_procs (threads beyond
# the grant) are not among them.
_OMP = {
    "omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads", "omp_in_parallel", "omp_get_level",
    "omp_get_active_level", "omp_get_ancestor_thread_num", "omp_get_team_size", "omp_get_dynamic",
    "omp_get_nested", "omp_get_max_active_levels", "omp_in_final", "omp_get_num_teams",
    "omp_get_team_num", "omp_get_cancellation", "omp_init_lock", "omp_destroy_lock", "omp_set_lock",
    "omp_unset_lock", "omp_test_lock", "omp_init_nest_lock", "omp_destroy_nest_lock", "omp_set_nest_lock",
    "omp_unset_nest_lock", "omp_test_nest_lock",
}
_CXX = {"__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow", "__cxa_allocate_exception", "__cxa_throw",
        "__cxa_free_exception", "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort",
        "__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_call_unexpected", "__cxa_call_terminate",
        "__gxx_personality_v0", "_Unwind_Resume", "_ZSt9terminatev"}
_ALLOWED = re.compile("|".join((
    rf"(?:{'|'.join(_MATH)})[fl]?(?:_r)?",  # libm (and sincosf, lgammaf_r...)
    rf"(?:{'|'.join(_COMPLEX)})[fl]?",
    r"__\w+_finite",  # glibc's old -ffinite-math names
    r"_ZGV\w+",  # libmvec: vectorised libm
    r"__(?:u?div|u?mod|mul|popcount|clz|ctz|ffs|parity|bswap|ashl|ashr|lshr|neg|u?cmp|fixuns|fix|floatun|float"
    r"|extend|trunc|pow|add|sub|eq|ne|lt|le|gt|ge|unord)[a-z]*\d",  # libgcc arithmetic helpers
    r"__(?:mem(?:cpy|move|set))_chk",
    r"__atomic_\w+", r"GOMP_\w+",
    r"cblas_[sdcz]\w+|cblas_i[sdcz]a(?:max|min)",  # OpenBLAS's compute routines (not openblas_set_*, xerbla)
    # oneDNN's objects (engine, stream, memory, descriptors, primitives, attributes, post-ops) and
    # sgemm; not its global switches (dnnl_set_*: verbose output, JIT dumps to files, ISA caps,
    # cache sizes), reduced-precision math modes, serialised primitives or other runtimes' interop
    r"dnnl_(?!set_|\w*fpmath|\w*cache_blob|\w*threadpool|\w*sycl|\w*ocl)\w+",
    r"_Z(?:nw|na|dl|da)\w*",  # operator new / delete
    r"_ZSt\d+__throw_\w+", r"_ZSt\d+__glibcxx_assert_fail\w*",
    r"_ZT[ISV](?:St\d+|N10__cxxabiv1)\w*",  # typeinfo and vtables of std and cxxabi classes (exceptions)
    r"_ZNSt\d+(?:bad_\w+|exception|logic_error|length_error|out_of_range|invalid_argument|runtime_error)\w*",
    r"_ZNKSt\d+(?:bad_\w+|exception|logic_error)\w*",
)))
# Compiler glue that is writable but no state of the kernel's: C++'s personality
# pointer, and the mutex pointer of a named ``#pragma omp critical(name)``.
_GLUE_DATA = re.compile(r"^(DW\.ref\.__gxx_personality_v0|\.gomp_critical_user_\w+)$")
# Instructions a kernel has no use for: clocks and counters (it would know when
# it is timed), entries into the kernel, and reads of the machine's identity.
_INSTRUCTIONS = {
    **dict.fromkeys(("rdtsc", "rdtscp", "rdpmc", "rdpid", "tpause", "umwait", "umonitor"), "reads a clock or counter"),
    **dict.fromkeys(("syscall", "sysenter", "sysexit", "sysret", "int", "int1", "int3", "into", "iret", "iretq",
                     "lcall", "ljmp", "svc", "hvc", "smc", "vmcall", "vmmcall", "vmfunc", "senduipi", "uiret",
                     "in", "out", "ins", "outs", "insb", "insl", "outsb", "outsl", "hlt"), "enters the OS"),
    **dict.fromkeys(("cpuid", "rdrand", "rdseed", "sgdt", "sidt", "sldt", "str", "smsw", "lsl", "lar", "rdfsbase",
                     "rdgsbase", "wrfsbase", "wrgsbase", "rdpkru", "wrpkru", "xgetbv", "rdsspq", "rdsspd"),
                    "inspects or changes the machine"),
    "(bad)": "bytes that are not an instruction",
}


# %fs/%gs-relative memory: only the stack protector's canary (``%fs:0x28``).
_SEGMENTS_OK = {"%fs:0x28"}


def allowed_symbol(name: str) -> bool:
    name = name.split("@", 1)[0]
    return name in _LIBC or name in _OMP or name in _CXX or bool(_ALLOWED.fullmatch(name))


def _where(src: NativeSource, filename: str, line: int | None) -> str:
    if line is None:
        return f"{src.filename} (compiled)"
    return f"{src.filename}:{line} ({filename}:{src.text_line + line - 1})"


def _line_of_name(src: NativeSource, name: str) -> int | None:
    """Where the user's text names ``name`` (a data symbol: ``calls.0`` -> ``calls``), if it does."""
    base = re.split(r"[.(<]", name.split("::")[-1] if "::" in name else name, maxsplit=1)[0]
    if not base or not re.fullmatch(r"[A-Za-z_]\w*", base):
        return None
    _, code = policy_native.normalized(src.text, src.lang)
    m = re.search(rf"\b{re.escape(base)}\b", code)
    return code.count("\n", 0, m.start()) + 1 if m else None


def check_facts(src: NativeSource, facts: dict[str, Any] | None, filename: str) -> list[str]:
    """'name.c:line (candidate.py:line): text' (or 'name.c (compiled): text') per finding."""
    if not facts:
        return [f"{_where(src, filename, None)}: the build reported no inspection of what compiled"]
    if facts.get("v") != FACTS_VERSION:
        return [f"{_where(src, filename, None)}: the build's inspection is version {facts.get('v')}, the judge reads "
                f"version {FACTS_VERSION} (the sandbox runs other code than the judge: restart or rebuild it)"]
    out = [f"{_where(src, filename, None)}: {e}" for e in facts.get("errors", [])]
    shown = facts.get("demangled", {})
    for f in policy_native.check_preprocessed(facts.get("tu", ""), src.lang):
        out.append(f"{_where(src, filename, f.line)}: after preprocessing: {f.text}")
    headers = policy_native.HEADERS_C | (policy_native.HEADERS_CPP if src.lang == "c++" else set())
    for inc in facts.get("includes", []):
        if inc.get("name") not in headers:
            out.append(f"{_where(src, filename, inc.get('line'))}: includes <{inc.get('name')}>: not an allowed "
                       "header (allowed: arithmetic, memory, SIMD intrinsics, OpenMP; see docs/cpu_backend.md)")
    if facts.get("line_renames") or facts.get("forged_markers"):
        out.append(f"{_where(src, filename, None)}: #line or line-marker directives rename the source")
    for sym in facts.get("undefined", []):
        if not allowed_symbol(sym):
            out.append(f"{_where(src, filename, _line_of_name(src, sym))}: calls {shown.get(sym, sym)}: not a "
                       "library function a kernel may use (libm, memory, OpenMP queries, cblas_* compute "
                       "routines, oneDNN's dnnl_* objects; see docs/cpu_backend.md)")
    for w in facts.get("writable", []):
        sym = w.get("symbol", "")
        if _GLUE_DATA.match(sym):
            continue
        what = f"`{shown.get(sym, sym)}`" if sym else "data"
        out.append(f"{_where(src, filename, _line_of_name(src, shown.get(sym, sym)) if sym else None)}: "
                   f"mutable state kept between calls: {what} ({w.get('size')} bytes in {w.get('section')}) is "
                   "writable; a kernel keeps no state (make tables const, keep the rest local)")
    for sec in facts.get("init", []):
        out.append(f"{_where(src, filename, None)}: section {sec}: runs code when the library loads or unloads")
    for sec in facts.get("exec_sections", []):
        out.append(f"{_where(src, filename, None)}: code in section {sec}: kernels' code stays in .text")
    for mnemonic, func in sorted(facts.get("mnemonics", {}).items()):
        if mnemonic in _INSTRUCTIONS:
            out.append(f"{_where(src, filename, None)}: instruction `{mnemonic}` in {func}(): "
                       f"{_INSTRUCTIONS[mnemonic]}")
    for operand, func in sorted(facts.get("segments", {}).items()):
        if operand not in _SEGMENTS_OK:
            out.append(f"{_where(src, filename, None)}: `{operand}` in {func}(): reaches thread-control memory "
                       "through a segment register (state kept outside the kernel)")
    return list(dict.fromkeys(out))


def parse_facts(text: Any) -> dict[str, Any] | None:
    """Facts as they arrive from the sandbox (a JSON string), or None if unusable."""
    try:
        facts = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return facts if isinstance(facts, dict) else None
