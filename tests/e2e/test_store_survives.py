"""A store that survives the machine: a disk that fills while a sweep
writes, two sweeps writing into one store at once, a sweep killed with
SIGKILL.  Each ends in a store that opens, holding every job that was
stored, and `--resume` goes on from there.

Noise policy: the flag is off (--noise-max-cores 2): these tests are about
what is stored, never about a figure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commscope.store.db import FAILED, OK, Store
from tests.conftest import mpi_processes
from tests.helpers import ROOT

pytestmark = pytest.mark.mpi
SRC = str(ROOT / "src")
SMALL = ["--sizes", "1:64", "--factor", "4", "--min-samples", "5",
         "--time-cap", "0.05", "--min-time", "0.01", "--noise-max-cores", "2", "--no-advise",
         "--quiet"]


def _commscope(*argv: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen([sys.executable, "-m", "commscope.cli", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


def _count(db: Path, sql: str) -> int:
    s = Store(db)
    try:
        return int(s.db.execute(sql).fetchone()[0])
    finally:
        s.close()


def _ok_runs(db: Path) -> list[int]:
    s = Store(db)
    try:
        return [r["id"] for r in s.runs([OK])]
    finally:
        s.close()


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB filesystem of its own (tmpfs), unmounted after: root only."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {got.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_disk_that_fills_mid_sweep_is_one_line_and_the_store_keeps_what_it_had(
        small_disk, cores):
    mpi = next(iter(cores))
    db = small_disk / "s.db"
    first = _commscope("run", "--db", str(db), "--mpi", mpi, "--bench", "latency", *SMALL)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    kept = _ok_runs(db)
    assert kept
    filler = small_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    sweep = ["run", "--db", str(db), "--mpi", mpi, *SMALL, "--bench", "latency,bw,allreduce",
             "--sizes", "1:64K", "--factor", "2", "--repeat", "3"]
    # no room at all: the store cannot even be opened, and says why
    p = _commscope(*sweep)
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0 and "Traceback" not in err, err
    assert err.strip() == f"commscope: error: cannot open the store {db}: the disk holding it " \
        "is full", err
    # room for its opening and a job or two: full in the middle of the sweep
    os.truncate(filler, filler.stat().st_size - 96 * 1024)
    full = _commscope(*sweep)
    out, err = full.communicate(timeout=300)
    lines = [x for x in err.splitlines() if x.strip()]
    assert full.returncode != 0 and "Traceback" not in err, err
    assert lines and lines[-1].startswith(f"commscope: error: cannot write to the store {db}: "
                                          "the disk holding it is full; what it held before is "
                                          "kept"), err
    assert mpi_processes() == []
    # the store opens and holds every job it held before
    filler.unlink()
    assert set(kept) <= set(_ok_runs(db))
    again = _commscope(*sweep, "--resume")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    s = Store(db)
    assert s.db.execute("SELECT count(*) FROM runs WHERE status='running'").fetchone()[0] == 0
    assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    s.close()


def test_two_sweeps_into_one_store_at_once_both_land(tmp_path, cores):
    """Oversubscribed while both run (four ranks on two cores): correctness only."""
    db = tmp_path / "s.db"
    mpi = next(iter(cores))
    a = _commscope("run", "--db", str(db), "--mpi", mpi, "--bench", "latency", *SMALL,
                   "--repeat", "8")
    deadline = time.monotonic() + 60  # the first has a job in flight when the second starts
    while time.monotonic() < deadline and a.poll() is None:
        if db.exists() and _count(db, "SELECT count(*) FROM runs WHERE status='running'"):
            break
        time.sleep(0.02)
    b = _commscope("run", "--db", str(db), "--mpi", mpi, *SMALL, "--bench", "bw",
                   "--repeat", "3")
    for p in (a, b):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    s = Store(db)
    rows = s.db.execute("SELECT sweep_id, bench, status, stderr_tail FROM runs").fetchall()
    assert {r["sweep_id"] for r in rows} == {1, 2}
    # neither sweep took the other's job in flight for a killed sweep's
    assert all(r["status"] == OK and "interrupted" not in (r["stderr_tail"] or "")
               for r in rows), [tuple(r) for r in rows]
    assert {r["bench"] for r in rows if r["sweep_id"] == 1} == {"latency"}
    assert {r["bench"] for r in rows if r["sweep_id"] == 2} == {"bw"}
    s.close()


def test_a_sweep_killed_with_sigkill_leaves_a_store_that_resume_continues(tmp_path, cores):
    db = tmp_path / "s.db"
    mpi = next(iter(cores))
    sweep = ["run", "--db", str(db), "--mpi", mpi, *SMALL, "--bench", "latency,bw",
             "--repeat", "4"]
    p = _commscope(*sweep)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not db.exists() or len(_ok_runs(db)) < 2):
        time.sleep(0.2)
    assert len(_ok_runs(db)) >= 2, "the sweep stored no two jobs in 120 s"
    os.killpg(p.pid, signal.SIGKILL)  # commscope; the job in flight has its own session
    p.communicate(timeout=30)
    # and ends as its benchmark does (a few tenths of a second here)
    deadline = time.monotonic() + 60
    while mpi_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    before = _ok_runs(db)
    again = _commscope(*sweep, "--resume")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    s = Store(db)
    runs = s.db.execute("SELECT id, status, plan_key, stderr_tail FROM runs").fetchall()
    ok = {r["plan_key"] for r in runs if r["status"] == OK}
    planned = {r["plan_key"] for r in runs}
    assert ok == planned  # every planned job, once resumed
    assert set(before) <= {r["id"] for r in runs if r["status"] == OK}
    assert not [r for r in runs if r["status"] == "running"]  # the killed job: a failure
    killed = [r for r in runs if r["status"] == FAILED]
    assert all("interrupted" in (r["stderr_tail"] or "") for r in killed)
    assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    s.close()
    assert mpi_processes() == []
