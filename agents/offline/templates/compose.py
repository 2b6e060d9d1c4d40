"""One candidate file out of several rendered ones: the stages of a pipeline.

Each stage is a complete candidate of its family (imports, kernels, host code,
ModelNew). ``compose`` keeps every stage's module-level code under names prefixed
``s<i>_`` (kernels, host functions, C sources and their libraries cannot collide),
turns each stage's ``forward`` into a method ``stage<i>`` of one ModelNew (with
underscores before it where a stage names something ``stage...``: the reference's own
submodules keep their names), and
writes a ``forward`` that calls them in order. The constructor is the union of the
stages' (they recreate the same parameters; each keeps the arguments it reads).

Names are renamed token by token (``tokenize``), never inside strings or comments,
never after a dot (an attribute) and never as a keyword argument's name.
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from dataclasses import dataclass, field


@dataclass
class Parsed:
    doc: str = ""
    imports: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)      # module-level statements besides imports and ModelNew
    init_header: str = ""                               # "def __init__(self, ...) -> None:"
    init_body: list[str] = field(default_factory=list)  # statements, dedented, one per entry
    forward_header: str = ""
    forward_body: str = ""                              # dedented
    names: set[str] = field(default_factory=set)        # module-level names this stage defines


def _segment(lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "".join(lines[first - 1:node.end_lineno])


def parse(source: str) -> Parsed:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    out = Parsed()
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.doc = out.doc or node.value.value
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.imports.append(_segment(lines, node).strip())
        elif isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            _model(out, node, lines)
        else:
            out.code.append(_segment(lines, node).rstrip() + "\n")
            out.names |= _defined(node)
    return out


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _model(out: Parsed, cls: ast.ClassDef, lines: list[str]) -> None:
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        header = lines[fn.lineno - 1].strip()
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the method's docstring
        texts = [textwrap.dedent(_segment(lines, s)).rstrip() + "\n" for s in body]
        if fn.name == "__init__":
            out.init_header, out.init_body = header, texts
        elif fn.name == "forward":
            out.forward_header, out.forward_body = header, "".join(texts)


def _shadowed(text: str, names: dict[str, str]) -> list[tuple[tuple[int, int], tuple[int, int], set[str]]]:
    """The spans of functions where some of ``names`` are local (a parameter or assigned)."""
    out = []
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = fn.args
        local = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None}
        local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if local & set(names):
            out.append(((fn.lineno, fn.col_offset), (fn.end_lineno or fn.lineno, fn.end_col_offset or 0),
                        local & set(names)))
    return out


def rename(text: str, names: dict[str, str]) -> str:
    """``text`` with every name token in ``names`` replaced, except attributes, keyword names
    and names a function makes local."""
    shadows = _shadowed(text, names)
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    depth = 0
    significant = [t for t in toks if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                                                      tokenize.INDENT, tokenize.DEDENT)]
    for i, tok in enumerate(significant):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        if tok.type != tokenize.NAME or tok.string not in names:
            continue
        before = significant[i - 1] if i else None
        after = significant[i + 1] if i + 1 < len(significant) else None
        if before is not None and before.string == ".":
            continue
        if depth > 0 and after is not None and after.string == "=" and before is not None \
                and before.string in ("(", ","):
            continue  # a keyword argument's name
        if any(lo <= tok.start < hi and tok.string in local for lo, hi, local in shadows):
            continue  # a local of the function around it
        edits.append((tok.start, tok.end, names[tok.string]))
    lines = text.splitlines(keepends=True)
    for (row, col), (_, end), new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    return "".join(lines)


def _names_in(body: str) -> set[str]:
    """Every name a forward body mentions (read or written): a stage reads an earlier
    stage's output only by its name."""
    tree = ast.parse("def _stage():\n" + textwrap.indent(body, "    "))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _method_prefix(stages: list[str]) -> str:
    """``stage`` for the stage methods, unless a stage's code or strings name something
    starting so (a reference's own submodule ``self.stage2``, or ``'stage2.0.conv1.weight'``,
    which a method of that name would hide)."""
    words = {w for s in stages for t in tokenize.generate_tokens(io.StringIO(s).readline)
             if t.type == tokenize.NAME or (t.type == tokenize.STRING and not re.search(r"\s", t.string))
             for w in re.findall(r"\w+", t.string)}  # a name, or a string like 'stage2.0.conv1.weight'
    prefix = "stage"
    while any(w.startswith(prefix) for w in words):
        prefix = "_" + prefix
    return prefix


def _lifetimes(parsed: list[Parsed], outputs: list[str]) -> tuple[list[dict[str, str]], list[str], list[list[str]],
                                                                   dict[str, int]]:
    """Each stage's renames and renamed forward body, the earlier outputs it reads, and each
    output's last reader (its own stage when none reads it)."""
    renames = [{n: f"s{i}_{n}" for n in sorted(p.names)} for i, p in enumerate(parsed)]
    bodies = [rename(p.forward_body, renames[i]) for i, p in enumerate(parsed)]
    mentioned = [_names_in(body) for body in bodies]
    reads = [[o for o in outputs[:i] if o in mentioned[i]] for i in range(len(parsed))]
    last_read = {o: max([i for i, r in enumerate(reads) if o in r], default=k) for k, o in enumerate(outputs)}
    return renames, bodies, reads, last_read


def dying(stages: list[str], outputs: list[str]) -> list[set[str]]:
    """For each stage, the earlier outputs it is the last to read: ``compose`` deletes them
    right after it, so that stage may write its own output over one of them."""
    _, _, reads, last_read = _lifetimes([parse(s) for s in stages], outputs)
    return [{o for o in reads[i] if last_read[o] == i} for i in range(len(stages))]


def _pooled(imports: list[str]) -> bool:
    return any(re.fullmatch(r"from kforge_native import .*\bscratch\b.*", x) for x in imports)


def compose(stages: list[str], outputs: list[str], forward_args: list[str], doc: str) -> str:
    """One candidate running ``stages`` in order: stage i's forward result is bound to
    ``outputs[i]``, which later stages read as a forward argument of that name (each stage
    is passed the earlier outputs its body names, and an output is deleted after the last
    stage that reads it); the last is returned. ``forward_args`` are the reference's
    forward argument names."""
    parsed = [parse(s) for s in stages]
    imports: list[str] = []
    code: list[str] = []
    init_body: list[str] = []
    methods: list[str] = []
    calls: list[str] = []
    renames, bodies, reads, last_read = _lifetimes(parsed, outputs)
    pooled = _pooled([x for p in parsed for x in p.imports])
    method = _method_prefix(stages)
    for i, p in enumerate(parsed):
        names = renames[i]
        imports += [x for x in p.imports if x not in imports]
        code += [rename(c, names) for c in p.code]
        init_body += [x for x in (rename(b, names) for b in p.init_body) if x not in init_body]
        params = ", ".join(["self", *forward_args, *reads[i]])
        first = (p.doc.strip().splitlines() or [""])[0]
        methods.append(f"def {method}{i}({params}) -> torch.Tensor:\n"
                       f'    """{first}"""\n' + textwrap.indent(bodies[i], "    "))
        call = f"self.{method}{i}({', '.join([*forward_args, *reads[i]])})"
        calls.append(f"{outputs[i]} = {call}\n" if i < len(parsed) - 1 else f"return {call}\n")
        # An output no later stage reads is dropped here, as eager drops an intermediate:
        # a whole model's activations are never all alive at once.
        done = [o for o in outputs[:i + 1] if last_read[o] == i] if i < len(parsed) - 1 else []
        if done:
            # a C candidate's large dead intermediates go back to the pool its hosts allocate
            # from (kforge_native.scratch: it keeps only what nothing else reaches)
            calls += [f"scratch.give({o})\n" for o in done if pooled]
            calls.append(f"del {', '.join(done)}\n")
    supers = [b for b in init_body if b.startswith("super().__init__(")]
    init = supers + [b for b in init_body if b not in supers]
    forward_header = parsed[-1].forward_header
    cls = ("class ModelNew(nn.Module):\n"
           '    """Same constructor, parameters and forward signature as the reference\'s Model; '
           'one method per stage."""\n\n'
           f"    {parsed[0].init_header}\n" + textwrap.indent("".join(init), "        ") + "\n"
           + "".join(textwrap.indent(m, "    ") + "\n" for m in methods)
           + f"    {forward_header}\n" + textwrap.indent("".join(calls), "        "))
    head = f'"""{doc}"""\n\n' + "\n".join(imports) + "\n"
    return "\n\n".join([head.rstrip("\n") + "\n", *(c.rstrip("\n") + "\n" for c in code), cls]) \
        .replace("\n\n\n\n", "\n\n\n")
