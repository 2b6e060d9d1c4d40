"""The Dockerfile, read rather than built (building needs registry access):
its targets, that what it copies exists and is not excluded from the build
context, that its pip installs find the files they name, and that each image
matches what the code expects of it."""

from __future__ import annotations

import ast
import json
import os
import re
import tomllib
from functools import lru_cache

from .helpers import (
    DOCKERFILE,
    ROOT,
    SECRET_MARKERS,
    Stage,
    copy_parts,
    dockerfile,
    dockerfile_instructions,
    dockerignore_patterns,
    expand,
    ignored,
    parse_kforge,
)

ARGS, STAGES = dockerfile()
PATTERNS = dockerignore_patterns()


def lineage(name: str) -> list[Stage]:
    """The stage and the stages it is built FROM, nearest first."""
    chain = [STAGES[name]]
    while chain[-1].base in STAGES:
        chain.append(STAGES[chain[-1].base])
    return chain


def base_image(name: str) -> str:
    return expand(lineage(name)[-1].base, ARGS)


@lru_cache
def repo_files(source: str) -> tuple[str, ...]:
    """Files a COPY of ``source`` (relative to the context) sends, after .dockerignore."""
    path = ROOT / source
    if path.is_file():
        return (source,) if not ignored(source, PATTERNS) else ()
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        rel_dir = os.path.relpath(dirpath, ROOT)
        dirnames[:] = [d for d in dirnames if not ignored(os.path.join(rel_dir, d), PATTERNS)]
        found += [os.path.join(rel_dir, f) for f in filenames if not ignored(os.path.join(rel_dir, f), PATTERNS)]
    return tuple(found)


@lru_cache
def provided(name: str) -> frozenset[str]:
    """Absolute paths of the files a stage holds that this Dockerfile put there
    (COPY from the context or another stage, files written by RUN), inherited
    stages included; the base image's own files are not known."""
    files: set[str] = set()
    for stage in reversed(lineage(name)):
        for ins in stage.instructions:
            if ins.keyword in ("COPY", "ADD"):
                flags, sources, dest = copy_parts(ins)
                for src in sources:
                    if "from" in flags:
                        src_abs = "/" + src.strip("/")
                        for f in provided(flags["from"]):
                            if f == src_abs or f.startswith(src_abs + "/"):
                                rel = f[len(src_abs):].lstrip("/")
                                files.add(os.path.join(dest, rel) if rel else
                                          (os.path.join(dest, os.path.basename(f)) if dest.endswith("/") else dest))
                    else:
                        rel_root = src.rstrip("/")
                        for f in repo_files(rel_root):
                            if ROOT.joinpath(rel_root).is_dir():
                                files.add(os.path.join(dest, os.path.relpath(f, rel_root)))
                            else:
                                files.add(os.path.join(dest, os.path.basename(f)) if dest.endswith("/") else dest)
            elif ins.keyword == "RUN":
                files |= set(re.findall(r"open\('(/[^']+)', 'w'\)", ins.args))
                files |= set(re.findall(r">\s*(/[\w./-]+)", ins.args)) - {"/dev/null"}
    return frozenset(os.path.normpath(f) for f in files)


def final_user(name: str) -> str:
    for stage in lineage(name):
        users = stage.all("USER")
        if users:
            return users[-1].args
    return "root"


def exec_form(name: str, keyword: str) -> list[str] | None:
    for stage in lineage(name):
        found = stage.all(keyword)
        if found:
            value = found[-1].args
            assert value.startswith("["), f"{keyword} of {name} uses the exec (JSON) form"
            return json.loads(value)  # invalid JSON would make Docker fall back to a shell string
    return None


def runs(name: str) -> str:
    return "\n".join(i.args for stage in lineage(name) for i in stage.all("RUN"))


def test_the_three_targets_exist():
    assert {"service", "gpu-worker", "sandbox"} <= set(STAGES)


def test_copied_sources_exist_and_reach_the_build_context():
    for stage in STAGES.values():
        for ins in stage.all("COPY") + stage.all("ADD"):
            flags, sources, _ = copy_parts(ins)
            if "from" in flags:
                assert flags["from"] in STAGES, f"line {ins.line}: no stage {flags['from']!r}"
                continue
            for src in sources:
                assert (ROOT / src).exists(), f"line {ins.line}: {src} is not in the repository"
                assert not ignored(src.rstrip("/"), PATTERNS), f"line {ins.line}: .dockerignore excludes {src}"
                assert repo_files(src.rstrip("/")), f"line {ins.line}: nothing of {src} reaches the build context"


def test_pip_installs_find_their_files():
    for name in STAGES:
        own = provided(name)
        for ins in STAGES[name].all("RUN"):
            for req in re.findall(r"pip install[^&;]*?-r\s+(\S+)", ins.args):
                assert req in own, f"line {ins.line}: {req} is not in stage {name}"
            for project in re.findall(r"pip install[^&;]*?-e\s+(\S+)", ins.args):
                assert f"{project}/pyproject.toml" in own, f"line {ins.line}: no pyproject.toml in {project}"


def test_the_project_tree_is_complete_where_it_is_installed():
    """The code looks for alembic.ini, migrations/ and problems/ next to its
    packages, and the packaging needs README.md: all must be in the tree the
    images install (editable) from."""
    for name in ("service", "gpu-worker"):
        files = provided(name)
        root = next(p.rsplit("/", 1)[0] for p in files if p.endswith("/pyproject.toml"))
        for needed in ("pyproject.toml", "README.md", "alembic.ini", "app/cli/main.py", "agents/__init__.py",
                       "sandbox/runner/process/zygote.py", "knowledge_base/__init__.py", "migrations/env.py",
                       "problems/level1/1_relu_scale.py"):
            assert f"{root}/{needed}" in files, f"{name}: {needed} is missing from {root}"
        assert not any(p.endswith("/.env") or "/tests/" in p or "/.venv/" in p for p in files)
        assert f"-e {root}" in runs(name), f"{name}: install {root} editable (the code finds its data next to it)"


def test_requirements_come_from_pyproject():
    text = runs("requirements")
    assert "pyproject.toml" in text and "['project']['dependencies']" in text


def test_torch_builds():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pin = next(d for d in pyproject["project"]["dependencies"] if d.replace(" ", "").startswith("torch=="))
    assert ARGS["TORCH_VERSION"] == pin.split("==")[1].strip(), "the images install the torch that pyproject.toml pins"
    assert "/whl/cpu" in ARGS["TORCH_CPU_INDEX"]
    cuda_index = re.search(r"/whl/cu(\d+)(\d)$", ARGS["TORCH_CUDA_INDEX"])
    cuda_image = re.search(r":(\d+)\.(\d+)", ARGS["CUDA_IMAGE"])
    assert cuda_index and cuda_image and cuda_index.groups() == cuda_image.groups(), \
        "the CUDA wheel index and the CUDA base image name the same CUDA version"
    assert "${TORCH_CPU_INDEX}" in runs("service") and "${TORCH_CUDA_INDEX}" not in runs("service")
    for name in ("gpu-worker", "sandbox"):
        assert "${TORCH_CUDA_INDEX}" in runs(name) and "${TORCH_CPU_INDEX}" not in runs(name)


def test_service_image():
    assert re.match(r"python:3\.11-slim", base_image("service"))
    assert final_user("service") not in ("", "root", "0", "0:0")
    assert exec_form("service", "ENTRYPOINT") == ["kforge"]
    parse_kforge(exec_form("service", "CMD"))
    assert "8000" in " ".join(i.args for i in STAGES["service"].all("EXPOSE"))
    healthcheck = STAGES["service"].all("HEALTHCHECK")[-1].args
    command = json.loads(healthcheck[healthcheck.index("CMD") + 3:].strip())
    assert "/healthz" in command[-1]
    compile(command[command.index("-c") + 1], "healthcheck", "exec")


def test_gpu_worker_image():
    assert base_image("gpu-worker").startswith("nvidia/cuda:")
    assert "python3.11" in runs("gpu-worker")
    assert exec_form("gpu-worker", "ENTRYPOINT") == ["kforge"]
    path, params = parse_kforge(exec_form("gpu-worker", "CMD"))
    assert path == ("worker",) and all(q.startswith("gpu-") for q in params["queue"])


def docker_driver_defaults() -> dict[str, object]:
    """Keyword defaults of DockerDriver.__init__, read from the source (importing
    the driver pulls in the Docker SDK and torch: seconds)."""
    tree = ast.parse((ROOT / "sandbox" / "drivers" / "docker.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DockerDriver")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    args = init.args.args[len(init.args.args) - len(init.args.defaults):]
    return {a.arg: ast.literal_eval(d) for a, d in zip(args, init.args.defaults)}


def test_sandbox_image_is_what_the_docker_driver_runs():
    defaults = docker_driver_defaults()
    root, python = defaults["image_package_root"], defaults["image_python"]
    files = provided("sandbox")
    assert base_image("sandbox").startswith("nvidia/cuda:")
    # The driver runs `python3 -m sandbox.runner.process.zygote` with PATH=/usr/local/bin:... and PYTHONPATH=<root>.
    assert f"{root}/sandbox/runner/process/zygote.py" in files
    assert f"/usr/local/bin/{python}" in files, "the image's python3 on the driver's PATH must be the venv's"
    assert not any(p.startswith((f"{root}/app", f"{root}/agents", f"{root}/knowledge_base")) for p in files), \
        "a sandbox holds the sandbox package only"
    assert final_user("sandbox") not in ("", "root", "0", "0:0")
    assert exec_form("sandbox", "ENTRYPOINT") == [], "the driver's command must not be prefixed by an entrypoint"


def test_no_secret_in_any_image():
    for stage in STAGES.values():
        for ins in stage.all("ENV") + stage.all("ARG") + stage.all("LABEL"):
            names = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", ins.args) or [ins.args.split("=")[0]]
            for var in names:
                assert not any(m in var.upper() for m in SECRET_MARKERS), f"line {ins.line}: {var} in an image"
    for needed in (".env", "**/.env", ".venv", ".git", ".kforge"):
        assert needed in PATTERNS, f".dockerignore must exclude {needed}"
    assert ignored(".env", PATTERNS) and ignored("app/.env", PATTERNS)


def test_dockerfile_uses_only_syntax_the_classic_builder_knows():
    """Debian's docker.io may build without BuildKit: no heredocs, no RUN --mount, no COPY --chmod/--link."""
    for ins in dockerfile_instructions(DOCKERFILE.read_text()):
        for feature in ("<<", "--mount=", "--chmod", "--link", "--parents", "--exclude"):
            assert feature not in f"{ins.keyword} {ins.args}", f"line {ins.line}: {feature} needs BuildKit"
    first = DOCKERFILE.read_text().lstrip().splitlines()[0].replace(" ", "").lower()
    assert not first.startswith("#syntax="), "a syntax directive would pull a frontend image"
