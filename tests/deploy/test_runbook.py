"""docs/runbook.md stays true to the code: every setting is documented, and
every kforge command line in its code blocks parses with the real CLI."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from .helpers import RUNBOOK, compose_cli, parse_kforge, run_config

TEXT = RUNBOOK.read_text()
END = r"[^|&;>#)`\n]*"  # a command line ends at a pipe, list operator, redirection, comment or subshell end
PATTERNS = (
    # kforge as the first word of a command: kforge ..., .venv/bin/kforge ..., X=1 kforge ..., ExecStart=/path/kforge ...
    re.compile(rf"(?:^|[;&|(]|\$\()\s*(?:\w+=\S*\s+)*(?:\w+=)?(?:\S*/)?kforge[ \t]+({END})"),
    # the images' entrypoint is kforge: docker compose run --rm SERVICE ARGS, docker run ... IMAGE ARGS
    re.compile(rf"docker[ -]compose\b[^\n|]*?\brun --rm (?:api|worker|migrate|gpu-worker)[ \t]+({END})"),
    re.compile(rf"docker run\b[^\n|]*?\bkforge(?:-gpu-worker)?:latest[ \t]+({END})"),
)


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


def command_lines() -> list[list[str]]:
    found = []
    for block in code_blocks(TEXT):
        block = re.sub(r"\\\n\s*", " ", block)  # continuation lines
        for line in block.splitlines():
            for pattern in PATTERNS:
                for match in pattern.finditer(line):
                    args = shlex.split(match.group(1))
                    if args:
                        found.append(args)
    return found


def test_every_setting_is_documented():
    from app.settings import Settings

    for name, field in Settings.model_fields.items():
        env = field.validation_alias if isinstance(field.validation_alias, str) else f"KFORGE_{name.upper()}"
        assert f"`{env}`" in TEXT, f"docs/runbook.md does not document {env} (app/settings.py: {name})"


def test_the_runbook_shows_the_service_commands():
    lines = [" ".join(c) for c in command_lines()]
    for needed in ("serve", "api", "worker", "db upgrade", "token create"):
        assert any(line.startswith(needed) for line in lines), f"no `kforge {needed}` example in the runbook"


@pytest.mark.parametrize("args", command_lines(), ids=lambda a: " ".join(a))
def test_every_kforge_command_line_parses(args):
    parse_kforge(args)


def yaml_blocks() -> list[str]:
    return re.findall(r"^```ya?ml\n(.*?)^```", TEXT, flags=re.S | re.M)


@pytest.mark.parametrize("block", yaml_blocks())
def test_compose_overrides_in_the_runbook_are_valid(block, tmp_path):
    override = yaml.safe_load(block)
    for service in override.get("services", {}).values():
        if "command" in service:
            parse_kforge(service["command"])
    cli = compose_cli()
    if cli is None:
        pytest.skip("no compose CLI installed")
    (tmp_path / "override.yml").write_text(block)
    (tmp_path / "compose.env").write_text("POSTGRES_PASSWORD=not-a-real-password\n")
    proc = run_config(cli, tmp_path / "compose.env", "-q", files=(tmp_path / "override.yml",))
    assert proc.returncode == 0, proc.stderr
