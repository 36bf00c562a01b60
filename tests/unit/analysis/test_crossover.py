"""Collectives against sends, and Hockney fits, as an MPI specialist reads
them (issue 22): a bare send is a reference, never a replacement; one
verdict per size; an edge size alone claims nothing; `fit` stores no
parameter no message could have, and fits no application."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest

from commscope import cli
from commscope.analysis import crossover, findings, hockney, summary
from commscope.analysis.series import Config, Point
from commscope.store.db import OK, RunInfo, Store
from commscope.store.records import parse_result
from commscope.store.sizes import human_bytes

SIZES = [2**k for k in range(2, 23, 2)]  # 4 B .. 4 MiB (a reduce's sizes: whole elements)
CFG = Config("openmpi", 2, "local", impl="openmpi", key="openmpi")


def series(f, sizes=SIZES, rel=0.01, equiv=None):
    return {s: Point(s, f(s), f(s) * (1 - rel), f(s) * (1 + rel), equiv_sends=equiv)
            for s in sizes}


def lat(s):  # a Hockney line: 1 us, 1 GB/s
    return 1.0 + s / 1000.0


ADVICE = ("faster than", " faster from", "(this configuration)", " beats ")


# -- 1. a bare send is a reference, never a replacement ------------------------------
def test_a_reduce_is_never_advised_against_bare_sends():
    """MPI_Reduce 3x the one send it stands for at every size: the table
    says what that means (its overhead over bare sends, which combine no
    data), and nothing anywhere says to use the send instead."""
    data = {(CFG, "latency"): series(lat),
            (CFG, "reduce"): series(lambda s: 3.0 * lat(s), equiv=1)}
    (row,) = crossover.analyze(data)
    assert row.reference == "1 x MPI_Send" and not row.advises
    assert row.verdict.scenario == 1  # the H/L table keeps its verdict
    text = row.text()
    assert not any(w in text for w in ADVICE), text
    assert "MPI_Reduce against the 1 MPI_Send call it stands for: slower at every" in text
    assert "a reference and no advice: a send combines no data" in text
    table = crossover.table([row])
    assert "instead of" not in table and "keep" not in table
    # no finding, so no conclusion on the first screen either
    found = findings.all_findings(data)
    assert [f for f in found if f.kind == "collective-slower"] == []
    assert [c for c in summary.conclusions(found) if c.kind == "collective"] == []


def test_only_the_hand_written_equivalent_is_advised_instead_of_a_collective():
    data = {(CFG, "latency"): series(lat),
            (CFG, "reduce"): series(lambda s: 3.0 * lat(s), equiv=1),
            (CFG, "reduce_sends"): series(lat)}
    (f,) = findings.collectives_vs_sends(data)
    assert f.xrow is not None and f.xrow.reference == "reduce_sends" and f.xrow.advises
    assert "slower than its hand-written equivalent (reduce_sends)" in f.text
    assert "the hand-written equivalent faster than MPI_Reduce at every measured size" in f.text
    # a candidate: no code advised before the library's settings were searched
    assert "the diagnosis searches the library's settings first" in f.text
    assert "MPI_Send" not in f.text


# -- 2. one verdict per size --------------------------------------------------------
def _advised(rows):
    """(configuration, collective, size) -> the verdicts the advice of
    every row gives it (the rows whose text advises anything)."""
    out = defaultdict(set)
    for r in rows:
        if any(w in r.text() for w in ADVICE):
            for size, m in r.verdict.marks:
                if m != "=":
                    out[(r.config, r.collective, size)].add(m)
    return out


def test_crossover_advice_is_one_verdict_per_size():
    """The reduce is slower than the one send it stands for at every size
    but faster than its hand-written equivalent from 4 KiB on: were both
    references to advise, 16 KiB would be told 'use sends' and 'keep the
    reduce' at once.  One verdict per size, from the hand-written row."""
    data = {(CFG, "latency"): series(lambda s: 0.25 * lat(s)),
            (CFG, "reduce"): series(lat, equiv=1),
            (CFG, "reduce_sends"): series(lambda s: (0.5 if s < 4096 else 3.0) * lat(s))}
    rows = crossover.analyze(data)
    assert {r.reference for r in rows} == {"1 x MPI_Send", "reduce_sends"}
    # the two references disagree from 4 KiB on ...
    marks = {r.reference: dict(r.verdict.marks) for r in rows}
    assert marks["1 x MPI_Send"][16384] == "H" and marks["reduce_sends"][16384] == "L"
    # ... and the advice holds one verdict at each size
    advised = _advised(rows)
    assert advised and all(len(v) == 1 for v in advised.values()), dict(advised)
    assert {s for (_, _, s) in advised} == set(SIZES)
    text = crossover.table(rows)
    assert text.count("the hand-written equivalent faster than MPI_Reduce from 4 B to "
                      "1 KiB") == 1
    assert text.count("MPI_Reduce faster from 4 KiB to 4 MiB") == 1


# -- 3. an edge size alone is no verdict -----------------------------------------------
def test_an_edge_size_alone_carries_no_claim():
    ref = series(lat)
    # the first size swept alone slower (a warm-up looks like this), then the last alone
    for edge in (SIZES[0], SIZES[-1]):
        coll = {s: (p.scaled(2.0) if s == edge else p) for s, p in ref.items()}
        v = crossover.classify(coll, ref)
        assert v.scenario is None and {m for _, m in v.marks} == {"="}, (edge, v.marks)
    # a sweep of two sizes: the first alone is no verdict, both together are one
    two = series(lat, sizes=SIZES[:2])
    v = crossover.classify({4: two[4].scaled(2.0), 16: two[16]}, two)
    assert v.scenario is None and v.marks == ((4, "="), (16, "="))
    v = crossover.classify({s: p.scaled(2.0) for s, p in two.items()}, two)
    assert v.scenario == 1 and v.marks == ((4, "H"), (16, "H"))
    # and one size alone is none
    one = series(lat, sizes=[64])
    assert crossover.classify({64: one[64].scaled(2.0)}, one).scenario is None
    # the first two sizes together are a run, and a claim
    coll = {s: (p.scaled(2.0) if s <= 16 else p) for s, p in ref.items()}
    v = crossover.classify(coll, ref)
    assert v.scenario == 1 and [(m, lo, hi) for m, lo, hi in v.runs() if m == "H"] == [
        ("H", 4, 16)]
    # the table's short and long cells: an H decided only from the middle sizes
    # says where it starts and ends, not that it is the small messages' verdict
    assert v.cells() == ("H", "H to 16 B"), v.cells()
    mid = {s: (p.scaled(2.0) if SIZES[2] <= s <= SIZES[4] else p) for s, p in ref.items()}
    w = crossover.classify(mid, ref)
    assert w.cells() == (f"H from {human_bytes(SIZES[2])}", f"H to {human_bytes(SIZES[4])}")
    assert crossover.classify(ref, ref).cells() == ("=", "=")


# -- the summary's figure shades what its sentence names ------------------------------------
def test_the_collective_figure_shades_only_the_runs_the_advice_names():
    from commscope.report.focus import figure

    data = {(CFG, "bcast_sends"): series(lat),
            (CFG, "bcast"): series(lambda s: (1.0 if s == 1024 else 3.0) * lat(s), equiv=1)}
    (c,) = summary.conclusions(findings.all_findings(data))
    assert "from 4 B to 256 B, from 4 KiB to 4 MiB" in c.headline, c.headline
    fig = figure(c, data, "fig-test")
    assert fig is not None
    assert [(lo, hi) for lo, hi, _ in fig.spans] == [(4, 256), (4096, 4 << 20)]


# -- 5. fit: no implausible model, no application ----------------------------------------------
def test_implausible_pieces_are_named():
    sizes = [2**k for k in range(0, 21)]
    ok = hockney.Fit((hockney.Piece(0.3, 5000.0, 1, 4096),
                      hockney.Piece(2.0, 10000.0, 8192, 1 << 20)), 0.01)
    assert hockney.implausible(ok, sizes) is None
    bad = hockney.Fit((hockney.Piece(-9.7, 5000.0, 1, 4096),
                       hockney.Piece(2.0, 10000.0, 8192, 1 << 20)), 0.01)
    assert hockney.implausible(bad, sizes) == (
        "the small-message piece gives alpha -9.7 us < 0 (a bad piece)")
    flat = hockney.Fit((hockney.Piece(0.3, math.inf, 1, 4096),), 0.01)
    assert "the fit's time does not grow with size (beta <= 0)" in hockney.implausible(
        flat, sizes[:13])
    short = hockney.Fit((hockney.Piece(0.3, 5000.0, 1, 2),), 0.01)
    assert hockney.implausible(short, [1, 2]) == "the fit rests on 2 sizes (fewer than 3)"
    # what the fit itself gives on a line that meets the time axis below zero
    f = hockney.fit(SIZES[4:], [-0.5 + s / 1000.0 for s in SIZES[4:]])
    assert f.pieces[0].alpha_us == pytest.approx(-0.5)
    assert "gives alpha -0.5 us < 0" in hockney.implausible(f, SIZES[4:])
    # a cliff (the time per byte tripling from 512 KiB on, as where messages
    # leave a cache) said in words where the times are given; a straight
    # line below zero has none to name
    big = [1 << k for k in range(10, 23)]
    knee = 0.3 + (512 << 10) / 8000.0
    times = [0.3 + s / 8000.0 if s <= 512 << 10 else knee + (s - (512 << 10)) / 2700.0
             for s in big]
    fc = hockney.fit(big, times)
    why = hockney.implausible(fc, big, times)
    assert why is not None and "gives alpha" in why, (fc, why)
    assert "the time per added byte is 3.0x higher from 512 KiB to 1 MiB than just below" in why
    assert ": the time" not in hockney.implausible(f, SIZES[4:],
                                                    [-0.5 + s / 1000.0 for s in SIZES[4:]])


def test_only_message_size_benchmarks_are_fitted():
    assert hockney.skipped("latency", "p2p") is None
    assert hockney.skipped("reduce_scatter", "coll") is None
    assert hockney.skipped("bcast_sends", "coll-sends") is None
    assert hockney.skipped("barrier", "coll") == "no message"
    assert hockney.skipped("matmul", "apps").startswith("an application")
    assert hockney.skipped("loggp_1", "loggp")
    # no core table knows it: its records say what it is
    assert hockney.skipped("summa", None, app_like=True).startswith("an application")
    assert hockney.skipped("newcoll", None) is None
    # no core built here says: the core's table this package carries does
    assert hockney.skipped("loggp_1", None) == "not a message-size benchmark (group loggp)"
    assert hockney.skipped("barrier", None) == "no message"
    assert hockney.skipped("matmul", None).startswith("an application")
    assert hockney.skipped("bcast_sends", None) is None


def _rec(bench, size, t, **extra):
    return parse_result({"bench": bench, "size_bytes": size, "np": 2, "valid": True,
                         "n_samples": 50, "batch": 1, "n_iters": 50, "median_us": t,
                         "ci_lo_us": 0.99 * t, "ci_hi_us": 1.01 * t, **extra})


def _store(tmp_path, benches):
    s = Store(tmp_path / "fit.db")
    for bench, recs in benches.items():
        rid = s.begin_run(RunInfo(
            plan_key=bench, bench=bench, np=2, sizes="", mpi_name="openmpi",
            mpi_family="openmpi", mpi_version="Open MPI v4.1.4", mpi_identity="x",
            cluster="local", launch_argv=["mpirun"], env={},
            machine={"hostname": "h", "n_cores": 2}, options={}, oversubscribed=False), None)
        s.finish_run(rid, OK, exit_code=0, signal=None, stderr_tail="", header=None,
                     results=recs, flags=[False] * len(recs), noise={})
    return s


def test_fit_refuses_a_negative_alpha_and_skips_applications(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COMMSCOPE_CACHE", str(tmp_path / "cache"))  # no core table: records say
    sizes = [2**k for k in range(10, 21)]  # 1 KiB .. 1 MiB
    _store(tmp_path, {
        "latency": [_rec("latency", s, 0.2 + s / 9000.0) for s in sizes],
        # a line that meets the time axis at -9.7 us: no message takes less than nothing
        "reduce_scatter": [_rec("reduce_scatter", s, -9.7 + s / 1000.0) for s in sizes[4:]],
        # an application: its size is a matrix order N, its times no message's
        "matmul": [_rec("matmul", n, 0.001 * n**3 - 17140.0 if n > 300 else 5.0,
                        size_param="N", params=f"N={n}") for n in (256, 512, 1024, 2048)],
    })
    db = str(tmp_path / "fit.db")
    assert cli.main(["fit", "--db", db, "--model", "hockney"]) == 0
    out = capsys.readouterr().out
    (rs,) = [ln for ln in out.splitlines() if "reduce_scatter" in ln]
    assert "not stored: the fit gives alpha -9.7 us < 0" in rs, out
    assert [ln for ln in out.splitlines() if ln.startswith("openmpi") and "matmul" in ln] == []
    assert "not fitted: matmul (applications" in out
    fits = Store(db).fits("hockney")
    assert len(fits) == 1
    assert json.loads(fits[0]["params"])["pieces"][0]["alpha_us"] > 0


def test_fit_takes_the_core_table_over_the_records(tmp_path, monkeypatch, capsys):
    """A benchmark the core's table calls an application is skipped even
    where its records carry none of an application's fields."""
    cache = tmp_path / "cache"
    (cache / "build" / "openmpi-x").mkdir(parents=True)
    (cache / "build" / "openmpi-x" / "meta.json").write_text(json.dumps({"benches": [
        {"name": "latency", "group": "p2p"}, {"name": "summa", "group": "apps"}]}))
    monkeypatch.setenv("COMMSCOPE_CACHE", str(cache))
    sizes = [2**k for k in range(10, 21)]
    _store(tmp_path, {"latency": [_rec("latency", s, 0.2 + s / 9000.0) for s in sizes],
                      "summa": [_rec("summa", s, 1.0 + s / 100.0) for s in sizes]})
    assert cli.main(["fit", "--db", str(tmp_path / "fit.db"), "--model", "hockney"]) == 0
    out = capsys.readouterr().out
    assert "not fitted: summa (applications" in out
    assert len(Store(tmp_path / "fit.db").fits("hockney")) == 1
