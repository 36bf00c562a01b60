"""Bad input: one clear line on stderr, a non-zero exit, the store intact."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from commscope import cli


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str, needle: str) -> None:
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("commscope") and needle in lines[0], err


@pytest.mark.parametrize("argv,needle", [
    (["run", "--sizes", "4M:1"], "reversed"),
    (["run", "--sizes", "lots"], "bad size"),
    (["run", "--sizes", "1:4Q"], "bad size"),
    (["run", "--np", "two"], "--np must be an integer"),
    (["run", "--np", "0"], "at least 1"),
    (["run", "--factor", "x"], "not a number"),
    (["run", "--factor", "1"], "outside"),
    (["run", "--time-cap", "-3"], "outside"),
    (["run", "--min-samples", "50", "--max-samples", "10"], "below --min-samples"),
    (["run", "--mpi", "lam-mpi"], "unknown MPI implementation 'lam-mpi'"),
    (["run", "--mpi", "/nonexistent/bin/mpicc"], "mpicc not found"),
    (["export", "--format", "xml"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
    (["mpi", "add", "/nonexistent/mpicc"], "mpicc not found"),
    (["run", "--for", "fft,N=64"], "--for: unknown application 'fft'"),
    (["run", "--for", "matmul,M=64"], "--for matmul: unknown parameter 'M'"),
    (["run", "--for", "matmul"], "give its size"),
    (["run", "--for", "jacobi,N=big"], "positive whole numbers, got 'big'"),
    (["run", "--for", "summa,N=64;nb=0"], "nb (panel width) must be at least 1"),
    (["run", "--for", "matmul,N=64", "--path", "staged"], "not with --path"),
])
def test_bad_input_is_one_line(capsys, argv, needle):
    rc, _, err = run(capsys, *argv)
    one_line_error(rc, err, needle)


def test_store_that_is_not_ours_is_left_intact(capsys, tmp_path):
    db = tmp_path / "precious.db"
    db.write_bytes(os.urandom(8192))
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for argv in (["show", "--db", str(db)], ["export", "--db", str(db)]):
        rc, _, err = run(capsys, *argv)
        one_line_error(rc, err, "not a commscope database")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_show_without_store(capsys, tmp_path):
    rc, _, err = run(capsys, "show", "--db", str(tmp_path / "none.db"))
    one_line_error(rc, err, "no commscope database")
    assert not (tmp_path / "none.db").exists()


def test_help_has_examples(capsys):
    for sub in (["run"], ["show"], ["export"], ["mpi", "list"], ["mpi", "add"], ["build"]):
        with pytest.raises(SystemExit) as ex:
            cli.main([*sub, "--help"])
        assert ex.value.code == 0
        assert "example: commscope" in capsys.readouterr().out


def _fake_mpi(tmp_path: Path) -> Path:
    """An 'MPICH' whose compiler always fails, with a message of its own."""
    bin_ = tmp_path / "fakempi" / "bin"
    bin_.mkdir(parents=True)
    cc = bin_ / "mpicc"
    cc.write_text('#!/bin/sh\ncase "$1" in\n  -v) echo "mpicc for MPICH version 9.9";'
                  ' exit 0;;\n  -show|--version) echo "gcc -lmpich"; exit 0;;\nesac\n'
                  'echo "fake.c:1:1: error: this compiler is broken on purpose" >&2\nexit 1\n')
    launcher = bin_ / "mpiexec"
    launcher.write_text("#!/bin/sh\nexit 1\n")
    for p in (cc, launcher):
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return cc


def test_broken_mpicc_shows_the_compiler_message(capsys, tmp_path):
    cc = _fake_mpi(tmp_path)
    rc, _, err = run(capsys, "run", "--mpi", str(cc), "--db", str(tmp_path / "x.db"))
    assert rc == 2
    assert "building the core with" in err and "broken on purpose" in err
    assert not (tmp_path / "x.db").exists()  # nothing was stored, not even an empty file


def test_mpi_add_and_remove(capsys, tmp_path):
    cc = _fake_mpi(tmp_path)
    rc, _, err = run(capsys, "mpi", "add", str(cc), "--name", "fake")
    assert rc == 2 and "broken on purpose" in err  # a core that cannot build is not added
    rc, _, err = run(capsys, "mpi", "remove", "fake")
    one_line_error(rc, err, "no user-added MPI named 'fake'")


def test_mpi_add_a_working_implementation(capsys, tmp_path, impls):
    """A real mpicc, added under a new name, is found, listed and removable."""
    src = impls.get("mpich") or next(iter(impls.values()))
    rc, out, err = run(capsys, "mpi", "add", src.mpicc, "--name", "mine")
    assert rc == 0, err
    assert "added mine" in out
    rc, out, _ = run(capsys, "mpi", "list", "--json")
    import json

    listed = {e["name"]: e for e in json.loads(out)}
    assert listed["mine"]["source"] == "user" and listed["mine"]["version"]
    rc, out, _ = run(capsys, "mpi", "remove", "mine")
    assert rc == 0
