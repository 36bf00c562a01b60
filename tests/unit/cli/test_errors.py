"""Bad input: one clear line on stderr, a non-zero exit, the store intact."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from commscope import cli
from commscope.cli import run as cli_run
from tests.helpers import fake_wrapper, golden, golden_store, one_line_error, run


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


def test_run_bench_list_names_every_benchmark_under_its_group_and_builds_nothing(
        capsys, monkeypatch):
    import json

    def no_build(*_a, **_k):
        raise AssertionError("--bench list built a core")

    monkeypatch.setattr(cli_run.build_mod, "build", no_build)
    rc, out, err = run(capsys, "run", "--bench", "list")
    assert rc == 0 and not err
    table = json.loads((Path(cli.__file__).parents[1] / "core_benches.json").read_text())
    groups = [ln[:-1] for ln in out.splitlines() if ln.endswith(":")]
    assert groups == list(dict.fromkeys(b["group"] for b in table))
    for b in table:  # each under its own group, with its unit
        block = ("\n" + out).split(f"\n{b['group']}:\n", 1)[1].split(":\n", 1)[0]
        assert any(ln.split()[0] == b["name"] and ln.endswith(f"[{b['unit']}]" if not
                   b["gpu_only"] else f"[{b['unit']}, GPU only]")
                   for ln in block.splitlines()), b["name"]


def test_help_has_examples(capsys):
    for sub in (["run"], ["show"], ["export"], ["mpi", "list"], ["mpi", "add"], ["build"]):
        with pytest.raises(SystemExit) as ex:
            cli.main([*sub, "--help"])
        assert ex.value.code == 0
        assert "example: commscope" in capsys.readouterr().out


def _fake_mpi(tmp_path: Path) -> Path:
    """An 'MPICH' whose compiler always fails, with a message of its own."""
    return fake_wrapper(tmp_path / "fakempi" / "bin", "mpicc for MPICH version 9.9",
                        "gcc -lmpich", 'echo "fake.c:1:1: error: this compiler is broken on '
                        'purpose" >&2\nexit 1')


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


# -- outputs never harm a store; bad files and values are one line -------------------
def test_a_series_with_only_noisy_records_is_said_left_out_not_missing(capsys, tmp_path):
    # bw's two records were taken while other processes used the CPU (and for findings, one
    # of latency's too: a series with one clean record is not left out)
    for argv, first in ((["analyze", "findings"], True), (["fit"], False)):
        db = str(golden_store(tmp_path / f"{argv[-1]}.db", flags=(first, False, True, True)))
        rc, out, err = run(capsys, *argv, "--db", db)
        assert rc == 0, err
        (line,) = [ln for ln in out.splitlines() if "flagged noisy" in ln]
        assert line.startswith("1 series had only records measured while other processes")
        assert "bw (openmpi, 2 processes)" in line and "latency" not in line
    # nothing left to fit or compare: the reason is the one line of the error
    db = str(golden_store(tmp_path / "all.db", flags=(True,) * 4))
    rc, out, err = run(capsys, "fit", "--db", db)
    one_line_error(rc, err, "2 series had only records measured while other processes")
    clean = str(golden_store(tmp_path / "clean.db"))
    rc, out, _ = run(capsys, "analyze", "findings", "--db", clean)
    assert rc == 0 and "flagged noisy" not in out


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_no_output_path_overwrites_a_store(capsys, tmp_path):
    db = golden_store(tmp_path / "s.db")
    other = golden_store(tmp_path / "other.db")
    before = {p: _digest(p) for p in (db, other)}
    for argv, needle in (
        (["export", "--db", str(db), "--output", str(db)], "is the store itself"),
        (["export", "--db", str(db), "--output", str(other)], "is a database"),
        (["export", "--db", str(db), "--output", str(tmp_path)], "is a folder"),
        (["export", "--db", str(db), "--output", str(tmp_path / "no" / "x.csv")],
         "does not exist"),
        (["report", "--db", str(db), "--out", str(db)], "is the store itself"),
        (["slurm", "script", "--nodes", "2", "--db", str(db), "--out", str(db)],
         "is the store itself"),
        (["slurm", "script", "--nodes", "2", "--db", str(db), "--out",
          str(tmp_path / "no" / "job.sh")],
         "does not exist"),
    ):
        rc, _, err = run(capsys, *argv)
        one_line_error(rc, err, needle)
    assert {p: _digest(p) for p in (db, other)} == before
    # a good path is written whole, with the usual permissions
    rc, _, err = run(capsys, "export", "--db", str(db), "--output", str(tmp_path / "x.csv"))
    assert rc == 0, err
    assert (tmp_path / "x.csv").read_text().startswith("run_id,")
    assert stat.S_IMODE((tmp_path / "x.csv").stat().st_mode) & 0o044 == 0o044


def test_a_read_only_command_never_makes_a_store(capsys, tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for argv in (["show"], ["export"], ["analyze", "findings"]):
        rc, _, err = run(capsys, *argv, "--db", str(empty))
        one_line_error(rc, err, "is an empty file")
    assert empty.stat().st_size == 0


def test_files_that_are_not_text_and_hosts_that_are_options(capsys, tmp_path):
    binary = tmp_path / "bin"
    binary.write_bytes(b"\x00\xff\xfe\x80")
    db = tmp_path / "x.db"
    rc, _, err = run(capsys, "run", "--settings", str(binary), "--db", str(db))
    one_line_error(rc, err, "is not a text file")
    rc, _, err = run(capsys, "run", "--cluster", f"hostfile:{binary}", "--db", str(db))
    one_line_error(rc, err, "is not a text file")
    hf = tmp_path / "hosts"
    for line, needle in (("-oProxyCommand=touch.x slots=1", "not a hostfile line"),
                         ("node1 slots=0", "node1 has no slots")):
        hf.write_text(line + "\n")
        rc, _, err = run(capsys, "run", "--cluster", f"hostfile:{hf}", "--db", str(db))
        one_line_error(rc, err, needle)
    assert not db.exists()  # nothing launched, nothing stored


@pytest.mark.parametrize("argv,needle", [
    (["run", "--np", "99999999999999999999"], "beyond any machine"),
    (["run", "--np", "100000"], "more than 64 processes a core"),
    (["run", "--mpi", ""], "--mpi was given an empty value"),
    (["run", "--np="], "--np was given an empty value"),
    (["run", "--bench", " "], "--bench was given an empty value"),
    (["run", "--cluster", ""], "--cluster was given an empty value"),
    (["run", "--param", ""], "--param was given an empty value"),
    (["report", "--out", ""], "--out was given an empty value"),
    (["show", "--mode", "nope"], "'nope' is not a mode"),
    (["run", "--bench", "matmul", "--param", "N=64;N=128"], "gives N twice"),
    (["mpi", "add", "/usr/bin/mpicc.openmpi", "--name", "../../x"], "a name is letters"),
])
def test_values_out_of_range_or_empty_are_one_line(capsys, tmp_path, argv, needle):
    db = tmp_path / "x.db"
    rc, _, err = run(capsys, *argv, *(["--db", str(db)] if argv[0] in ("run",) else []))
    one_line_error(rc, err, needle)
    assert not db.exists()


def test_tune_judges_its_inputs_before_any_job(capsys, tmp_path, impls):
    m = "openmpi" if "openmpi" in impls else next(iter(impls))
    db = tmp_path / "t.db"
    for argv, needle in ((["--validate", "nope"], "--validate takes an application"),
                         (["--write", str(tmp_path / "no" / "s.env")], "does not exist"),
                         (["--validate", "matmul", "--validate-param", "N=0"], "N needs")):
        rc, _, err = run(capsys, "tune", "--mpi", m, "--db", str(db), *argv)
        one_line_error(rc, err, needle)
    assert not db.exists()


def test_a_closed_pipe_ends_the_output_quietly(capsys, monkeypatch):
    """show | head -1: the reader went away while output was being written."""
    def writes_into_a_closed_pipe(a):
        print("first line")
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setitem(cli.COMMANDS, "show", writes_into_a_closed_pipe)
    monkeypatch.setattr(cli.os, "dup2", lambda *a: None)  # leave pytest's stdout alone
    rc, _, err = run(capsys, "show")
    assert rc == 0 and err == "", err


def test_an_unexpected_error_is_one_line_with_the_way_to_the_trace(capsys, monkeypatch):
    def boom(a):
        raise ValueError("a bug")

    monkeypatch.setitem(cli.COMMANDS, "show", boom)
    monkeypatch.delenv("COMMSCOPE_DEBUG", raising=False)
    rc, _, err = run(capsys, "show")
    assert rc == 3 and err.count("\n") == 1, err
    assert "internal error: ValueError: a bug" in err and "COMMSCOPE_DEBUG=1" in err


def test_a_sweep_over_every_mpi_leaves_out_those_a_cluster_cannot_launch(capsys, monkeypatch,
                                                                         impls, tmp_path):
    """make run MPIS=all, then make clusters: every implementation found is
    swept on the cluster except those its kind cannot launch, which are
    named; one named with --mpi is refused, as before."""
    import dataclasses

    real = next(iter(impls.values()))
    fake = dataclasses.replace(real, name="intel-x", family="intel")

    class Stop(BaseException):
        pass

    def stop(jobs, *a, **k):
        raise Stop(sorted({j.core.impl.name for j in jobs}))

    monkeypatch.setattr(cli_run, "named_impls", lambda a: [real, fake])
    monkeypatch.setattr(cli_run, "run_sweep", stop)
    with pytest.raises(Stop) as got:
        cli.main(["run", "--cluster", "slurm", "--bench", "latency", "--db",
                  str(tmp_path / "x.db")])
    assert got.value.args[0] == [real.name]
    err = capsys.readouterr().err
    assert "left out intel-x: no srun PMI plugin known for intel" in err, err
    rc, _, err = run(capsys, "run", "--cluster", "slurm", "--bench", "latency", "--mpi",
                     "intel-x", "--db", str(tmp_path / "x.db"))
    one_line_error(rc, err, "no srun PMI plugin known for intel")


def test_slurm_script_judges_the_run_it_will_queue(capsys, tmp_path):
    """Its help promises bad options fail when the script is written, not
    hours later in the queue: an unknown benchmark, an option value the core
    refuses, an empty value."""
    for args, needle in ((["--bench", "nope"], "unknown benchmark 'nope'"),
                         (["--window", "0"], "window"),
                         (["--sizes", ""], "--sizes was given an empty value")):
        rc, _, err = run(capsys, "slurm", "script", "--nodes", "2", "--out",
                         str(tmp_path / "job.sh"), "--", *args)
        one_line_error(rc, err, needle)
    assert not (tmp_path / "job.sh").exists()
    rc, _, err = run(capsys, "slurm", "script", "--nodes", "2", "--out", str(tmp_path / "job.sh"),
                     "--", "--bench", "latency", "--sizes", "8:1K")
    assert rc == 0 and (tmp_path / "job.sh").exists(), err


# -- names no store could match are said as such -------------------------------------
def _golden_copy(tmp_path: Path) -> Path:
    """The golden sweep (openmpi and mpich, two machine modes), copied."""
    import shutil

    db = tmp_path / "g.db"
    shutil.copy(golden("behaviour", "store.sqlite"), db)
    return db


@pytest.mark.parametrize("cmd", [["show"], ["export"], ["analyze", "findings"]])
@pytest.mark.parametrize("argv,needle", [
    (["--bench", "latnecy"], "latnecy is not a benchmark"),
    (["--bench", "latency,latnecy"], "did you mean latency?"),
    (["--bench", "coll"], "coll is a group of benchmarks, not a benchmark"),
    (["--mpi", "mpcih"], "no record in {db} is of mpcih: its records are of mpich, openmpi"),
    (["--mode", "floor~5000ns"], "no record was measured in floor~5000ns: the store's records "
                                "were measured in floor~58ns, floor~"),
])
def test_unknown_names_are_said_as_unknown(capsys, tmp_path, cmd, argv, needle):
    db = _golden_copy(tmp_path)
    before = _digest(db)
    rc, _, err = run(capsys, *cmd, "--db", str(db), *argv)
    assert rc == 2
    one_line_error(rc, err, needle.format(db=db))
    assert "no stored results match" not in err
    assert _digest(db) == before


def test_a_known_name_without_records_keeps_the_usual_message(capsys, tmp_path):
    """barrier is a benchmark of the core this store holds no record of; a
    benchmark only the store knows (an older core's) is no typo."""
    db = _golden_copy(tmp_path)
    rc, _, err = run(capsys, "show", "--db", str(db), "--bench", "barrier")
    one_line_error(rc, err, "no stored results match")
    import sqlite3

    with sqlite3.connect(db) as c:
        c.execute("UPDATE results SET bench='oldbench' WHERE bench='reduce_sends'")
    rc, out, err = run(capsys, "show", "--db", str(db), "--bench", "oldbench")
    assert rc == 0 and "oldbench" in out, err
    rc, out, err = run(capsys, "show", "--db", str(db), "--mpi", "mpich",
                       "--mode", "floor~58ns")
    assert rc == 0 and "mpich" in out, err
    # records without a floor have no mode a label could name
    rc, _, err = run(capsys, "show", "--db", str(golden_store(tmp_path / "s.db")), "--mode",
                     "floor~50ns")
    one_line_error(rc, err, "none carries a machine mode")


def test_a_settings_file_is_read_once_the_plan_is_otherwise_right(capsys, tmp_path):
    """A bad --path, --transport or benchmark is said before a bad --settings
    file is read: the plan's own checks come first, as before the plan
    moved to measure/plan.py (a review found the file read first)."""
    bad = tmp_path / "bad.txt"
    bad.write_text("not a setting\n")
    for argv, needle in ((["--path", "bogus"], "unknown --path 'bogus'"),
                         (["--transport", "bogus"], "unknown transport 'bogus'"),
                         (["--bench", "nosuch"], "nosuch")):
        rc, _, err = run(capsys, "run", "--np", "2", *argv, "--settings", str(bad),
                         "--db", str(tmp_path / "x.db"))
        one_line_error(rc, err, needle)
    rc, _, err = run(capsys, "run", "--np", "2", "--bench", "latency", "--settings", str(bad),
                     "--db", str(tmp_path / "x.db"))
    one_line_error(rc, err, "bad.txt")
    assert not (tmp_path / "x.db").exists()
