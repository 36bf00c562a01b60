"""The commands the README and docs/ show are commands this commscope
takes: each `commscope ...` line of their shell blocks parses (an option
renamed or removed fails here, not in a reader's terminal)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from commscope.cli.parser import make_parser

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "channel" / "README.md"]


def commands(text: str) -> list[str]:
    """Every `commscope ...` line inside a ```sh block, comments and line
    continuations taken off."""
    out = []
    for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("commscope "):
                out.append(line.split(" #", 1)[0].strip())
    return out


SHOWN = [(p.relative_to(ROOT).as_posix(), c) for p in DOCS for c in commands(p.read_text())]


def test_the_readme_shows_commands_at_all():
    assert sum(1 for p, _ in SHOWN if p == "README.md") >= 5


@pytest.mark.parametrize(("where", "line"), SHOWN, ids=[f"{p}:{c[:60]}" for p, c in SHOWN])
def test_every_command_the_docs_show_parses(where, line):
    argv = shlex.split(line)[1:]
    argv = argv[:next((i for i, a in enumerate(argv) if a in (">", ">>", "|")), len(argv))]
    try:
        make_parser().parse_args(argv)
    except SystemExit as exc:  # argparse's way of refusing
        pytest.fail(f"{where}: `{line}` does not parse (exit {exc.code})")
