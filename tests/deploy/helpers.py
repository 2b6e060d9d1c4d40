"""Shared by the deployment tests: the files, a Dockerfile reader and a
parser of `kforge ...` command lines that uses the real CLI but runs nothing."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "docker-compose.yml"
DOCKERIGNORE = ROOT / ".dockerignore"
RUNBOOK = ROOT / "docs" / "runbook.md"
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
# A value that only refers to a variable: ${VAR}, ${VAR:-default}, ${VAR:?message}
VAR_REF = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-?])[^}]*)?\}$")


# --------------------------------------------------------------------- kforge CLI

def parse_kforge(args: list[str]) -> tuple[tuple[str, ...], dict]:
    """Parse ``kforge ARGS`` exactly as the installed CLI would and return
    (command path, parameters), with every command's body replaced by a stub.
    Raises the CLI's usage error for an unknown command or option."""
    import typer

    from app.cli import main as cli_main

    assert args, "an empty kforge command line"
    if hasattr(cli_main, "COMMANDS"):  # commands are imported lazily, by name
        assert args[0] in cli_main.COMMANDS, f"`kforge {args[0]}` is not a kforge command ({sorted(cli_main.COMMANDS)})"
        app = cli_main.build([args[0]])
    else:
        app = cli_main.cli
    group = typer.main.get_command(app)
    calls: list[tuple[tuple[str, ...], dict]] = []

    def stub(cmd, path: tuple[str, ...]) -> None:
        subcommands = getattr(cmd, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                stub(sub, (*path, name))
        else:
            cmd.callback = lambda __path=path, **params: calls.append((__path, params))

    stub(group, ())
    group.main(list(args), prog_name="kforge", standalone_mode=False)
    assert calls, f"`kforge {' '.join(args)}` names a group, not a command"
    return calls[-1]


# --------------------------------------------------------------------- Dockerfile

@dataclass
class Instruction:
    keyword: str
    args: str
    line: int


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def dockerfile_instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comment lines dropped
    (Docker drops comment lines inside a continued instruction too)."""
    out: list[Instruction] = []
    buf, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue
        if not buf:
            start = number
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        keyword, _, rest = buf.partition(" ")
        out.append(Instruction(keyword.upper(), rest.strip(), start))
        buf = ""
    assert not buf, "the Dockerfile ends inside a continued instruction"
    return out


def dockerfile() -> tuple[dict[str, str], dict[str, Stage]]:
    """(global ARG defaults, stages by name) of the repository's Dockerfile."""
    args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    current: Stage | None = None
    for ins in dockerfile_instructions(DOCKERFILE.read_text()):
        if ins.keyword == "ARG" and current is None:
            name, _, default = ins.args.partition("=")
            args[name.strip()] = default.strip()
        elif ins.keyword == "FROM":
            words = ins.args.split()
            words = [w for w in words if not w.startswith("--")]
            assert len(words) == 3 and words[1].upper() == "AS", f"line {ins.line}: every stage is named: {ins.args}"
            current = Stage(words[2], words[0])
            stages[current.name] = current
        else:
            assert current is not None, f"line {ins.line}: {ins.keyword} before the first FROM"
            current.instructions.append(ins)
    return args, stages


def expand(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: args.get(m.group(1), m.group(0)), value)


def copy_parts(ins: Instruction) -> tuple[dict[str, str], list[str], str]:
    """(flags, sources, destination) of a COPY / ADD instruction."""
    words = ins.args.split()
    flags = {}
    while words and words[0].startswith("--"):
        name, _, value = words.pop(0)[2:].partition("=")
        flags[name] = value
    assert len(words) >= 2, f"line {ins.line}: COPY needs a source and a destination"
    return flags, words[:-1], words[-1]


# --------------------------------------------------------------------- .dockerignore

def dockerignore_patterns() -> list[str]:
    lines = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()]
    return [line.rstrip("/") for line in lines if line and not line.startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves ``path`` (relative to the context) out.
    Docker matches a pattern against a path and each of its parents; `**`
    spans directories. The last matching pattern wins (`!` re-includes)."""
    parts = Path(path).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern[1:] if negate else pattern
        regex = fnmatch.translate(pat).replace(".*.*/", "(?:.*/)?")
        if any(re.match(regex, c) for c in candidates):
            result = not negate
    return result


# --------------------------------------------------------------------- compose CLI

def compose_cli() -> list[str] | None:
    """`docker compose` (v2 plugin) or `docker-compose` (v1), whichever is installed."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    v1 = shutil.which("docker-compose")
    return [v1] if v1 else None


def run_config(cli: list[str], env_file: Path, *extra: str, files: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    """`compose config` of docker-compose.yml (plus override ``files``) with the
    GPU profile, in a clean environment: neither the developer's keys nor
    their .env take part."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG")}
    names = [arg for f in (COMPOSE, *files) for arg in ("-f", str(f))]
    return subprocess.run([*cli, "--env-file", str(env_file), *names, "--profile", "gpu", "config", *extra],
                          cwd=COMPOSE.parent, env=env, capture_output=True, text=True, timeout=60)
