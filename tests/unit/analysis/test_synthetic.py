"""Analyses on synthetic data with known answers."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from commscope.analysis import crossover, findings, hockney, loggp, significance
from commscope.analysis.series import Config, Point, collect
from tests.helpers import stored_point, stored_row

SIZES = [2**k for k in range(0, 21, 2)]  # 1 B .. 1 MiB


def series(f, rel_ci=0.01, noise=0.0, seed=1, equiv=None):
    """equiv: for a collective, the sends of one message its records say it
    stands for (the core's table writes it into each one)."""
    rng = random.Random(seed)
    out = {}
    for s in SIZES:
        m = f(s) * (1 + rng.gauss(0, noise))
        out[s] = Point(s, m, m * (1 - rel_ci), m * (1 + rel_ci), equiv_sends=equiv)
    return out


def ref_line(s):
    return 1.0 + s / 1000.0


@pytest.mark.parametrize("coll,scenario,short,long_,cross", [
    (lambda s: 2.0 * ref_line(s), 1, "H", "H", None),        # always slower
    (lambda s: 0.5 * ref_line(s), 2, "L", "L", None),        # always faster
    # lines meet at 4000 B; 4 KiB is too close to separate, 16 KiB is the first surely faster
    (lambda s: 3.0 + s / 2000.0, 3, "H", "L", 16384),         # slower, then faster
    (lambda s: 0.5 + s / 500.0, 4, "L", "H", 1024),           # faster, then slower
])
def test_four_scenarios(coll, scenario, short, long_, cross):
    v = crossover.classify(series(coll), series(ref_line))
    assert (v.scenario, v.short, v.long, v.crossover) == (scenario, short, long_, cross)
    if cross:
        lo, hi = v.bracket
        assert lo < cross == hi
        # the changing length is where the collective's line meets the reference's
        assert lo <= {3: 4000, 4: 1000}[scenario] <= hi


def test_crossover_advice_covers_exactly_the_separated_sizes():
    # the lines meet at 4000 B: 4 KiB is too close to tell apart, and the
    # advice must say so instead of stretching either verdict over it
    v = crossover.classify(series(lambda s: 3.0 + s / 2000.0), series(ref_line))
    assert v.advice("bcast", "3 MPI_Send calls") == (
        "3 MPI_Send calls faster than MPI_Bcast from 1 B to 1 KiB; not separated at 4 KiB; "
        "MPI_Bcast faster from 16 KiB to 1 MiB (this configuration)")
    assert v.changing == "4K"


def test_one_separated_size_among_equal_ones_is_no_claim():
    ref = series(ref_line)
    coll = dict(ref)
    coll[64] = ref[64].scaled(1.5)  # slower at 64 B only: what chance gives
    v = crossover.classify(coll, ref)
    assert v.scenario is None and {m for _, m in v.marks} == {"="}
    assert "every measured size" not in v.advice("bcast", "1 MPI_Send call")
    coll[256] = ref[256].scaled(1.5)  # and at its neighbour: a range, said as one
    v = crossover.classify(coll, ref)
    assert v.scenario == 1
    assert v.advice("bcast", "1 MPI_Send call") == (
        "not separated from 1 B to 16 B; 1 MPI_Send call faster than MPI_Bcast from 64 B "
        "to 256 B; not separated from 1 KiB to 1 MiB (this configuration)")


def test_noisy_equal_series_claims_nothing():
    """Same curve, 5% noise, +-10% intervals: no size separates."""
    v = crossover.classify(series(ref_line, rel_ci=0.10, noise=0.05, seed=3),
                           series(ref_line, rel_ci=0.10, noise=0.05, seed=4))
    assert v.scenario is None and v.crossover is None and not v.mixed
    assert {m for _, m in v.marks} == {"="}


def test_flip_flopping_series_is_mixed_not_a_crossover():
    flip = {s: (1.5 if (i // 2) % 2 else 0.5) for i, s in enumerate(SIZES)}  # two sizes each
    v = crossover.classify(series(lambda s: flip[s] * ref_line(s)), series(ref_line))
    assert v.mixed and v.scenario is None and v.crossover is None
    assert "no crossover claimed" in v.advice("reduce", "sends")


def test_sends_reference_scales_latency():
    lat = series(ref_line)
    ref = crossover.sends_reference(lat, 3)
    assert ref[1024].median == pytest.approx(3 * lat[1024].median)
    assert ref[1024].lo == pytest.approx(3 * lat[1024].lo)


def test_analyze_uses_latency_at_two_ranks_and_hand_rolled():
    cfg4 = Config("openmpi", 4, "local", key="openmpi")
    data = {
        (Config("openmpi", 2, "local", key="openmpi"), "latency"): series(ref_line),
        (cfg4, "bcast"): series(lambda s: 3.0 * (3.0 + s / 2000.0), equiv=3),
        (cfg4, "bcast_sends"): series(lambda s: 3.0 * ref_line(s)),
    }
    rows = crossover.analyze(data)
    assert [(r.collective, r.reference) for r in rows] == [
        ("bcast", "3 x MPI_Send"), ("bcast", "bcast_sends")]
    assert all(r.verdict.scenario == 3 and r.verdict.crossover == 16384 for r in rows)
    text = crossover.table(rows)
    assert "openmpi, 4 processes, local" in text
    assert "faster than MPI_Bcast from 1 B to 1 KiB; not separated at 4 KiB" in text


# -- Hockney ---------------------------------------------------------------
def test_hockney_recovers_known_pieces_within_2_percent():
    sizes = [2**k for k in range(0, 23)]
    rng = random.Random(5)

    def t(m):
        a, b = (0.3, 2000.0) if m < 16384 else (5.0, 10000.0)  # beta in bytes/us
        return (a + m / b) * (1 + rng.gauss(0, 0.002))

    f = hockney.fit(sizes, [t(m) for m in sizes])
    assert f.breakpoint == 16384
    left, right = f.pieces
    assert left.alpha_us == pytest.approx(0.3, rel=0.02)
    assert left.beta_gb_per_s == pytest.approx(2.0, rel=0.02)
    assert right.alpha_us == pytest.approx(5.0, rel=0.02)
    assert right.beta_gb_per_s == pytest.approx(10.0, rel=0.02)
    assert f.rms_rel_error < 0.01
    assert f.predict(1 << 20) == pytest.approx(5.0 + (1 << 20) / 10000.0, rel=0.02)


def test_hockney_keeps_one_piece_when_there_is_no_switch():
    sizes = [2**k for k in range(0, 20)]
    f = hockney.fit(sizes, [1.0 + m / 5000.0 for m in sizes])
    assert f.breakpoint is None
    assert f.pieces[0].alpha_us == pytest.approx(1.0, rel=1e-6)
    assert f.pieces[0].beta_mb_per_s == pytest.approx(5000.0, rel=1e-6)


# -- LogGP -----------------------------------------------------------------
def test_loggp_extraction_on_synthetic_trains():
    L, o_s, o_r, g, G, n, d = 0.8, 0.3, 0.4, 0.5, 0.0005, 16, 20.0
    sizes = [1, 64, 1024, 16384, 65536]

    def gall(s):
        return g + (s - 1) * G

    p1 = {s: 2 * (o_s + L + o_r) + 2 * (s - 1) * G for s in sizes}
    pn = {s: p1[s] + (n - 1) * max(o_s, o_r, gall(s)) for s in sizes}
    pnd = {s: p1[s] + (n - 1) * max(o_s + d, gall(s)) for s in sizes}
    pndr = {s: p1[s] + (n - 1) * max(o_r + d, gall(s)) for s in sizes}
    got = loggp.extract(p1, pn, pnd, pndr, n, d)
    assert got.o_s_us == pytest.approx(o_s, rel=1e-6)
    assert got.o_r_us == pytest.approx(o_r, rel=1e-6)
    assert got.G_us_per_byte == pytest.approx(G, rel=1e-3)
    assert got.g_us == pytest.approx(g, rel=1e-2)
    assert got.L_us == pytest.approx(L, rel=1e-6)
    assert got.G_gb_per_s == pytest.approx(2.0, rel=1e-3)


def test_loggp_needs_the_trains():
    with pytest.raises(ValueError):
        loggp.extract({1: 1.0}, {1: 2.0}, {1: 3.0}, {1: 3.0}, 8, 10.0)


# -- findings --------------------------------------------------------------
def test_findings_faster_and_drop_and_silence_on_noise():
    a, b = Config("openmpi", 2, "local", key="openmpi"), Config("mpich", 2, "local", key="mpich")
    fast = series(ref_line)
    slow = series(lambda s: 1.5 * ref_line(s))
    bw_time = series(lambda s: s / 5000.0 if s != 4096 else 4096 / 2000.0)  # dip at 4 KiB
    got = findings.all_findings({(a, "latency"): fast, (b, "latency"): slow,
                                 (a, "bw"): bw_time})
    kinds = [f.kind for f in got]
    assert kinds.count("faster") == 1
    faster = [f for f in got if f.kind == "faster"][0]
    assert "openmpi is faster than mpich from 1 B to 1 MiB" in faster.text
    assert "1.50x" in faster.text
    drops = [f for f in got if f.kind == "drop"]
    assert len(drops) == 1 and "from 1 KiB" in drops[0].text and "to 4 KiB" in drops[0].text
    # the same curve measured twice with 5% noise and +-10% intervals: two
    # different series that no size tells apart
    sa = series(ref_line, rel_ci=0.1, noise=0.05, seed=8)
    sb = series(ref_line, rel_ci=0.1, noise=0.05, seed=9)
    assert all(sa[s].median != sb[s].median for s in SIZES)
    same = findings.all_findings({(a, "latency"): sa, (b, "latency"): sb})
    assert [f for f in same if f.kind == "faster"] == []
    # the same data with more ranks than cores times the scheduler: no finding
    a4 = Config("openmpi", 4, "local", True, key="openmpi")
    b4 = Config("mpich", 4, "local", True, key="mpich")
    assert findings.all_findings({(a4, "latency"): fast, (b4, "latency"): slow,
                                  (a4, "bw"): bw_time}) == []
    assert a4.label() == "openmpi, 4 processes, local (oversubscribed)"


def test_benjamini_hochberg_keeps_what_survives_the_number_of_tests():
    assert significance.bh_keep({"a": 0.001, "b": 0.02, "c": 0.04, "d": 0.3}) == {"a", "b"}
    assert significance.bh_keep({"a": 0.04}) == {"a"}  # one test: p < 0.05 stands
    assert significance.bh_keep({k: 0.04 for k in "abcdefgh"}) == set("abcdefgh")
    assert significance.bh_keep({"a": 0.04, **{k: 0.9 for k in "bcdefgh"}}) == set()


def test_runs_that_overlap_give_no_finding_whatever_one_run_claims():
    """Narrow within-run intervals, but the runs of the two implementations
    interleave (a host mode moving both): no finding."""
    a, b = Config("openmpi", 2, "local", key="openmpi"), Config("mpich", 2, "local", key="mpich")

    def pts(k, reps):
        return {s: Point(s, k * ref_line(s), k * ref_line(s) * 0.999, k * ref_line(s) * 1.001,
                         None, tuple(r * ref_line(s) for r in reps)) for s in SIZES}

    overlap = findings.all_findings({(a, "latency"): pts(1.0, (0.6, 1.0, 1.9)),
                                     (b, "latency"): pts(1.2, (0.7, 1.2, 2.0))})
    assert [f for f in overlap if f.kind == "faster"] == []
    apart = findings.all_findings({(a, "latency"): pts(1.0, (0.98, 1.0, 1.02)),
                                   (b, "latency"): pts(1.2, (1.18, 1.2, 1.23))})
    assert [f.kind for f in apart] == ["faster"]


def test_findings_merge_what_they_say_twice_and_rank_by_gain():
    a, b = Config("openmpi", 2, "local", key="openmpi"), Config("mpich", 2, "local", key="mpich")
    fast, slow = series(ref_line), series(lambda s: 1.5 * ref_line(s))
    got = findings.all_findings({(a, "latency"): fast, (b, "latency"): slow,
                                 (a, "roundtrip"): fast, (b, "roundtrip"): slow,
                                 (a, "bcast"): series(ref_line, equiv=1),
                                 (b, "bcast"): series(lambda s: 3.0 * ref_line(s), equiv=1)})
    got = [f for f in got if f.kind == "faster"]
    assert len(got) == 2
    assert got[0].text.startswith("bcast, 2 processes")  # 3x: saves most, comes first
    assert got[1].text.startswith("latency, roundtrip, 2 processes")
    assert got[0].gain > got[1].gain > 0.3


def test_a_smooth_curve_is_no_protocol_switch_and_a_step_is():
    cfg = Config("openmpi", 2, "local", key="openmpi")
    smooth = series(lambda s: 0.2 + s / 3000.0 + (s / 1e5) ** 1.3)
    assert findings.protocol_switches({(cfg, "latency"): smooth}) == []
    step = series(lambda s: (0.2 + s / 3000.0) if s < 16384 else (4.0 + s / 6000.0))
    got = findings.protocol_switches({(cfg, "latency"): step})
    assert len(got) == 1 and "between 4 KiB and 16 KiB" in got[0].text


# -- prediction of application phases ---------------------------------------------
def test_prediction_arithmetic_on_synthetic_models():
    import json as _json

    from commscope.analysis import predict
    from commscope.store.config import Configuration

    base = Configuration("openmpi").base_key  # the applications' own build, found by it
    cfg2 = Config("openmpi", 2, "local", False, "openmpi", key="openmpi", base_key=base)
    sizes = [2**k for k in range(0, 24)]  # 1 B to 8 MiB: matmul's 8 MB B is measured

    def line(alpha, beta):  # Hockney: alpha + m / beta (bytes per us)
        return {s: Point(s, alpha + s / beta, (alpha + s / beta) * 0.99,
                         (alpha + s / beta) * 1.01) for s in sizes}

    models = {(cfg2, "bcast"): line(1.0, 1000.0), (cfg2, "scatter"): line(2.0, 2000.0),
              (cfg2, "gather"): line(3.0, 4000.0), (cfg2, "allreduce"): line(0.5, 500.0),
              (Config("openmpi", 2, "local", key="openmpi", base_key=base), "latency"):
              line(0.25, 8000.0)}
    conf = _json.dumps(Configuration("openmpi", params=(("param", "iters=20"),)).to_json())

    def app(i, bench, n, params, phases):
        return stored_point({
            "id": i, "bench": bench, "np": 2, "size_bytes": n, "valid": True,
            "median_us": 1000.0, "ci_lo_us": 990.0, "ci_hi_us": 1010.0, "flagged": False,
            "mpi_name": "openmpi", "cluster": "local", "nodes": 1, "config": conf,
            "params": params, "root": None, "copy_gbs": 10.0, "phases": _json.dumps(
                {k: {"max_us": v * 1.5, "ranks_us": [v, v * 1.5]} for k, v in phases.items()})})

    n = 1000
    rows = [app(1, "matmul", n, f"N={n};impl=blas;threads=1",
                {"bcast_B": 6000.0, "send_A": 2002.0, "gather_C": 100.0}),
            app(2, "jacobi", 4096, "N=4096;px=0;py=0;iters=20;reduce_every=10;halo=packed;"
                "mode=blocking;scale=strong", {"exchange": 82.0, "reduce": 2.0}),
            app(3, "summa", 999, "N=999;nb=100;impl=blas",
                {"send_AB": 50.0, "bcast_A": 1.0, "bcast_B": 70.0, "gather_C": 30.0})]
    got = {(p.bench, p.phase): p for p in predict.predict(rows, models)}
    bb, blk = 8 * n * n, 8 * 500 * n
    assert got[("matmul", "bcast_B")].predicted_us == pytest.approx(1.0 + bb / 1000.0, rel=1e-3)
    assert got[("matmul", "send_A")].predicted_us == pytest.approx(2.0 + blk / 2000.0, rel=1e-3)
    assert got[("matmul", "gather_C")].predicted_us == pytest.approx(3.0 + blk / 4000.0,
                                                                     rel=1e-3)
    # 2 ranks: a 2 x 1 grid, blocks of 2048 x 4096: 20 sweeps of one row exchange
    assert got[("jacobi", "exchange")].predicted_us == pytest.approx(
        20 * (0.25 + 8 * 4096 / 8000.0), rel=1e-3)
    assert got[("jacobi", "reduce")].predicted_us == pytest.approx(2 * (0.5 + 8 / 500.0),
                                                                   rel=1e-3)
    # summa on 2 ranks: a 2 x 1 grid, blocks of 500 x 999, 10 panels of 100 rows of B
    # broadcast down the column of 2; no row broadcast (one process column)
    # rank 0 also copies every block out of the whole matrix (2 p of them) and
    # into the whole C (p): 2 bytes moved per byte at the job's copy rate (10 GB/s)
    sb = 8 * 500 * 999
    copy = 2 * sb / 10e3
    assert got[("summa", "send_AB")].predicted_us == pytest.approx(
        2 * (0.25 + sb / 8000.0) + 4 * copy, rel=1e-3)
    # each panel's broadcast holds the owner's copy of it out of its block
    pcopy = 2 * 8 * 100 * 999 / 10e3
    assert got[("summa", "bcast_B")].predicted_us == pytest.approx(
        10 * (1.0 + 8 * 100 * 999 / 1000.0 + pcopy), rel=1e-3)
    assert got[("summa", "gather_C")].predicted_us == pytest.approx(
        0.25 + sb / 8000.0 + 2 * copy, rel=1e-3)
    assert ("summa", "bcast_A") not in got
    # measured is the slowest rank's, the least-waiting one beside it; the verdict
    # follows the tolerance
    assert got[("matmul", "bcast_B")].measured_us == 9000.0
    assert got[("matmul", "bcast_B")].least_us == 6000.0
    # where a miss shows its reason in the record, it is said: send_A's least-waiting
    # rank (2002 us) is the model's 2002 us, the slowest (3003 us) waited
    assert got[("matmul", "send_A")].verdict == "MISS"
    assert "the rank that waited least matches" in got[("matmul", "send_A")].note
    assert got[("jacobi", "reduce")].verdict == "MISS"
    assert "each may wait for the slower rank" in got[("jacobi", "reduce")].note
    assert got[("matmul", "gather_C")].note == (  # predicted above measured: no story
        "gather: hot-buffer model for data that comes from memory (measure it with "
        "--buffers cold)")
    assert got[("matmul", "bcast_B")].verdict == "ok"  # 8001 / 9000
    assert got[("matmul", "gather_C")].verdict == "MISS"  # 1003 / 150
    assert "hot-buffer model for data that comes from memory" in got[
        ("matmul", "bcast_B")].note  # no cold series stored
    # with cold-buffer series stored, data from memory is predicted from them,
    # and the phases after a compute sweep (jacobi's halos and residual,
    # summa's panels) not: they want evicted ones, and say so
    cold = Config("openmpi buffers=cold", 2, "local", False, "openmpi", key="openmpi cold",
                  base_key=base, params=(("buffers", "cold"),))
    models.update({(cold, "bcast"): line(1.0, 500.0), (cold, "latency"): line(0.5, 4000.0)})
    got = {(p.bench, p.phase): p for p in predict.predict(rows, models)}
    assert got[("matmul", "bcast_B")].predicted_us == pytest.approx(1.0 + bb / 500.0, rel=1e-3)
    assert "hot-buffer" not in got[("matmul", "bcast_B")].note
    assert got[("summa", "send_AB")].predicted_us == pytest.approx(
        2 * (0.5 + sb / 4000.0) + 4 * copy, rel=1e-3)
    assert got[("summa", "bcast_B")].predicted_us == pytest.approx(
        10 * (1.0 + 8 * 100 * 999 / 1000.0 + pcopy), rel=1e-3)
    assert got[("jacobi", "exchange")].predicted_us == pytest.approx(
        20 * (0.25 + 8 * 4096 / 8000.0), rel=1e-3)
    assert got[("jacobi", "exchange")].note.startswith(
        "latency: hot-buffer model for a phase after a compute sweep (measure it with "
        "--buffers evicted); ")
    # with evicted series stored, those phases are predicted from them
    ev = Config("openmpi buffers=evicted", 2, "local", False, "openmpi", key="openmpi evicted",
                base_key=base, params=(("buffers", "evicted"),))
    with_ev = {**models, (ev, "latency"): line(5.0, 2000.0), (ev, "allreduce"): line(4.0, 400.0),
               (ev, "bcast"): line(6.0, 800.0)}
    ge = {(p.bench, p.phase): p for p in predict.predict(rows, with_ev)}
    assert ge[("jacobi", "exchange")].predicted_us == pytest.approx(
        20 * (5.0 + 8 * 4096 / 2000.0), rel=1e-3)
    assert ge[("jacobi", "reduce")].predicted_us == pytest.approx(2 * (4.0 + 8 / 400.0),
                                                                  rel=1e-3)
    assert ge[("summa", "bcast_B")].predicted_us == pytest.approx(
        10 * (6.0 + 8 * 100 * 999 / 800.0 + pcopy), rel=1e-3)
    assert "hot-buffer" not in ge[("jacobi", "exchange")].note
    # summa's panels change owner down the column: with the rank averages
    # stored (mean_rank_avg_us, carried on each point), its broadcasts read those
    bc = stored_point({
        "id": 9, "bench": "bcast", "np": 2, "size_bytes": 1024, "valid": True,
        "median_us": 10.0, "ci_lo_us": 9.0, "ci_hi_us": 11.0, "flagged": False,
        "mpi_name": "openmpi", "cluster": "local", "nodes": 1, "params": None, "root": 0,
        "config": _json.dumps(Configuration("openmpi", params=(("buffers", "evicted"),)
                                            ).to_json()), "mean_rank_avg_us": 6.0})
    ((key, bench), pts), = predict.rank_average(collect(
        [bc, replace(bc, id=10, size_bytes=2048, mean_rank_avg_us=None)])).items()
    assert (key.mpi, bench) == ("openmpi buffers=evicted", "bcast"), key
    assert list(pts) == [1024]  # a point without a rank average is left out
    assert (pts[1024].median, pts[1024].lo, pts[1024].hi) == pytest.approx((6.0, 5.4, 6.6))
    avg = line(3.0, 1600.0)
    with_avg = {**with_ev, (ev, "bcast"): {
        s: replace(p, rank_avg=avg[s].median) for s, p in with_ev[(ev, "bcast")].items()}}
    ga = {(p.bench, p.phase): p for p in predict.predict(rows, with_avg)}
    assert ga[("summa", "bcast_B")].predicted_us == pytest.approx(
        10 * (3.0 + 8 * 100 * 999 / 1600.0 + pcopy), rel=1e-3)
    assert ga[("matmul", "bcast_B")].predicted_us == got[("matmul", "bcast_B")].predicted_us
    assert ge[("matmul", "bcast_B")].predicted_us == got[("matmul", "bcast_B")].predicted_us
    # a block summa has just packed is sent from cache where it fits the
    # last-level cache the probe read (4 MB in 32 MiB), from memory where not
    fits = {(p.bench, p.phase): p for p in predict.predict(rows, models, 32 << 20)}
    assert fits[("summa", "send_AB")].predicted_us == pytest.approx(
        2 * (0.25 + sb / 8000.0) + 4 * copy, rel=1e-3)
    big = {(p.bench, p.phase): p for p in predict.predict(rows, models, 1 << 20)}
    assert big[("summa", "send_AB")].predicted_us == got[("summa", "send_AB")].predicted_us
    assert fits[("matmul", "bcast_B")].predicted_us == got[("matmul", "bcast_B")].predicted_us
    # a size beyond the largest measured is not extrapolated: the sweep to run
    short = {k: {s: p for s, p in v.items() if s <= 1 << 22} for k, v in models.items()}
    got = {(p.bench, p.phase): p for p in predict.predict(rows, short)}
    b = got[("matmul", "bcast_B")]
    assert b.predicted_us is None and b.verdict == "no model", b
    assert b.note == ("needs bcast at 7.6 MiB, measured up to 4 MiB: commscope run --bench "
                      "bcast --np 2 --sizes 1:8M --buffers cold (or --for matmul,N=1000)"), b.note
    # the ranks' arrival skew, measured in the phase, is the first rank's wait:
    # added to the model and said
    skewed = [replace(rows[1], phases=_json.dumps(
        {"exchange": {"max_us": 900.0, "ranks_us": [80.0, 900.0], "skew_us": 820.0},
         "reduce": {"max_us": 2.0, "ranks_us": [1.0, 2.0], "skew_us": 0.01}}))]
    got = {(p.bench, p.phase): p for p in predict.predict(skewed, models)}
    ex = got[("jacobi", "exchange")]
    assert ex.predicted_us == pytest.approx(820.0 + 20 * (0.25 + 8 * 4096 / 8000.0), rel=1e-3)
    assert ex.verdict == "ok" and ex.note.endswith(
        "; 0.820 ms of it the ranks' arrival skew, measured in the run"), ex.note
    assert got[("jacobi", "reduce")].predicted_us == pytest.approx(0.01 + 2 * (0.5 + 8 / 500.0),
                                                                   rel=1e-3)
    assert "measured in the run" not in got[("jacobi", "reduce")].note  # under 5% of it
    # a phase that still misses with the skew added names, in ms, what is in neither
    slow = [replace(rows[1], phases=_json.dumps(
        {"exchange": {"max_us": 2000.0, "ranks_us": [1500.0, 2000.0], "skew_us": 820.0}}))]
    (ex,) = [p for p in predict.predict(slow, models) if p.phase == "exchange"]
    gap = 2000.0 - (820.0 + 20 * (0.25 + 8 * 4096 / 8000.0))
    assert ex.verdict == "MISS" and (
        f"2.2x the model with the ranks' arrival skew: {gap / 1e3:.3f} ms of the phase is in "
        "neither (the model holds latency (hot); the skew is the arrivals' as measured)"
    ) in ex.note, ex.note
    # summa's panels never cross an owner's block: 32 + 32 at N=4000, nb=64
    big_summa = app(4, "summa", 4000, "N=4000;nb=64;impl=blas", {"bcast_B": 1e5})
    (bb4,) = [p for p in predict.predict([big_summa], models) if p.phase == "bcast_B"]
    assert bb4.predicted_us == pytest.approx(
        64 * (1.0 + 8 * 64 * 4000 / 1000.0 + 2 * 8 * 64 * 4000 / 10e3), rel=1e-3)
    assert predict._panels(4000, 2, 1, 64) == 64 and predict._panels(999, 2, 1, 100) == 10
    assert predict._panels(1000, 2, 2, 64) == 16 and predict._panels(10, 3, 1, 4) == 3
    assert predict._dims(4, 0, 0) == (2, 2) and predict._dims(6, 0, 1) == (6, 1)
    assert predict._dims(8, 0, 0) == (4, 2)


def test_overlap_and_efficiency_carry_the_times_intervals():
    """hidden and efficiency come with the range the totals' intervals allow;
    the one-rank reference is 1 exactly, with no range."""
    import json as _json

    from commscope.analysis import apps

    def jac(i, np_, mode, med, lo, hi, halo=0.0):
        ph = {"pack": {"max_us": halo / 2, "ranks_us": []},
              "exchange": {"max_us": halo / 2, "ranks_us": []}}
        return stored_row({
            "id": i, "bench": "jacobi", "np": np_, "size_bytes": 100, "valid": True,
            "median_us": med, "ci_lo_us": lo, "ci_hi_us": hi, "oversubscribed": False,
            "params": f"N=100;iters=20;mode={mode};scale=strong", "phases": _json.dumps(ph)})

    rows = [jac(1, 1, "blocking", 1000.0, 900.0, 1100.0),
            jac(2, 2, "blocking", 600.0, 550.0, 700.0, halo=100.0),
            jac(3, 2, "overlap", 560.0, 540.0, 600.0)]
    (ov,) = apps.overlaps(rows, lambda r: "x")
    assert ov.hidden == pytest.approx(0.4)
    assert ov.hidden_range == pytest.approx(((550 - 600) / 100, (700 - 540) / 100))
    (sc,) = [s for s in apps.scaling(rows, lambda r: "x") if "blocking" in s.rest]
    one, two = sc.points
    assert one.efficiency == 1.0 and one.eff_range is None
    assert two.efficiency == pytest.approx(1000 / (2 * 600))
    assert two.eff_range == pytest.approx((900 / (2 * 700), 1100 / (2 * 550)))


def test_a_memory_rate_says_cache_only_well_above_the_copy():
    from commscope.analysis.apps import MemoryRate

    assert "from cache" in MemoryRate("compute", 20.0, 10.0).text()
    # 1.2 x: within how far one copy measurement moves between runs here
    assert "from cache" not in MemoryRate("compute", 12.0, 10.0).text()
    assert "1.2 x the copy" in MemoryRate("compute", 12.0, 10.0).text()


def test_a_series_of_the_same_configuration_is_found_by_its_key_not_its_label():
    """predict and crossover find a benchmark's series measured where an
    application (or a collective) ran by the configuration's base key and
    the parameters it names, whatever the labels read; never by a label (a
    store from before configurations gets its keys as it opens)."""
    from commscope.analysis.series import Config, Point, find

    pt = {8: Point(8, 1.0, 0.9, 1.1)}
    app = Config("openmpi [a1b2c3d4]", 4, "local", base="openmpi [a1b2c3d4]", key="k-app",
                 base_key="B")
    hot = Config("openmpi (the build named)", 2, "local", key="k-hot", base_key="B")
    cold = Config("openmpi cold, as some label reads", 2, "local", key="k-cold", base_key="B",
                  params=(("buffers", "cold"),))
    other = Config("openmpi [a1b2c3d4]", 2, "local", key="k-oth", base_key="C")
    series = {(other, "latency"): {1: pt[8]}, (hot, "latency"): dict(pt),
              (cold, "latency"): dict(pt)}
    assert find(series, app, "latency", 2, False) is series[(hot, "latency")]
    assert find(series, app, "latency", 2, False, {"buffers": "cold"}) is series[
        (cold, "latency")]
    assert find(series, app, "latency", 4, False) is None  # not at 4 processes
    assert find(series, app, "bw", 2, False) is None
    # a series whose label reads as the one asked for, without the base asked for: not it
    named = Config("openmpi [a1b2c3d4] buffers=cold", 2, "local", key="k-named",
                   params=(("buffers", "cold"),))
    assert find({(named, "latency"): pt}, app, "latency", 2, False, {"buffers": "cold"}) is None
