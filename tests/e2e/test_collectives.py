"""Every collective, its hand-rolled version and the LogGP trains under both
Debian MPIs, at 2 ranks and at 4 (oversubscribed here: correctness only),
with validation passing; then the analyses over what was stored."""

from __future__ import annotations

import json

import pytest

from commscope import cli
from commscope.store.db import Store
from tests.conftest import mpi_processes

pytestmark = pytest.mark.mpi

COLL = ["barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "alltoall",
        "allgather", "reduce_scatter", "bcast_sends", "reduce_sends", "gather_sends",
        "scatter_sends", "alltoall_sends"]
# Oversubscribed MPICH ranks spin through scheduler slices: keep it short.
TINY = ["--sizes", "8:4K", "--factor", "512", "--min-samples", "3", "--min-time", "0",
        "--warmup", "0", "--warmup-time", "0", "--time-cap", "0.05", "--quiet",
        "--timeout", "120"]


@pytest.fixture(scope="module")
def coll_db(tmp_path_factory, cores):
    """Noise policy: the flag is off (every core may be busy): the analyses
    here are checked for what they compare, and records flagged noisy would
    leave them nothing to compare on a busy machine."""
    db = tmp_path_factory.mktemp("coll") / "coll.db"
    mpis = [x for m in cores for x in ("--mpi", m)] + ["--noise-max-cores", "2"]
    for np_, root in ((2, 1), (4, 3)):
        rc = cli.main(["run", "--no-advise",
                       "--db", str(db), "--bench", ",".join(COLL), "--np", str(np_),
                       "--root", str(root), *mpis, *TINY])
        assert rc == 0
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "latency,loggp", "--np", "2", *mpis,
                   "--sizes", "1:64K", "--factor", "8", "--min-time", "0.01", "--quiet"])
    assert rc == 0
    return db, sorted(cores)


def test_every_collective_is_stored_valid(coll_db):
    db, mpis = coll_db
    rows = Store(db).result_rows()
    got = {(r["mpi_name"], r["np"], r["bench"]) for r in rows}
    assert {(m, n, b) for m in mpis for n in (2, 4) for b in COLL} <= got
    coll = [r for r in rows if r["bench"] in COLL]
    assert all(r["valid"] and r["run_status"] == "ok" for r in coll)
    # barrier has one size; reductions skip nothing at 8 B and 4 KiB
    assert {r["size_bytes"] for r in coll if r["bench"] == "barrier"} == {0}
    assert {r["size_bytes"] for r in coll if r["bench"] == "allreduce"} == {8, 4096}
    roots = {r["root"] for r in coll if r["bench"] == "bcast" and r["np"] == 4}
    assert roots == {3}
    assert all(r["oversubscribed"] for r in coll if r["np"] == 4)
    assert mpi_processes() == []


def test_bandwidth_columns_follow_nccl_tests(coll_db):
    db, _ = coll_db
    for r in Store(db).result_rows():
        n, s, t = r["np"], r["size_bytes"], r["median_us"]
        if r["bench"] == "allreduce":
            assert r["mb_per_s"] == pytest.approx(s / t, rel=1e-4)
            assert r["busbw_mb_per_s"] == pytest.approx(s / t * 2 * (n - 1) / n, rel=1e-4)
        if r["bench"] == "alltoall":
            assert r["mb_per_s"] == pytest.approx(s * n / t, rel=1e-4)
            assert r["busbw_mb_per_s"] == pytest.approx(s * n / t * (n - 1) / n, rel=1e-4)
            assert r["equiv_sends"] == n * (n - 1)
        if r["bench"] == "bcast":
            assert r["busbw_mb_per_s"] == pytest.approx(r["mb_per_s"], rel=1e-6)
            assert r["equiv_sends"] == n - 1
        if r["bench"] in ("bcast", "allreduce", "alltoall") and n == 4:
            # the slowest rank of each iteration against the ranks' average:
            # four ranks never finish together, so a reduction that mixed the
            # two up (or reduced only one rank) would make them equal
            assert r["mean_us"] > r["mean_rank_avg_us"] > 0


def test_analyze_fit_and_findings_run_on_real_data(coll_db, capsys):
    db, mpis = coll_db
    assert cli.main(["analyze", "crossover", "--db", str(db), "--np", "4"]) == 0
    out = capsys.readouterr().out
    for m in mpis:
        # --root 3 is a parameter of the configuration, and the label says so
        # for the rooted collectives
        assert f"{m} root=3, 4 processes, local (oversubscribed)" in out
    assert "12 x MPI_Send" in out and "alltoall_sends" in out and "bcast_sends" in out
    # a rooted collective's reference is the latency of the same implementation,
    # whatever root the sweep gave (latency has none)
    assert "3 x MPI_Send" in out
    assert cli.main(["fit", "--db", str(db), "--bench", "latency,loggp_1,loggp_n,loggp_nd,"
                     "loggp_ndr"]) == 0
    out = capsys.readouterr().out
    assert "latency" in out and "LogGP" in out
    fits = Store(db).fits()
    assert {f["model"] for f in fits} == {"hockney", "loggp"}
    lg = [json.loads(f["params"]) for f in fits if f["model"] == "loggp"]
    for p in lg:  # overheads of real calls, and a time per byte
        assert p["o_s_us"] > 0 and p["o_r_us"] > 0 and p["G_us_per_byte"] > 0, p
    assert cli.main(["analyze", "findings", "--db", str(db)]) == 0
    assert "records:" not in capsys.readouterr().out  # the ids only when asked for
    assert cli.main(["analyze", "findings", "--db", str(db), "--verbose"]) == 0
    assert "records:" in capsys.readouterr().out


def test_show_per_node(coll_db, capsys):
    db, _ = coll_db
    assert cli.main(["show", "--db", str(db), "--bench", "allreduce", "--per-node"]) == 0
    out = capsys.readouterr().out
    assert "MB/s per node" in out


def test_corrupted_collective_is_caught(tmp_path, cores):
    """A byte spoiled where each collective's result lands (bcast's is its
    one buffer, not the receive buffer of the others) fails its record."""
    db = tmp_path / "bad.db"
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "allreduce,alltoall,bcast,bcast_sends",
                   "--np", "2",
                   *TINY, "--inject", "corrupt@64", "--sizes", "64",
                   *[x for m in cores for x in ("--mpi", m)]])
    assert rc == 1
    rows = Store(db).result_rows()
    assert len({r["bench"] for r in rows}) == 4 and all(not r["valid"] for r in rows), [
        (r["bench"], r["valid"]) for r in rows]


def test_root_outside_the_communicator(capsys, cores):
    rc = cli.main(["run", "--no-advise", "--bench", "bcast", "--np", "2", "--root", "5",
                   "--mpi", sorted(cores)[0]])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "root 5 is outside the communicator of 2" in err[0]


def test_analysis_without_matching_data(capsys, tmp_path, coll_db):
    db, _ = coll_db
    rc = cli.main(["analyze", "crossover", "--db", str(db), "--bench", "latency"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no collective with a reference" in err[0]
    rc = cli.main(["analyze", "findings", "--db", str(db), "--mpi", "nonesuch"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "is of nonesuch: its records are of" in err[0]
    rc = cli.main(["analyze", "findings", "--db", str(db), "--bench", "bcast", "--np", "64"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no stored results match" in err[0]
