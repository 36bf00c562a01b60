"""Applications end to end: the distributed matrix multiply under both
Debian MPIs at 1, 2 and 4 ranks (4 oversubscribed: correctness only), its
phases, its validation, and its refusals."""

from __future__ import annotations

import json

import pytest

from commscope import cli
from commscope.store import Store

pytestmark = pytest.mark.mpi

QUICK = ["--min-samples", "5", "--time-cap", "0.2", "--min-time", "0.01", "--quiet"]


@pytest.fixture(scope="module")
def mm_db(tmp_path_factory, cores):
    db = tmp_path_factory.mktemp("apps") / "mm.db"
    mpis = [x for m in cores for x in ("--mpi", m)]
    # 257 divides over neither 2 nor 4 ranks: uneven blocks of rows
    assert cli.main(["run", "--db", str(db), "--bench", "matmul", "--np", "1,2,4",
                     "--param", "N=64,257", *mpis, *QUICK]) == 0
    return db, sorted(cores)


def test_every_rank_count_and_order_is_stored_valid_with_its_phases(mm_db):
    db, mpis = mm_db
    rows = Store(db).result_rows()
    got = {(r["mpi_name"], r["np"], r["size_bytes"]) for r in rows}
    assert got == {(m, n, s) for m in mpis for n in (1, 2, 4) for s in (64, 257)}
    for r in rows:
        assert r["valid"] and r["size_param"] == "N" and r["validations"] >= 1
        assert r["params"] == f"N={r['size_bytes']};impl=blas;threads=1"
        ph = json.loads(r["phases"])
        assert list(ph) == ["bcast_B", "send_A", "compute", "gather_C"]
        for p in ph.values():
            assert len(p["ranks_us"]) == r["np"] and p["max_us"] >= max(p["ranks_us"]) * 0.999
    # the swept N is the records' size, not part of the configuration
    assert len({r["config_key"] for r in rows}) == len(mpis) * 3


def test_one_rank_phases_add_up_to_the_sample(tmp_path, cores):
    db = tmp_path / "one.db"
    m = sorted(cores)[0]
    assert cli.main(["run", "--db", str(db), "--bench", "matmul", "--np", "1", "--mpi", m,
                     "--param", "N=400", *QUICK]) == 0
    (r,) = Store(db).result_rows()
    ph = json.loads(r["phases"])
    total = sum(p["max_us"] for p in ph.values())
    # medians of parts need not add up to the median of wholes exactly; one
    # rank with a dominant compute phase keeps them within a few percent
    assert abs(total - r["median_us"]) / r["median_us"] < 0.05, (total, r["median_us"])
    assert ph["compute"]["max_us"] > 0.5 * r["median_us"]


def test_show_prints_where_the_time_goes(mm_db, capsys):
    db, mpis = mm_db
    assert cli.main(["show", "--db", str(db), "--bench", "matmul", "--np", "2"]) == 0
    out = capsys.readouterr().out
    assert "matmul, 2 processes, local: us" in out
    for m in mpis:
        assert f"phases of {m}:" in out
    assert "       N " in out and "compute" in out and "gather_C" in out


def test_a_corrupted_block_of_c_is_caught(tmp_path, cores):
    db = tmp_path / "bad.db"
    rc = cli.main(["run", "--db", str(db), "--bench", "matmul", "--np", "2",
                   "--param", "N=129", "--inject", "corrupt@129",
                   *[x for m in cores for x in ("--mpi", m)], *QUICK])
    assert rc == 1
    store = Store(db)
    assert {r["status"] for r in store.runs()} == {"invalid"}
    assert all(not r["valid"] and "A (B x)" in r["error"] for r in store.result_rows())


def test_naive_and_blas_are_two_configurations(tmp_path, cores, capsys):
    db = tmp_path / "impl.db"
    m = sorted(cores)[0]
    for impl in ("blas", "naive"):
        assert cli.main(["run", "--db", str(db), "--bench", "matmul", "--np", "2", "--mpi", m,
                         "--param", f"N=96;impl={impl}", *QUICK]) == 0
    rows = Store(db).result_rows()
    assert len({r["config_key"] for r in rows}) == 2 and all(r["valid"] for r in rows)
    assert cli.main(["show", "--db", str(db), "--bench", "matmul"]) == 0
    out = capsys.readouterr().out
    assert f"{m} param=impl=naive" in out and f"{m} " in out


@pytest.mark.parametrize("param,says", [
    ("M=3", "unknown parameter 'M'"),
    ("N=0", "N needs positive integers"),
    ("N=64;impl=fast", "impl must be blas or naive"),
])
def test_bad_parameters_are_one_line_before_any_launch(param, says, cores, capsys, tmp_path):
    db = tmp_path / "x.db"
    rc = cli.main(["run", "--db", str(db), "--bench", "matmul", "--param", param,
                   "--mpi", sorted(cores)[0], *QUICK])
    err = capsys.readouterr().err.strip().splitlines()
    if "impl" in param:  # judged by the benchmark's set-up, inside the job
        assert rc == 1 and says in Store(db).runs()[0]["stderr_tail"]
        return
    assert rc == 2 and len(err) == 1 and says in err[0], err


def test_a_product_that_will_not_fit_is_refused_with_the_figure(tmp_path, cores):
    db = tmp_path / "big.db"
    rc = cli.main(["run", "--db", str(db), "--bench", "matmul", "--np", "2",
                   "--param", "N=200000", "--mpi", sorted(cores)[0], *QUICK])
    assert rc == 1
    (run,) = Store(db).runs()
    assert run["status"] == "failed"
    assert "needs" in run["stderr_tail"] and "GiB" in run["stderr_tail"]
    assert "refused" in run["stderr_tail"]


@pytest.fixture(scope="module")
def jac_db(tmp_path_factory, cores):
    db = tmp_path_factory.mktemp("jacobi") / "j.db"
    mpis = [x for m in cores for x in ("--mpi", m)]
    for param in ("N=33,64", "N=33,64;halo=datatype;mode=overlap", "N=20;py=1;scale=weak"):
        assert cli.main(["run", "--db", str(db), "--bench", "jacobi", "--np", "1,2,4",
                         "--param", param, *mpis, *QUICK]) == 0
    return db, sorted(cores)


def test_jacobi_every_decomposition_matches_the_serial_sweeps(jac_db):
    db, mpis = jac_db
    rows = Store(db).result_rows()
    # (implementations x 3 process counts) x (2 sizes, 2 sizes, 1 size)
    assert len(rows) == len(mpis) * 3 * 5
    assert all(r["valid"] and r["validations"] >= 1 for r in rows)
    kinds = {r["params"].split(";", 1)[1] for r in rows}
    assert kinds == {"px=0;py=0;iters=20;reduce_every=10;halo=packed;mode=blocking;scale=strong",
                     "px=0;py=0;iters=20;reduce_every=10;halo=datatype;mode=overlap;"
                     "scale=strong",
                     "px=0;py=1;iters=20;reduce_every=10;halo=packed;mode=blocking;scale=weak"}
    for r in rows:
        ph = json.loads(r["phases"])
        assert list(ph) == ["pack", "exchange", "unpack", "compute", "reduce"]
        assert ph["compute"]["max_us"] > 0 and ph["reduce"]["max_us"] > 0


def test_jacobi_scaling_table(jac_db, capsys):
    db, mpis = jac_db
    assert cli.main(["show", "--db", str(db), "--bench", "jacobi"]) == 0
    out = capsys.readouterr().out
    for m in mpis:
        assert f"jacobi scaling, {m}, local, N=64 (strong, 20 sweeps a sample;" in out
        assert f"jacobi scaling, {m}, local, N=20 (weak: N per rank" in out
    # the one-rank run is the efficiency's reference: 1.00 by definition, and 4
    # ranks on 2 cores are marked
    lines = out.splitlines()
    ones = [x.split() for x in lines if x.startswith("      1 ")]
    assert ones and all(x[-1] == "1.00" for x in ones)
    fours = [x for x in lines if x.startswith("      4 ")]
    assert fours and all(x.endswith("(oversubscribed)") for x in fours)


@pytest.mark.parametrize("param", ["N=64", "N=64;halo=datatype;mode=overlap"])
def test_jacobi_a_corrupted_halo_is_caught(param, tmp_path, cores):
    db = tmp_path / "bad.db"
    rc = cli.main(["run", "--db", str(db), "--bench", "jacobi", "--np", "2", "--param", param,
                   "--inject", "corrupt@64", "--mpi", sorted(cores)[0], *QUICK])
    assert rc == 1
    (r,) = Store(db).result_rows()
    assert not r["valid"] and "the serial sweeps give" in r["error"]


def test_jacobi_a_grid_that_does_not_decompose_is_refused(tmp_path, cores):
    db = tmp_path / "grid.db"
    rc = cli.main(["run", "--db", str(db), "--bench", "jacobi", "--np", "2",
                   "--param", "N=64;px=3", "--mpi", sorted(cores)[0], *QUICK])
    assert rc == 1
    assert "does not decompose 2 processes" in Store(db).runs()[0]["stderr_tail"]


def test_predict_sets_every_communication_phase_against_the_models(tmp_path, cores, capsys):
    db = tmp_path / "pred.db"
    m = sorted(cores)[0]
    assert cli.main(["run", "--db", str(db), "--bench", "latency,bcast,scatter,gather,"
                     "allreduce,matmul,jacobi", "--np", "2", "--mpi", m, "--param", "N=200",
                     *QUICK]) == 0
    assert cli.main(["analyze", "predict", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    for phase in ("bcast_B", "send_A", "gather_C", "exchange", "reduce"):
        assert f" {phase} " in out
    assert "5 phases:" in out and "without a model" in out
    # without the collectives there is nothing to predict from: said, not guessed
    db2 = tmp_path / "alone.db"
    assert cli.main(["run", "--db", str(db2), "--bench", "matmul", "--np", "2", "--mpi", m,
                     "--param", "N=64", *QUICK]) == 0
    assert cli.main(["analyze", "predict", "--db", str(db2)]) == 0
    out = capsys.readouterr().out
    assert "3 phases: 0 within" in out and "no bcast series" in out


def test_summa_on_every_grid_matches_the_product(tmp_path, cores):
    db = tmp_path / "summa.db"
    mpis = [x for m in cores for x in ("--mpi", m)]
    # 257 splits unevenly over a 2 x 2 grid; panels of 16 cross no block edge
    assert cli.main(["run", "--db", str(db), "--bench", "summa,matmul", "--np", "1,2,4",
                     "--param", "N=64,257;nb=16", *mpis, *QUICK]) == 0
    rows = Store(db).result_rows()
    summa = [r for r in rows if r["bench"] == "summa"]
    assert len(summa) == len(cores) * 3 * 2 and all(r["valid"] for r in summa)
    assert all(list(json.loads(r["phases"])) == ["send_AB", "bcast_A", "bcast_B", "compute",
                                                 "gather_C"] for r in summa)
    # the 1D scheme and SUMMA side by side: one configuration, two benchmarks
    for m in cores:
        keys = {(r["config_key"], r["bench"]) for r in rows if r["mpi_name"] == m
                and r["np"] == 4}
        assert {b for _, b in keys} == {"summa", "matmul"} and len({k for k, _ in keys}) == 1


def test_summa_a_corrupted_block_is_caught(tmp_path, cores):
    db = tmp_path / "bad.db"
    rc = cli.main(["run", "--db", str(db), "--bench", "summa", "--np", "4",
                   "--param", "N=129;nb=7", "--inject", "corrupt@129",
                   "--mpi", sorted(cores)[0], *QUICK])
    assert rc == 1
    (r,) = Store(db).result_rows()
    assert not r["valid"] and "A (B x)" in r["error"]
