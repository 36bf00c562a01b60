"""The commands the README and docs/ show are commands this commscope
takes: each `commscope ...` line of their shell blocks parses (an option
renamed or removed fails here, not in a reader's terminal).  And what they
show a command printing is what it prints: every plain block of output is
either the output of a command on a fixed store (`<!-- output of: commscope
... -->` on the line before it: the command runs here on a copy of the store
and each line of the block must be one of its lines, in order, up to the
figures) or says why it cannot be (`<!-- not checked: ... -->`: a live
cluster, a bench script's measurement)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from commscope import cli
from commscope.cli.parser import make_parser
from tests.helpers import ROOT

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


FENCE = re.compile(r"^```[a-z]*$")


def outputs(text: str) -> list[tuple[int, str, list[str]]]:
    """Every plain ``` block (output, not a language's): its line, the
    comment on the line before it, its lines."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            j = next(k for k in range(i + 1, len(lines)) if lines[k] == "```")
            if lines[i] == "```":
                out.append((i + 1, lines[i - 1] if i else "", lines[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


BLOCKS = [(p.relative_to(ROOT).as_posix(), n, before, body) for p in DOCS
          for n, before, body in outputs(p.read_text())]


def _figureless(line: str) -> str:
    """A line up to its figures: every number one mark, every run of spaces one."""
    return " ".join(re.sub(r"\d+(?:\.\d+)?", "#", line).split())


def test_every_output_block_says_where_it_comes_from():
    bare = [f"{p}:{n}" for p, n, before, _ in BLOCKS
            if not re.fullmatch(r"<!-- (output of: commscope .+|not checked: .+) -->", before)]
    assert not bare, ("output blocks without <!-- output of: ... --> or <!-- not checked: ... "
                      f"-->: {bare}")
    assert sum(1 for _, _, before, _ in BLOCKS if "output of:" in before) >= 3


CHECKED = [(p, n, before.split("output of: ", 1)[1].removesuffix(" -->"), body)
           for p, n, before, body in BLOCKS if before.startswith("<!-- output of: ")]


@pytest.mark.parametrize(("where", "n", "line", "body"), CHECKED,
                         ids=[f"{p}:{n}" for p, n, _, _ in CHECKED])
def test_every_output_the_docs_show_is_what_the_command_prints(where, n, line, body, tmp_path,
                                                                 capsys):
    argv = shlex.split(line)[1:]
    db = argv.index("--db") + 1
    copy = tmp_path / Path(argv[db]).name  # the fixed store stays as committed
    shutil.copyfile(ROOT / argv[db], copy)
    argv[db] = str(copy)
    capsys.readouterr()
    assert cli.main(argv) == 0
    printed = [_figureless(x) for x in capsys.readouterr().out.splitlines()]
    at = 0
    for shown in (x for x in body if x.strip()):
        want = _figureless(shown)
        at = next((k for k in range(at, len(printed)) if printed[k] == want), -1)
        assert at >= 0, (f"{where}:{n}: `{line}` prints no such line (after the block's "
                         f"previous one): {shown!r}\n--- it printed:\n"
                         + "\n".join(printed))
        at += 1
