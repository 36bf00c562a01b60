"""Between-run statistics, machine modes, configuration identity, the
newest complete measurement, and comparisons that pair by configuration:
on fixed data with known answers."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from commscope.analysis import compare, repeats
from commscope.analysis.repeats import aggregate, between, detect_modes, mode_of
from commscope.errors import CommscopeError
from commscope.report.tables import figure_interval
from commscope.store.config import Configuration, config_of, from_stored, what
from commscope.store.db import FAILED, OK, Store
from commscope.store.records import parse_file
from tests.helpers import RECORDS, info, stored_point, stored_row


# -- between runs ---------------------------------------------------------------
def test_between_runs_median_and_interval_from_the_spread():
    b = between([1.0, 1.1, 0.9])
    assert b.median == 1.0 and b.n == 3
    logs = [math.log(x) for x in (1.0, 1.1, 0.9)]
    m = sum(logs) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
    assert b.lo == pytest.approx(math.exp(m - 4.303 * sd / math.sqrt(3)), rel=1e-4)
    assert b.hi == pytest.approx(math.exp(m + 4.303 * sd / math.sqrt(3)), rel=1e-4)
    assert b.spread == pytest.approx(1.1 / 0.9)
    # runs that agree give a narrow interval, but never narrower than one run's own CI
    tight = between([2.0, 2.0, 2.0], floor_lo=1.9, floor_hi=2.1)
    assert (tight.lo, tight.hi) == (1.9, 2.1)
    # the 2-3x host modes make the interval honest and wide
    assert between([0.075, 0.19, 0.18]).half_rel > 0.5
    one = between([3.0], 2.9, 3.2)
    assert (one.lo, one.median, one.hi) == (2.9, 3.0, 3.2)


def test_a_next_runs_interval_is_the_prediction_interval_wider_than_the_typical_figures():
    # one more run's figure: t(n-1) * sd * sqrt(1 + 1/n) a side, where the
    # typical figure's interval (what comparisons use) is t(n-1) * sd / sqrt(n)
    b = between([1.0, 1.1, 0.9])
    logs = [math.log(x) for x in (1.0, 1.1, 0.9)]
    m = sum(logs) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
    assert b.next_lo == pytest.approx(math.exp(m - 4.303 * sd * math.sqrt(4 / 3)), rel=1e-4)
    assert b.next_hi == pytest.approx(math.exp(m + 4.303 * sd * math.sqrt(4 / 3)), rel=1e-4)
    assert math.log(b.next_hi / b.next_lo) == pytest.approx(2 * math.log(b.hi / b.lo), rel=1e-3)
    # never narrower than the typical figure's (its floor, one run's own CI)
    tight = between([2.0, 2.0, 2.0], floor_lo=1.9, floor_hi=2.1)
    assert (tight.next_lo, tight.next_hi) == (1.9, 2.1)


def test_a_next_runs_interval_reaches_the_runs_taken_in_the_hosts_other_state():
    # three runs a point; the host was in its slow state (275 ns) for one of
    # them: the figure is the usual mode's, a next run may be taken in either
    rows = [_row(1, "a", 0.25, 70.0), _row(2, "a", 0.26, 71.0), _row(3, "a", 0.72, 275.0),
            _row(4, "b", 0.24, 69.0), _row(5, "b", 0.25, 70.0), _row(6, "b", 0.23, 72.0)]
    got = {r["config_key"]: r for r in aggregate(rows, mode="dominant")}
    a = got["a"]
    assert a["rep_ids"] == (1, 2) and a["other_state_us"] == (0.72,)
    assert a["next_hi_us"] == 0.72 and a["ci_hi_us"] < 0.5  # comparisons keep their interval
    assert got["b"]["other_state_us"] == () and got["b"]["next_hi_us"] < 0.5
    # a mode the user names is the state asked about: the other state widens nothing
    named = {r["config_key"]: r for r in aggregate(rows, mode="floor~70ns")}
    assert named["a"]["other_state_us"] == () and named["a"]["next_hi_us"] < 0.5
    # a run taken while other processes used the CPU says nothing of a next one
    busy = aggregate([*rows[:2], _row(3, "a", 0.72, 275.0, flagged=True)], mode="dominant")[0]
    assert busy["other_state_us"] == () and busy["next_hi_us"] < 0.5


def test_one_or_two_runs_take_the_spread_of_their_configurations_near_points_pooled():
    # c: 3 runs at 8, 64 and 512 B (6 degrees of freedom), two runs left at 32 B;
    # a 1 MiB point far outside the band and another configuration's wild
    # spread at 32 B are not pooled with them
    spec = {8: (1.0, 1.1, 0.9), 64: (2.0, 2.1, 1.9), 512: (3.0, 3.3, 2.8),
            1 << 20: (100.0, 300.0, 30.0)}
    rows = [_row(100 * k + i, "c", v, 70.0, size=s) for k, (s, vs) in enumerate(spec.items())
            for i, v in enumerate(vs)]
    rows += [_row(900, "c", 5.0, 70.0, size=32), _row(901, "c", 5.01, 70.0, size=32)]
    rows += [_row(950 + i, "a", v, 70.0, size=32) for i, v in enumerate((1.0, 9.0, 0.1))]
    got = {(r["config_key"], r["size_bytes"]): r for r in aggregate(rows)}
    c = got[("c", 32)]
    logs = [[math.log(v) for v in vs] for vs in ((1.0, 1.1, 0.9), (2.0, 2.1, 1.9),
                                                   (3.0, 3.3, 2.8), (5.0, 5.01))]
    ss = sum(sum((x - sum(ls) / len(ls)) ** 2 for x in ls) for ls in logs)
    sd = math.sqrt(ss / 7)  # 2 + 2 + 2 + 1 degrees of freedom
    m = (math.log(5.0) + math.log(5.01)) / 2
    assert c["next_pooled"]
    assert c["next_lo_us"] == pytest.approx(math.exp(m - 2.365 * sd * math.sqrt(1.5)), rel=1e-4)
    assert c["next_hi_us"] == pytest.approx(math.exp(m + 2.365 * sd * math.sqrt(1.5)), rel=1e-4)
    assert got[("c", 8)]["next_pooled"] is None  # three runs: their own spread
    # the pooled spread stands in place of two runs' own t interval (12.7 a side),
    # and always holds the point's own runs
    (d,) = [r for r in aggregate([*rows, _row(800, "c", 5.0, 70.0, size=16),
                                  _row(801, "c", 6.0, 70.0, size=16)])
            if r["config_key"] == "c" and r["size_bytes"] == 16]
    own = between([5.0, 6.0])
    assert d["next_pooled"] and own.next_lo < d["next_lo_us"] <= 5.0
    assert 6.0 <= d["next_hi_us"] < own.next_hi / 2
    # a pooled spread far tighter than the two runs' own still holds both runs
    tight = [_row(300 + 3 * k + i, "t", v * (k + 1), 70.0, size=17 + k)
             for k in range(20) for i, v in enumerate((1.0, 1.001, 0.999))]
    (e,) = [r for r in aggregate([*tight, _row(400, "t", 5.0, 70.0, size=16, ci=0.0),
                                  _row(401, "t", 7.0, 70.0, size=16, ci=0.0)])
            if r["size_bytes"] == 16]
    assert e["next_pooled"] and e["next_lo_us"] == 5.0 and e["next_hi_us"] == 7.0
    # nothing to pool (another benchmark): the two runs' range
    (alone,) = aggregate([_row(1, "c", 5.0, 70.0, bench="bw", ci=0.0),
                          _row(2, "c", 5.01, 70.0, bench="bw", ci=0.0)])
    assert alone["next_pooled"] is None and figure_interval(alone, 5.0) == (5.0, 5.01)
    assert figure_interval(c, 5.0) == (c["next_lo_us"], c["next_hi_us"])


def test_t_quantiles():
    assert repeats.t975(2) == pytest.approx(4.303)
    assert repeats.t975(1000) == pytest.approx(1.96, abs=0.01)
    assert math.isinf(repeats.t975(0))


# -- machine modes --------------------------------------------------------------
def test_modes_found_in_a_synthetic_floor_series():
    # the three modes seen on this VM: SMT siblings, other cores, far cores
    floors = [24.1, 25.0, 23.8, 51.0, 48.3, 55.9, 58.7, 201.0, 190.2, 24.5, None]
    modes = detect_modes(floors)
    assert [m.count for m in modes] == [4, 4, 2]
    assert [round(m.center_ns) for m in modes] == [24, 53, 196]
    assert mode_of(25.0, modes).label == "floor~24ns"
    assert mode_of(None, modes) is None
    # one mode when the floor only wanders within itself
    assert len(detect_modes([48.0, 52.0, 55.0, 59.0, 61.0])) == 1


def _row(i, cfg_key, median, floor, *, bench="latency", size=8, valid=True, flagged=False,
         ci=0.001, config=None):
    return stored_row({
        "id": i, "run_id": i, "config_key": cfg_key, "bench": bench, "np": 2,
        "size_bytes": size, "valid": valid, "median_us": median, "ci_us": ci,
        "ci_lo_us": median and median - ci, "ci_hi_us": median and median + ci,
        "flagged": flagged,
        "floor_ns": floor, "mpi_name": cfg_key, "config": config, "mean_us": median,
        "mb_per_s": None})


def test_aggregate_is_the_median_over_runs_with_a_between_run_interval():
    rows = [_row(1, "a", 0.20, 50.0), _row(2, "a", 0.10, 51.0), _row(3, "a", 0.18, 49.0),
            _row(4, "b", 0.30, 50.0)]
    got = {r["config_key"]: r for r in aggregate(rows)}
    a = got["a"]
    assert a["n_reps"] == 3 and a["median_us"] == 0.18 and a["rep_ids"] == (1, 2, 3)
    assert a["ci_lo_us"] < 0.10 and a["ci_hi_us"] > 0.20  # wider than any one run's ±0.001
    assert a["within_ci_us"] == 0.001 and a["spread"] == pytest.approx(2.0)
    assert a["id"] == 3  # the run whose median is the median links the record
    assert got["b"]["n_reps"] == 1 and got["b"]["ci_hi_us"] == pytest.approx(0.301)


def test_aggregate_keeps_one_mode_when_asked_and_drops_noisy_runs():
    rows = [_row(1, "a", 0.10, 24.0), _row(2, "a", 0.19, 50.0), _row(3, "a", 0.18, 52.0),
            _row(4, "b", 0.25, 51.0), _row(5, "b", 0.11, 25.0)]
    dom = {r["config_key"]: r for r in aggregate(rows, mode="dominant")}
    assert dom["a"]["rep_ids"] == (2, 3) and dom["b"]["rep_ids"] == (4,)
    assert dom["a"]["mode_dropped"] == 2
    fast = {r["config_key"]: r for r in aggregate(rows, mode="floor~24ns")}
    assert fast["a"]["rep_ids"] == (1,) and fast["b"]["rep_ids"] == (5,)
    # a point measured only in another mode keeps its runs, marked: no hole
    lone = {r["size_bytes"]: r for r in aggregate(
        [_row(1, "a", 0.10, 50.0), _row(2, "a", 0.11, 52.0), _row(3, "a", 0.12, 51.0),
         _row(4, "a", 0.30, 24.0, size=64)], mode="dominant")}
    assert lone[64]["rep_ids"] == (4,) and lone[64]["other_mode"]
    assert not lone[8]["other_mode"] and lone[8]["mode_dropped"] is None
    # a point whose runs in the usual mode were all taken while other processes
    # used the CPU: the clean run of the other mode stands in, marked, not a hole
    busy = {r["size_bytes"]: r for r in aggregate(
        [_row(1, "a", 0.10, 50.0), _row(2, "a", 0.11, 52.0), _row(3, "a", 0.12, 51.0),
         _row(4, "a", 0.9, 50.0, size=64, flagged=True), _row(5, "a", 0.30, 24.0, size=64)],
        mode="dominant")}
    assert busy[64]["other_mode"] and busy[64]["rep_medians_us"] == (0.30,), busy[64]
    assert not busy[64]["flagged"]
    # two records in two modes: neither is the machine's usual state, both stay
    even = aggregate([_row(1, "a", 0.10, 24.0), _row(2, "a", 0.19, 50.0)], mode="dominant")
    assert even[0]["rep_ids"] == (1, 2) and even[0]["mode_dropped"] is None
    noisy = aggregate([_row(1, "a", 0.1, 50.0), _row(2, "a", 0.5, 50.0, flagged=True),
                       _row(3, "a", 0.12, 50.0)])[0]
    assert noisy["rep_medians_us"] == (0.1, 0.12) and not noisy["flagged"]
    assert noisy["noisy_reps"] == 1
    bad = aggregate([_row(1, "a", 0.1, 50.0), _row(2, "a", None, 50.0, valid=False)])[0]
    assert bad["valid"] is False


def test_an_applications_phases_are_medians_of_the_same_runs():
    """The slowest rank's time and the ranks' arrival skew of each phase,
    both medians over the runs: a prediction adds one and sets it against
    the other (the skew of the median run alone read 8.1 ms against a 5.4 ms
    phase)."""
    import json

    def app(i, total, ex_max, ex_skew):
        r = _row(i, "a", total, 50.0, bench="jacobi")
        r["phases"] = json.dumps({"exchange": {"max_us": ex_max, "skew_us": ex_skew,
                                               "ranks_us": [ex_max, ex_max / 2]}})
        return r

    (row,) = aggregate([app(1, 10.0, 5.0, 8.0), app(2, 11.0, 9.0, 2.0), app(3, 12.0, 4.0, 3.0)])
    ph = json.loads(row["phases"])["exchange"]
    assert (ph["max_us"], ph["skew_us"]) == (5.0, 3.0), ph


# -- configurations -------------------------------------------------------------
def test_configuration_key_is_canonical_and_covers_every_field():
    a = Configuration("openmpi", "id1", params=(("window", 64),), settings=(("UCX_TLS", "sm"),))
    same = Configuration.from_json(json.loads(json.dumps(a.to_json())))
    assert same == a and same.key == a.key
    variants = [Configuration("mpich", "id1"), Configuration("openmpi", "id2"),
                Configuration("openmpi", "id1", transport="chan"),
                Configuration("openmpi", "id1", buffer="cuda"),
                Configuration("openmpi", "id1", params=(("window", 16),)),
                Configuration("openmpi", "id1", settings=(("UCX_TLS", "tcp"),)),
                Configuration("openmpi", "id1", cluster="emu:a"),
                Configuration("openmpi", "id1", nodes=2, ppn=1)]
    assert len({v.key for v in variants} | {a.key}) == len(variants) + 1


def test_configuration_of_a_run_stored_before_configurations():
    c = from_stored("chan-cma(openmpi)", "abc", {"transport": "chan-cma", "window": 8},
                    "local", None, 2)
    assert (c.mpi, c.transport, dict(c.params)["window"], c.np) == ("openmpi", "chan-cma", 8, 2)
    assert from_stored("mpich", None, {}, "emu:x", 2, 4).ppn == 2


def test_what_shows_only_the_parameters_that_apply():
    cfg = Configuration("mpich", params=(("root", 3), ("window", 8)))
    text = json.dumps(cfg.to_json())
    assert what(stored_row(config=text, bench="latency", root=None)) == "mpich"
    assert what(stored_row(config=text, bench="bcast", root=3)) == "mpich root=3"
    assert what(stored_row(config=text, bench="bw", root=None)) == "mpich window=8"


# -- the store: newest complete measurement -----------------------------------------
def _store_run(s, status, sweep=None, **kw):
    parsed = parse_file(RECORDS)
    rid = s.begin_run(info(**kw), sweep)
    results = parsed.results if status == OK else parsed.results[:1]
    s.finish_run(rid, status, exit_code=0 if status == OK else 1, signal=None, stderr_tail="",
                 header=parsed.header, results=results, flags=[False] * len(results), noise={})
    return rid


def test_a_failed_or_partial_run_never_hides_an_earlier_complete_one(tmp_path):
    s = Store(tmp_path / "a.db")
    sweep = s.begin_sweep(["x"], [])
    r1 = _store_run(s, OK, sweep)
    r2 = _store_run(s, OK, sweep)  # the sweep's second repetition
    r3 = _store_run(s, FAILED, s.begin_sweep(["y"], []))  # a later sweep that broke
    assert {r["run_id"] for r in s.result_rows()} == {r1, r2}
    r4 = _store_run(s, OK, s.begin_sweep(["z"], []))
    assert {r["run_id"] for r in s.result_rows()} == {r4}
    # another configuration whose only run failed still shows, failure and all
    r5 = _store_run(s, FAILED, None, mpi_name="mpich", mpi_family="mpich")
    assert {r["run_id"] for r in s.result_rows()} == {r4, r5}
    assert r3 not in {r["run_id"] for r in s.result_rows()}


def test_migration_to_5_gives_old_runs_their_configuration(tmp_path):
    path = tmp_path / "old.db"
    old = Store.__new__(Store)
    old.path = path
    old.db = sqlite3.connect(path)
    old.db.row_factory = sqlite3.Row
    old.db.execute("PRAGMA application_id=0x43534350")
    old.migrate(target=4)
    old.db.execute("""INSERT INTO runs(started_at, status, plan_key, bench, np, sizes, mpi_name,
                      mpi_family, launch_argv, options, cluster, nodes) VALUES ('t', 'ok', 'k',
                      'latency', 2, '8', 'chan(openmpi)', 'openmpi', '[]',
                      '{"transport": "chan", "window": 64}', 'local', 1)""")
    old.db.commit()
    old.db.close()
    s = Store(path)
    cfg = config_of(s.db.execute("SELECT config FROM runs").fetchone())
    assert cfg is not None
    assert (cfg.mpi, cfg.transport) == ("openmpi", "chan")
    assert s.db.execute("SELECT config_key FROM runs").fetchone()[0] == cfg.key
    assert s.db.execute("SELECT mpi_name FROM runs").fetchone()[0] == "chan(openmpi)"  # kept


# -- compare pairs by configuration ------------------------------------------------
def _crow(i, mpi, median, reps=(), size=8, cluster="local", transport="mpi"):
    cfg = Configuration(mpi, cluster=cluster, transport=transport)
    return stored_point({  # a point over its runs, as compare reads one
        "id": i, "bench": "latency", "np": 2, "size_bytes": size, "valid": True,
        "median_us": median, "ci_lo_us": median * 0.99, "ci_hi_us": median * 1.01,
        "config": json.dumps(cfg.to_json()), "mpi_name": mpi, "cluster": cluster,
        "rep_medians_us": tuple(reps)})


def test_compare_across_two_implementations_pairs_each_with_its_own():
    a = [_crow(1, "openmpi", 1.0, (1.0, 1.01, 0.99)), _crow(2, "openmpi", 2.0, (2.0, 2.0, 2.01),
                                                          cluster="emu:g")]
    b = [_crow(3, "mpich", 1.5, (1.5, 1.49, 1.52)), _crow(4, "mpich", 2.0, (2.01, 1.99, 2.0),
                                                        cluster="emu:g")]
    got = {(c.a_id, c.b_id): c for c in compare.compare_rows(a, b)}
    assert set(got) == {(1, 3), (2, 4)}  # local with local, emulated with emulated
    assert got[(1, 3)].verdict == "slower" and "between runs" in got[(1, 3)].test
    assert got[(2, 4)].verdict == "same"


def test_compare_refuses_a_set_it_cannot_pair_unambiguously():
    a = [_crow(1, "openmpi", 1.0), _crow(2, "mpich", 1.2)]
    b = [_crow(3, "openmpi", 1.1, transport="chan"), _crow(4, "openmpi", 1.0)]
    with pytest.raises(CommscopeError, match="set A holds two configurations"):
        compare.compare_rows(a, b)


def test_compare_between_runs_needs_the_runs_to_agree():
    # one run each would call this a 20% regression; three runs each that
    # overlap do not
    a = [_crow(1, "openmpi", 1.0, (0.6, 1.0, 1.9))]
    b = [_crow(2, "mpich", 1.2, (0.7, 1.2, 2.0))]
    (c,) = compare.compare_rows(a, b)
    assert c.ratio == pytest.approx(1.2) and c.verdict == "same"


def test_the_conclusions_mode_is_the_one_aggregate_kept():
    """findings.dominant_floor names the mode the records were kept in: the
    only one, or one holding more than half; where the host's modes split
    evenly, aggregate keeps every record, and no mode may be named."""
    from commscope.analysis.findings import dominant_floor

    def rows(*floors):
        return [{"floor_ns": f} for f in floors]

    assert dominant_floor(rows(60, 61, 62)) == pytest.approx(61, abs=2)
    assert dominant_floor(rows(60, 61, 62, 260, 258)) == pytest.approx(61, abs=2)
    assert dominant_floor(rows(60, 61, 62, 260, 258, 259)) is None  # 3 and 3
    assert dominant_floor(rows()) is None


def test_a_mode_named_from_the_whole_store_picks_it_among_fewer_records():
    """A label is the median floor of the records it was read from: the
    store's floor~58ns is floor~57ns among one implementation's records;
    it must still pick that mode, not keep every record as 'another mode'."""
    from commscope.analysis.repeats import aggregate, detect_modes, named_mode

    modes = detect_modes([56.0, 57.0, 57.5, 250.0, 251.0])
    assert named_mode(modes, "floor~58ns").label == "floor~57ns"
    assert named_mode(modes, "floor~900ns") is None and named_mode(modes, "fast") is None
    rows = [stored_row({"config_key": "k", "bench": "latency", "np": 2, "size_bytes": 8,
                        "valid": True, "median_us": m, "ci_us": 0.01, "floor_ns": f, "id": i,
                        "converged": True})
            for i, (m, f) in enumerate([(0.2, 56.0), (0.21, 57.0), (0.4, 250.0),
                                        (0.41, 251.0), (0.2, 57.5)])]
    (row,) = aggregate(rows, mode="floor~58ns")
    assert not row["other_mode"] and row["n_reps"] == 3 and row["median_us"] == 0.2


def test_a_floor_that_drifts_continuously_is_one_mode_not_a_chain_of_them():
    # another host: the floor wanders 121 ... 500 ns reading by reading, and
    # one run was taken at 904 ns; single linkage at 1.3x chains them all
    drift = [121.0, 140.0, 160.0, 175.0, 200.0, 240.0, 290.0, 350.0, 420.0, 500.0, 610.0, 760.0,
             904.0]
    assert len(detect_modes(drift)) == 1
    # a reading far above a drifting floor does not make the drift a mode of its own
    assert len(detect_modes([*drift[:10], 1250.0, 1300.0])) == 1
    # separated tight clusters stay modes
    assert [m.count for m in detect_modes([60.0, 62.0, 58.0, 275.0, 270.0, 280.0])] == [3, 3]
    # and stay modes with a few readings between them: a host with two states
    # (52-80 and 200-330 ns) read 9 of 13,000 floors at 84-126 ns, which chain
    # the fast state's cluster out to 2.4x its lower end
    fast = [52.0 + 28.0 * k / 99 for k in range(100)]
    slow = [200.0 + 130.0 * k / 79 for k in range(80)]
    tails = [84.0, 92.0, 104.0, 115.0, 126.0]
    modes = detect_modes([*fast, *tails, *slow])
    assert [m.count for m in modes] == [105, 80], modes


def test_a_run_far_from_its_points_other_floors_is_left_out_of_the_interval():
    rows = [_row(1, "a", 0.50, 160.0), _row(2, "a", 0.52, 165.0), _row(3, "a", 2.40, 903.0)]
    # the host's floor drifts (one mode over all its readings), so no mode
    # separates the third run: its floor, 5.5x its point's others, does
    drift = detect_modes([121.0, 160.0, 165.0, 210.0, 280.0, 370.0, 480.0, 640.0, 903.0])
    (kept,) = aggregate(rows, mode="dominant", modes=drift)
    assert kept["n_used"] == 2 and kept["far_reps"] == 1 and kept["ci_hi_us"] < 1.0
    (every,) = aggregate(rows, modes=drift)  # every record asked for: the far run stays
    assert every["n_used"] == 3 and every["far_reps"] == 0 and every["ci_hi_us"] > 2.0


def test_a_point_measured_on_a_busy_machine_is_kept_marked_for_predictions_only():
    """A figure all of whose runs were flagged noisy: no comparison may use
    it, but a prediction reads it, marked, rather than finding no series."""
    from commscope.analysis import predict
    from commscope.analysis.series import point

    rows = [{**_row(i, "a", 0.5 + 0.1 * i, 50.0, size=8 << i, flagged=True),
             "rep_medians_us": ()} for i in range(3)]
    assert all(point(r) is None for r in rows)
    kept = [point(r, keep_flagged=True) for r in rows]
    assert all(p is not None and p.flagged for p in kept)
    m = predict.model({p.size: p for p in kept})
    assert m is not None and m.busy


def test_a_point_is_typed_frozen_and_holds_every_field():
    """Aggregation returns points (analysis/point.py): every field there, None
    where it does not apply, so that no reader asks whether a key exists; a
    key aggregation makes that no field declares is an error, not lost."""
    from dataclasses import FrozenInstanceError, fields

    from commscope.analysis.point import AGGREGATED_NAMES, NAMES, Point, point
    from commscope.store.db import row_keys

    (p,) = aggregate([_row(1, "a", 0.20, 50.0)])
    assert isinstance(p, Point) and {f.name for f in fields(p)} == NAMES
    assert NAMES == {*row_keys(), *AGGREGATED_NAMES}
    assert p["n_reps"] == p.n_reps == 1 and p["mode_dropped"] is None
    with pytest.raises(FrozenInstanceError):
        p.n_reps = 2  # type: ignore[misc]
    with pytest.raises(KeyError):
        p["no_such_key"]
    with pytest.raises(TypeError, match="declare it in AGGREGATED"):
        point({"id": 1, "a_new_aggregate": 2.0})


def test_no_reader_asks_whether_a_record_has_a_key():
    """Records and points carry every field (None where it does not apply):
    `"k" in r.keys()`, or a KeyError caught, in a reader of them is a field
    that some rows lack, the thing the typed point removed."""
    import re
    from pathlib import Path

    import commscope

    src = Path(commscope.__file__).parent
    found = [f"{p.relative_to(src)}:{n}: {line.strip()}"
             for p in sorted(src.rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"""["'][a-z_0-9]+["'] (not )?in \w+\.keys\(\)""", line)]
    assert not found, found
