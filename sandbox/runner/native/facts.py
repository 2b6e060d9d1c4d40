"""Facts about the C/C++ that a native build actually compiled (run by trusted
code in the sandbox, next to the compiler; the judge applies the rules).

The judge's text rules read what the author wrote; the compiler reads
something else: backslash-newline splices, digraphs, macros and ``#line``
change what a name or a directive is. So the build also reports:

* ``tu``: the preprocessed tokens that come from the user's own file (macros
  expanded, splices and digraphs resolved), each on its original line;
* ``includes``: the headers the user's file included directly, named relative
  to the compiler's system include directories (from ``-H``, which follows the
  real include stack, not the linemarkers a source could forge);
* from the object file (parsed here, ELF64 little-endian): ``undefined``
  symbols it references, ``writable`` data it defines (.data/.bss/TLS and any
  other writable allocated section, but relocation-read-only data), sections
  that run code at load (``init``) and executable sections other than .text;
* ``mnemonics``: every instruction mnemonic in its disassembly (objdump), with
  the first function it occurs in; ``segments``: every %fs/%gs-relative
  operand (thread-control memory), likewise.

``errors`` lists what could not be established; the judge treats that as a
rejection (an inspection that did not happen must not pass). Standard library
only: this module runs inside the sandbox.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
from typing import Any

FACTS_VERSION = 2
TU_LIMIT = 4 << 20  # characters of the user's preprocessed text
TOOL_TIMEOUT_S = 120.0
_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d+)*)\s*$')
_PREFIXES = {"lock", "rep", "repz", "repe", "repnz", "repne", "notrack", "bnd", "data16", "addr32", "cs", "ds",
             "es", "fs", "gs", "ss", "xacquire", "xrelease"}
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHN_UNDEF, SHN_COMMON = 0, 0xFFF2
INIT_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".init", ".fini")


def _run(cmd: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                          errors="replace")


def search_dirs(compiler: str, flags: list[str], lang: str, cwd: str) -> list[str]:
    """The compiler's ``#include <...>`` directories, normalised, longest first."""
    done = _run([compiler, *flags, "-E", "-v", "-x", "c" if lang == "c" else "c++", os.devnull], cwd)
    text = done.stderr.split("#include <...> search starts here:", 1)[-1].split("End of search list.", 1)[0]
    dirs = [os.path.normpath(line.strip()) for line in text.splitlines() if line.strip()]
    return sorted(dirs, key=len, reverse=True)


def header_name(path: str, dirs: list[str]) -> str:
    """``/usr/include/c++/12/vector`` -> ``vector``; a path outside the system directories stays a path."""
    norm = os.path.normpath(path)
    for d in dirs:
        if norm.startswith(d + os.sep):
            return norm[len(d) + 1:]
    return norm


def user_text(preprocessed: str, main: str) -> tuple[str, list[int], int]:
    """The user's tokens on their lines; the lines where the user's file entered
    another file; and how many times a ``#line`` renamed the user's file."""
    stack: list[str] = []
    in_user = False
    line = 0
    out: dict[int, list[str]] = {}
    pushes: list[int] = []
    renames = 0
    for raw in preprocessed.splitlines():
        m = _MARKER.match(raw)
        if m:
            num, name, flags = int(m[1]), m[2], m[3].split()
            if "1" in flags:
                if in_user and len(stack) == 1:
                    pushes.append(max(line, 1))
                stack.append(name)
            elif "2" in flags:
                if len(stack) > 1:
                    stack.pop()
                if stack:
                    stack[-1] = name
            elif not stack:
                stack.append(name)
            else:
                if len(stack) == 1:
                    if name == main:
                        in_user = True
                    elif in_user:
                        renames += 1
                stack[-1] = name
            line = num
            continue
        if in_user and len(stack) == 1 and raw.strip():
            out.setdefault(line, []).append(raw)
        line += 1
    last = max(out, default=0)
    return "\n".join(" ".join(out.get(i, ())) for i in range(1, last + 1)), pushes, renames


def direct_includes(h_output: str) -> list[str]:
    """Paths that ``-H`` shows at depth one (included from the user's file itself)."""
    return [m[1] for m in re.finditer(r"^\. (\S.*)$", h_output, re.M)]


def preprocess_facts(compiler: str, flags: list[str], lang: str, src: str, cwd: str) -> dict[str, Any]:
    done = _run([compiler, *flags, "-E", "-H", src], cwd)
    if done.returncode != 0:
        return {"errors": ["the preprocessor failed: " + (done.stderr or "").strip()[-2000:]]}
    tu, pushes, renames = user_text(done.stdout, src)
    dirs = search_dirs(compiler, flags, lang, cwd)
    paths = direct_includes(done.stderr)
    lines: list[int | None] = list(pushes) if len(pushes) == len(paths) else [None] * len(paths)
    facts: dict[str, Any] = {
        "includes": [{"name": header_name(p, dirs), "line": ln} for p, ln in zip(paths, lines)],
        "line_renames": renames, "forged_markers": max(0, len(pushes) - len(paths)), "errors": []}
    if len(tu) > TU_LIMIT:
        facts["errors"].append(f"the preprocessed source is larger than {TU_LIMIT >> 20} MB")
        tu = tu[:TU_LIMIT]
    facts["tu"] = tu
    return facts


def _elf_sections(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(sections, symbols) of an ELF64 little-endian relocatable object."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not an ELF64 little-endian object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def cstr(table: int, off: int) -> str:
        base = raw[table][4] + off
        return data[base:data.index(b"\0", base)].decode("utf-8", "replace")

    sections = [{"name": cstr(shstrndx, s[0]), "type": s[1], "flags": s[2], "size": s[5]} for s in raw]
    symbols: list[dict[str, Any]] = []
    for s in raw:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        for off in range(s[4] + s[9], s[4] + s[5], s[9]):  # entry 0 is the null symbol
            name_off, info, _other, shndx, _value, size = struct.unpack_from("<IBBHQQ", data, off)
            symbols.append({"name": cstr(s[6], name_off), "bind": info >> 4, "type": info & 0xF,
                            "shndx": shndx, "size": size})
    return sections, symbols


def object_facts(obj: str) -> dict[str, Any]:
    with open(obj, "rb") as f:
        sections, symbols = _elf_sections(f.read())

    def writable(sec: dict[str, Any]) -> bool:
        return bool(sec["flags"] & SHF_WRITE and sec["flags"] & SHF_ALLOC) and \
            not sec["name"].startswith(".data.rel.ro") and not sec["name"].startswith(INIT_SECTIONS)

    undefined = sorted({s["name"] for s in symbols if s["shndx"] == SHN_UNDEF and s["name"] and s["bind"] in (1, 2)})
    found: list[dict[str, Any]] = []
    named: set[int] = set()
    for s in symbols:
        if s["shndx"] == SHN_COMMON:
            found.append({"symbol": s["name"], "section": "COMMON", "size": s["size"]})
        elif 0 < s["shndx"] < len(sections) and writable(sections[s["shndx"]]) and s["type"] in (0, 1, 6) \
                and s["name"] and not s["name"].startswith(".L"):
            found.append({"symbol": s["name"], "section": sections[s["shndx"]]["name"], "size": s["size"]})
            named.add(s["shndx"])
    for i, sec in enumerate(sections):
        if writable(sec) and sec["size"] and i not in named:
            found.append({"symbol": "", "section": sec["name"], "size": sec["size"]})
    return {
        "undefined": undefined,
        "writable": found,
        "init": sorted({s["name"] for s in sections if s["name"].startswith(INIT_SECTIONS) and s["size"]}),
        "exec_sections": sorted({s["name"] for s in sections if s["flags"] & SHF_EXECINSTR and s["size"]
                                 and not (s["name"] == ".text" or s["name"].startswith(".text."))}),
    }


def disassembly(obj: str, cwd: str) -> tuple[dict[str, str], dict[str, str]]:
    """(mnemonic -> the first function it occurs in (prefixes count as their own
    entries), %fs/%gs-relative operand -> the first function using it)."""
    done = _run(["objdump", "-d", "-w", "--no-show-raw-insn", obj], cwd)
    if done.returncode != 0:
        raise OSError(f"objdump failed: {done.stderr.strip()[:500]}")
    out: dict[str, str] = {}
    segments: dict[str, str] = {}
    func = "?"
    for raw in done.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", raw)
        if m:
            func = m[1]
            continue
        ins = re.match(r"^\s+[0-9a-f]+:\s+(.*)$", raw)
        if not ins:
            continue
        for seg in re.findall(r"%[fg]s:[-\w]*", ins[1]):
            segments.setdefault(seg, func)
        words = ins[1].split()
        while words:
            word = words.pop(0)
            out.setdefault(word, func)
            if word not in _PREFIXES and not word.startswith("rex"):
                break
    return out, segments


def demangle(names: list[str], cwd: str) -> dict[str, str]:
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    try:
        done = _run(["c++filt", *mangled], cwd)
    except (OSError, subprocess.SubprocessError):
        return {}
    shown = done.stdout.splitlines()
    return dict(zip(mangled, shown)) if len(shown) == len(mangled) else {}


def inspect_build(compiler: str, flags: list[str], lang: str, src: str, obj: str, cwd: str) -> dict[str, Any]:
    """All facts for one build: ``src`` preprocessed with ``flags``, ``obj`` already compiled from it."""
    facts: dict[str, Any] = {"v": FACTS_VERSION, "errors": []}
    try:
        facts.update(preprocess_facts(compiler, flags, lang, src, cwd))
        facts.update(object_facts(os.path.join(cwd, obj)))
        facts["mnemonics"], facts["segments"] = disassembly(obj, cwd)
        facts["demangled"] = demangle(facts["undefined"] + [w["symbol"] for w in facts["writable"]], cwd)
    except (OSError, ValueError, struct.error, subprocess.SubprocessError) as exc:
        facts["errors"].append(f"the compiled object could not be inspected: {exc}")
    return facts
