"""docs/runbook.md stays true to the code: every setting is documented, and
every kforge command line in its code blocks parses with the real CLI."""

from __future__ import annotations

import re
import shlex

import pytest

from .helpers import RUNBOOK, parse_kforge

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
