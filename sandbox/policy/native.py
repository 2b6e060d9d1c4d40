"""What a native (C/C++) kernel source may not do, read from its exact text.

The text is the string the judge builds (``native_sources``), never run here.
A kernel computes on the pointers it is given; it has no business with the
process, the file system, the network, the environment, clocks, the Python
interpreter, or state kept from one call to the next. So:

* ``#include`` only headers of an allowlist (arithmetic, strings of memory,
  SIMD intrinsics, OpenMP, a few C++ containers and algorithms);
* no preprocessor tricks that hide names (``##`` token pasting, computed
  ``#include``, ``#line``, ``_Pragma``, pragmas other than OpenMP and a few
  optimisation hints);
* no calls into process, thread, signal, file, network, dynamic-loading,
  environment, clock or stack-walking functions (threads: OpenMP only);
* no inline assembly, no ``__attribute__`` that runs code at load or unload
  (constructor, destructor) or renames symbols (alias, ifunc, section...);
* no mutable file-scope or function-``static`` state (a result cache is a
  cheat), no ``thread_local``; and no declaration of a function the source
  does not define (that would smuggle in libc without its header), except
  what the allowed headers declare.

Findings name the line in the C text (``name.c:line``) and in the candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..native_sources import NativeSource

HEADERS_C = {
    "stdint.h", "stddef.h", "stdbool.h", "stdlib.h", "string.h", "math.h", "float.h", "limits.h", "stdalign.h",
    "stdatomic.h", "assert.h", "complex.h", "tgmath.h", "fenv.h", "inttypes.h", "errno.h", "iso646.h",
    "omp.h", "cblas.h", "dnnl.h", "oneapi/dnnl/dnnl.h",
    "immintrin.h", "x86intrin.h", "xmmintrin.h", "emmintrin.h", "pmmintrin.h", "tmmintrin.h", "smmintrin.h",
    "nmmintrin.h", "wmmintrin.h", "ammintrin.h", "mmintrin.h", "fmaintrin.h", "f16cintrin.h",
    "arm_neon.h", "arm_sve.h", "arm_fp16.h", "arm_bf16.h",
}
HEADERS_CPP = {
    "algorithm", "cmath", "cstdint", "cstring", "cstddef", "cfloat", "climits", "cstdlib", "cassert", "cstdbool",
    "type_traits", "array", "utility", "limits", "numeric", "functional", "vector", "memory", "tuple",
    "initializer_list", "complex", "bit", "atomic", "new", "iterator", "cinttypes", "cerrno", "cfenv",
    "span", "optional", "variant", "string_view", "numbers",
}
_PRAGMAS_OK = re.compile(r"^\s*(omp\b|GCC\s+(ivdep|unroll|optimize|target|push_options|pop_options|diagnostic)\b"
                         r"|unroll\b|once\b|ivdep\b|clang\s+loop\b)")
_DIRECTIVES_OK = {"include", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else",
                  "endif", "pragma", "error", "warning", ""}

_WHY = {
    "process": "creates or controls a process (a kernel computes on its arguments, nothing else)",
    "thread": "starts threads of its own (only OpenMP parallelism is allowed)",
    "signal": "handles or sends signals / ends the process",
    "file": "touches files or descriptors",
    "net": "uses the network",
    "dl": "loads code at run time",
    "env": "reads the environment",
    "clock": "reads a clock (a kernel that knows when it is timed)",
    "stack": "walks the stack or jumps out of the call",
    "python": "reaches into the Python interpreter",
    "mem": "maps or protects memory pages",
    "tcb": "reaches thread-control memory (state kept outside the kernel)",
}
# Names banned wherever they appear (not ordinary variable names).
_IDENTS: dict[str, str] = {
    **dict.fromkeys(("fork", "vfork", "clone", "clone3", "execl", "execle", "execlp", "execv", "execve", "execvp",
                     "execvpe", "fexecve", "posix_spawn", "posix_spawnp", "popen", "pclose", "waitpid", "wait3",
                     "wait4", "daemon", "ptrace", "prctl", "unshare", "setns", "syscall", "setuid", "setgid",
                     "setsid", "setrlimit"), "process"),
    **dict.fromkeys(("thrd_create", "thrd_detach", "jthread", "omp_set_num_threads", "omp_set_dynamic",
                     "omp_get_num_procs", "omp_set_max_active_levels", "omp_set_nested", "omp_get_thread_limit"),
                    "thread"),
    **dict.fromkeys(("killpg", "tgkill", "tkill", "sigaction", "sigprocmask", "pthread_sigmask", "setitimer",
                     "_exit", "_Exit", "quick_exit", "atexit", "at_quick_exit", "on_exit"), "signal"),
    **dict.fromkeys(("openat", "open64", "creat", "fopen", "fopen64", "freopen", "fdopen", "fread", "fwrite",
                     "fprintf", "fputs", "fgets", "fscanf", "pread", "pwrite", "readv", "writev", "lseek", "dup",
                     "dup2", "dup3", "pipe", "pipe2", "mkfifo", "mknod", "unlink", "unlinkat", "rmdir", "chdir",
                     "chmod", "chown", "opendir", "readdir", "lstat", "fstat", "ftruncate", "memfd_create",
                     "shm_open", "ioctl", "fcntl", "sendfile", "splice", "fsync", "stdin", "stdout", "stderr",
                     "FILE"), "file"),
    **dict.fromkeys(("socket", "socketpair", "accept4", "sendto", "sendmsg", "recvfrom", "recvmsg", "getaddrinfo",
                     "gethostbyname"), "net"),
    **dict.fromkeys(("dlopen", "dlmopen", "dlsym", "dlvsym", "dlclose", "dladdr", "dlinfo"), "dl"),
    **dict.fromkeys(("getenv", "secure_getenv", "setenv", "unsetenv", "putenv", "clearenv", "environ", "__environ",
                     "_environ"), "env"),
    **dict.fromkeys(("clock_gettime", "gettimeofday", "timespec_get", "rdtsc", "__rdtsc", "__rdtscp", "_rdtsc",
                     "__builtin_ia32_rdtsc", "__builtin_ia32_rdtscp", "__builtin_readcyclecounter", "nanosleep",
                     "usleep", "chrono", "omp_get_wtime", "omp_get_wtick"), "clock"),
    **dict.fromkeys(("__builtin_frame_address", "__builtin_return_address", "__builtin_extract_return_addr",
                     "__builtin_apply", "__builtin_apply_args", "__builtin_return", "__builtin_setjmp",
                     "__builtin_longjmp", "setjmp", "longjmp", "sigsetjmp", "siglongjmp", "_setjmp", "_longjmp",
                     "backtrace", "__builtin_eh_return", "__builtin_unwind_init"), "stack"),
    **dict.fromkeys(("__builtin_thread_pointer", "__builtin_set_thread_pointer", "__seg_fs", "__seg_gs"), "tcb"),
    **dict.fromkeys(("mmap", "mmap64", "munmap", "mprotect", "mremap", "madvise", "pkey_mprotect"), "mem"),
}
# Ordinary words (a variable may be called ``read``): banned as calls only.
_CALLS: dict[str, str] = {
    **dict.fromkeys(("system", "wait", "exec"), "process"),
    **dict.fromkeys(("kill", "raise", "signal", "alarm", "exit", "abort", "pause"), "signal"),
    **dict.fromkeys(("open", "read", "write", "close", "remove", "rename", "mkdir", "stat", "access", "truncate",
                     "sync", "printf", "puts", "perror"), "file"),
    **dict.fromkeys(("connect", "bind", "listen", "accept", "send", "recv"), "net"),
    **dict.fromkeys(("clock", "time", "sleep"), "clock"),
}
_STD = {"thread": "thread", "async": "thread", "jthread": "thread", "system": "process", "exit": "signal",
        "abort": "signal", "quick_exit": "signal", "getenv": "env", "signal": "signal", "raise": "signal",
        "fopen": "file", "remove": "file", "rename": "file", "clock": "clock", "time": "clock", "this_thread": "thread",
        "atexit": "signal", "terminate": "signal"}
_BAD_ATTRS = {"constructor", "destructor", "alias", "weakref", "ifunc", "section", "symver", "naked", "cleanup",
              "init_priority", "visibility", "weak"}
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class CFinding:
    line: int  # 1-based line in the C text
    text: str


def strip(text: str) -> str:
    """Comments and the contents of string and char literals blanked (lines kept);
    a backslash-newline inside a comment or literal is kept as a newline."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j < n and text[j] == c:
                out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
                i = j + 1
            else:  # unterminated (an apostrophe in an #error line): blank to the end of the line
                out.append(" " * (j - i))
                i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def splice(text: str) -> str:
    """Backslash-newline splices joined (gcc also joins a backslash followed by
    blanks); the newlines removed go to the end of the joined line, so every
    token keeps the line its logical line starts on."""
    out: list[str] = []
    pending = 0
    for physical in text.replace("\r\n", "\n").split("\n"):
        joined = re.sub(r"\\[ \t]*$", "", physical)
        out.append(joined)
        if joined != physical:
            pending += 1
        else:
            out.append("\n" * (pending + 1))
            pending = 0
    return "".join(out)[:-1]


_DIGRAPHS = {"%:%:": "##  ", "%:": "# ", "<%": "{ ", "%>": "} ", "<:": "[ ", ":>": "] "}


def digraphs(code: str, lang: str) -> str:
    """Digraphs spelled as the tokens they are (same length; comments and literals already blanked).
    In C++ ``<::`` not followed by ``:`` or ``>`` is ``<`` then ``::``."""
    less_colon = r"<:(?!:(?![:>]))" if lang == "c++" else r"<:"
    return re.sub(rf"%:%:|%:|<%|%>|{less_colon}|:>", lambda m: _DIGRAPHS[m.group(0)], code)


def normalized(text: str, lang: str) -> tuple[str, str]:
    """(raw, code): splices joined; in ``code`` comments and literals blanked and digraphs resolved."""
    raw = splice(text)
    return raw, digraphs(strip(raw), lang)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _directives(raw: str, code: str, lang: str) -> list[CFinding]:
    found: list[CFinding] = []
    headers = HEADERS_C | (HEADERS_CPP if lang == "c++" else set())
    # Logical lines: a backslash-newline continues a directive.
    for m in re.finditer(r"^[ \t]*#[ \t]*(\w*)((?:[^\n]*\\\n)*[^\n]*)", code, re.M):
        line = _line_of(code, m.start())
        name, rest = m.group(1), m.group(2)
        raw_rest = raw[m.start(2):m.end(2)]
        if name not in _DIRECTIVES_OK:
            found.append(CFinding(line, f"#{name}: directive not allowed in a kernel"))
        elif name == "include":
            inc = re.match(r"\s*(<([^>\n]*)>|\"([^\"\n]*)\")", raw_rest)
            header = (inc.group(2) or inc.group(3) or "").strip() if inc else None
            if header is None:
                found.append(CFinding(line, "#include of a computed name: name the header"))
            elif header not in headers:
                found.append(CFinding(line, f"#include <{header}>: not an allowed header (allowed: arithmetic, "
                                            "memory, SIMD intrinsics, OpenMP; see docs/cpu_backend.md)"))
        elif name == "pragma" and not _PRAGMAS_OK.match(raw_rest):
            found.append(CFinding(line, f"#pragma{raw_rest.rstrip()[:60]}: only OpenMP and loop/optimisation "
                                        "pragmas are allowed"))
        elif name == "pragma" and re.search(r"\b(num_threads|proc_bind)\s*\(", re.sub(r"\\\n", "", raw_rest)):
            found.append(CFinding(line, "OpenMP num_threads/proc_bind clause: a kernel runs on the threads the "
                                        "judge grants (the baselines' count); use omp_get_max_threads()"))
        elif name == "define" and "##" in rest:
            found.append(CFinding(line, "#define with ## token pasting: builds names the policy cannot see"))
    return found


def _attributes(code: str) -> list[CFinding]:
    found = []
    for m in re.finditer(r"\b__attribute(?:__)?\s*\(\(|\[\[", code):
        depth, j = 0, m.start()
        end = code.find("]]", m.end()) if m.group(0) == "[[" else -1
        if end < 0:
            j = code.find("(", m.start())
            while j < len(code):
                depth += {"(": 1, ")": -1}.get(code[j], 0)
                if depth == 0:
                    break
                j += 1
            end = j
        body = code[m.end():end]
        for word in _IDENT.findall(body):
            if word.strip("_") in _BAD_ATTRS:
                found.append(CFinding(_line_of(code, m.start()), f"attribute {word.strip('_')}: runs code at load/"
                                                                 "unload or renames symbols"))
    return found


def _names(code: str) -> list[CFinding]:
    found = []
    for m in _IDENT.finditer(code):
        word = m.group(0)
        before = code[max(0, m.start() - 2):m.start()]
        after = code[m.end():m.end() + 40].lstrip()
        member = before.endswith(".") or before.endswith("->")
        std = before == "::" and code[max(0, m.start() - 5):m.start()] == "std::"
        kind = None
        if word in ("asm", "__asm__", "__asm"):
            found.append(CFinding(_line_of(code, m.start()), f"{word}: inline assembly is not allowed"))
            continue
        if word in ("_Pragma", "__pragma"):
            found.append(CFinding(_line_of(code, m.start()), f"{word}: write pragmas as #pragma lines"))
            continue
        if word in ("thread_local", "_Thread_local", "__thread"):
            found.append(CFinding(_line_of(code, m.start()), f"{word}: state kept between calls is not allowed"))
            continue
        if std and word in _STD:
            kind = _STD[word]
        elif member:
            continue
        elif word in _IDENTS:
            kind = _IDENTS[word]
        elif word.startswith("pthread_"):
            kind = "thread"
        elif re.match(r"Py[A-Z_]", word) or word.startswith("_Py"):
            kind = "python"
        elif word in _CALLS and after.startswith("(") and before != "::":
            kind = _CALLS[word]
        if kind:
            found.append(CFinding(_line_of(code, m.start()), f"uses {('std::' if std else '') + word}: {_WHY[kind]}"))
    return found


def _blank_directives(code: str) -> str:
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code, flags=re.M)


def _state(code: str) -> list[CFinding]:
    """Mutable file-scope variables, function-static variables, and declared-but-not-defined functions."""
    body = _blank_directives(code)
    found: list[CFinding] = []
    defined = set(re.findall(r"\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*|noexcept\s*|__attribute__\s*\(\(.*?\)\)\s*)*\{",
                             body, re.S))
    # Walk top-level statements: depth counts braces, except linkage/namespace blocks.
    depth = 0
    transparent: list[int] = []  # depths opened by extern "C" { / namespace x {
    start = 0
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == "{":
            head = body[start:i]
            if depth == len(transparent) and re.search(r"(\bextern\s*\"\s*\"|\bnamespace\b[\w\s:]*)\s*$", head):
                transparent.append(depth + 1)
                start = i + 1
            depth += 1
        elif c == "}":
            if transparent and transparent[-1] == depth:
                transparent.pop()
                start = i + 1
            depth -= 1
            if depth == len(transparent):
                head = body[start:i + 1]
                # A function body ends here unless the statement goes on (struct S {...} s;).
                if re.search(r"\)\s*(?:const\s*|noexcept\s*|override\s*|->[^{;]*)*\{", head) and \
                        not re.match(r"\s*(typedef|struct|union|enum|class)\b", head):
                    _function_statics(head, start, body, found)
                    start = i + 1
        elif c == ";" and depth == len(transparent):
            _top_statement(body[start:i], start, body, defined, found)
            start = i + 1
        i += 1
    return found


def _const_object(decl: str) -> bool:
    """The declared object itself is const: ``const float t[]`` or ``float *const p``,
    not ``const float *p`` (a pointer to const that the code may re-point)."""
    tail = decl.rsplit("*", 1)[-1] if "*" in decl else decl
    return bool(re.search(r"\b(const|constexpr)\b", tail))


def _function_statics(text: str, offset: int, body: str, found: list[CFinding]) -> None:
    for m in re.finditer(r"\bstatic\b([^;{(=]*)", text):
        decl = m.group(1)
        after = text[m.end():m.end() + 1]
        if after == "(" and not re.search(r"\b(const|constexpr)\b", decl):
            # a static member/local function declaration, not a variable (``static void helper(...)``)
            continue
        line = _line_of(body, offset + m.start())
        if _const_object(decl):
            continue
        found.append(CFinding(line, f"static variable `{' '.join(decl.split())[:40]}` in a function: state kept "
                                    "between calls is not allowed (a result cache is a cheat)"))


def _top_statement(stmt: str, offset: int, body: str, defined: set[str], found: list[CFinding]) -> None:
    s = stmt.strip()
    if not s:
        return
    line = _line_of(body, offset + len(stmt) - len(stmt.lstrip()))
    words = s.split()
    if words[0] in ("typedef", "using", "template", "_Static_assert", "static_assert", "namespace") \
            or re.match(r"(struct|union|enum|class)\b[^={]*(\{.*\})?\s*$", s, re.S):
        return
    # A function declaration: name(...) with no '=' before the parenthesis.
    fm = re.match(r"^(?:extern\s*\"[^\"]*\"\s*)?([^=(]*?)\b([A-Za-z_]\w*)\s*\(", s, re.S)
    if fm and "=" not in s[:fm.end()] and not re.search(r"\(\s*\*", s[:fm.end() + 3]):
        name = fm.group(2)
        if name not in defined:
            found.append(CFinding(line, f"declares function {name}() that the source does not define: "
                                        "library functions come from the allowed headers only"))
        return
    if words[0] == "extern" and not s.startswith('extern "'):
        found.append(CFinding(line, f"extern declaration `{' '.join(words)[:50]}`: reaches state outside the kernel"))
        return
    decl = s.split("=", 1)[0]
    if _const_object(decl):
        return
    found.append(CFinding(line, f"file-scope variable `{' '.join(decl.split())[:50]}`: mutable state kept between "
                                "calls is not allowed (a result cache is a cheat); make it const or a local"))


def _unique(found: list[CFinding]) -> list[CFinding]:
    seen: dict[tuple[int, str], CFinding] = {}
    for f in found:
        seen.setdefault((f.line, f.text), f)
    return sorted(seen.values(), key=lambda f: f.line)


def check_text(text: str, lang: str) -> list[CFinding]:
    raw, code = normalized(text, lang)
    return _unique(_directives(raw, code, lang) + _attributes(code) + _names(code) + _state(code))


def check_preprocessed(tu: str, lang: str) -> list[CFinding]:
    """The name rules on the user's tokens after ``gcc -E`` (macros expanded,
    splices and digraphs resolved; ``runner/native/facts.user_text``). The
    only directives left there are pragmas (``_Pragma`` becomes one)."""
    code = strip(tu)
    # Directive rules on what is left: pragmas, OpenMP ones with their macros expanded.
    return _unique(_directives(tu, code, lang) + _attributes(code) + _names(_blank_directives(code)))


def check_source(src: NativeSource, filename: str) -> list[str]:
    """'name.c:line (candidate.py:line): text' for each finding in one source."""
    return [f"{src.filename}:{f.line} ({filename}:{src.text_line + f.line - 1}): {f.text}"
            for f in check_text(src.text, src.lang)]


def check_sources(sources: list[NativeSource], filename: str) -> list[list[str]]:
    return [check_source(s, filename) for s in sources]
