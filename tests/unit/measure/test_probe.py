"""The machine probe: real figures from this machine, within physical
bounds; bad input; stored with sweeps; set beside MPI latency."""

from __future__ import annotations

import json
import os
import sqlite3
from html import escape

import pytest

from commscope.analysis import limits
from commscope.measure import probe
from commscope.store.db import Store
from tests.helpers import one_line_error, run, stored_row


@pytest.fixture(scope="module")
def data():
    return probe.run(pair_ms=10.0)


def test_the_probe_measures_this_machine_within_physical_bounds(data):
    cpus = sorted(os.sched_getaffinity(0))
    assert data["cpus"] == cpus
    pairs = data["core_to_core"]
    assert len(pairs) == len(cpus) * (len(cpus) - 1) // 2
    for p in pairs:
        # one cache line between two cores: more than a clock tick's share of
        # a batch, less than a scheduler slice
        assert 5 < p["one_way_ns"] < 20000, p
        assert p["batches"] >= 5
    cache, memory = data["copy"]
    assert cache["where"] == "cache" and memory["where"] == "memory"
    assert memory["bytes"] == 64 << 20
    for c in (cache, memory):
        assert 0.3 < c["gbs"] < 2000, c
    cma = data["process_vm_readv"]
    if cma["call_8b_ns"] is None:
        assert cma["error"]
    else:
        assert 20 < cma["call_8b_ns"] < 1e6 and 0.05 < cma["gbs_4mib"] < 2000
    assert data["page_bytes"] == os.sysconf("SC_PAGE_SIZE")
    listed = set()
    for n in data["numa"]:
        for part in n["cpus"].split(","):
            lo, _, hi = part.partition("-")
            listed |= set(range(int(lo), int(hi or lo) + 1))
    assert not data["numa"] or set(cpus) <= listed
    clk = data["clock"]
    assert clk["resolution_ns"] >= 1 and clk["step_ns"] >= clk["resolution_ns"]
    assert 1 < clk["read_ns"] < 10000


def test_a_pair_of_the_same_core_twice_is_refused_and_other_bad_input(capsys):
    for argv, needle in ((["--cpus", "0,0"], "each cpu once"),
                         (["--cpus", "0-1,1"], "each cpu once"),
                         (["--cpus", "0,99999"], "--cpus wants"),
                         (["--cpus", f"{max(os.sched_getaffinity(0)) + 1}"], "is not one"),
                         (["--cpus", "3-1"], "--cpus wants"),
                         (["--pair-ms", "0"], "outside")):
        rc, _, err = run(capsys, "probe", "--no-store", *argv)
        one_line_error(rc, err, needle)


def test_probe_prints_and_stores(capsys, tmp_path):
    db = tmp_path / "p.db"
    rc, out, _ = run(capsys, "probe", "--db", str(db), "--pair-ms", "5")
    assert rc == 0
    assert "core to core" in out and "GB/s" in out and "clock" in out
    (row,) = Store(db, create=False).probes()
    assert row["sweep_id"] is None and json.loads(row["data"])["page_bytes"] > 0
    rc, out, _ = run(capsys, "probe", "--no-store", "--json", "--pair-ms", "5")
    assert rc == 0 and json.loads(out)["probe"] == 1
    assert len(Store(db, create=False).probes()) == 1


def test_a_sweep_takes_the_probe_and_shows_mpi_over_its_floor(capsys, tmp_path, cores):
    name = sorted(cores)[0]
    db = tmp_path / "s.db"
    rc, out, err = run(capsys, "run", "--no-advise",
                       "--db", str(db), "--mpi", name, "--bench", "latency",
                       "--sizes", "1:8", "--time-cap", "0.05")
    assert rc == 0, err
    # the terminal gets where the tables are, not the tables (`run --show` prints them)
    assert f"the sweep's tables: commscope show --db {db}" in out.splitlines()
    assert "latency, 2 processes, local: us" not in out
    store = Store(db, create=False)
    (p,) = store.probes()
    sweep = sqlite3.connect(db).execute("SELECT max(id) FROM sweeps").fetchone()[0]
    assert p["sweep_id"] == sweep
    floor = probe.floor_ns(json.loads(p["data"]))
    # the run's headline figures: latency against the floor its jobs measured
    assert "Headline figures, 2 processes, one node" in out
    assert "  x the core-to-core floor" in out, out
    rc, shown, _ = run(capsys, "show", "--db", str(db))
    line = next(x for x in shown.splitlines() if x.startswith(f"{name}: 1 B latency"))
    lat = [r for r in store.result_rows() if r["bench"] == "latency" and r["size_bytes"] >= 1]
    lat_ns = next(r for r in lat if r["size_bytes"] == 1)["median_us"] * 1000
    # the floor its jobs measured beside these records (the host moves between jobs)
    own = limits.jobs_floor_ns(lat)
    assert own and own != floor  # (two readings: equal only by chance)
    assert line == (f"{name}: 1 B latency {lat_ns:.0f} ns, {lat_ns / own:.1f}x the core-to-core "
                    f"floor ({own:.0f} ns, the floor its jobs measured); MPI adds "
                    f"{lat_ns - own:.0f} ns"), line
    # the same figure in the headline table the run printed
    assert f"{lat_ns / own:.1f}x of {own:.0f} ns" in out
    rc, out, _ = run(capsys, "show", "--db", str(db))
    assert line in out
    rc, _, err = run(capsys, "report", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text()
    section = page.split("<h2 id=machine>")[1].split("<h2")[0]
    assert f"<p>{escape(line)}</p>" in section and "core to core" in section
    rc, out, err = run(capsys, "run", "--no-advise",
                       "--db", str(db), "--mpi", name, "--bench", "latency",
                       "--sizes", "8", "--time-cap", "0.05", "--no-probe", "--show")
    assert rc == 0, err
    assert len(store.probes()) == 1
    assert "latency, 2 processes, local: us" in out and "the sweep's tables" not in out


def test_beside_latency_takes_each_configurations_smallest_message():
    rows = [
        stored_row(bench="latency", np=2, cluster="local", valid=1, size_bytes=s, median_us=us,
                   mpi_name=m, mpi=m)
        for m, s, us in (("a", 8, 0.30), ("a", 1, 0.25), ("b", 1, 1.0), ("b", 0, 0.1))
    ] + [stored_row(bench="latency", np=4, cluster="local", valid=1, size_bytes=1,
                    median_us=0.01, mpi_name="a", mpi="a")]
    rows[2]["floor_ns"] = 200.0  # b's job measured its own floor, in another mode
    # the floor is the pair the ranks run on (the first two cores), not the lowest
    data = {"cpus": [0, 1, 2], "core_to_core": [{"a": 0, "b": 1, "one_way_ns": 50.0},
                                                {"a": 0, "b": 2, "one_way_ns": 200.0},
                                                {"a": 1, "b": 2, "one_way_ns": 20.0}]}
    assert probe.floor_ns(data) == 50.0
    # a's jobs measured no floor: the sweep's jobs' (b's) is the next one asked
    lines = limits.beside_latency(rows, probe.floor_ns(data))
    assert lines == [
        "a: 1 B latency 250 ns, 1.2x the core-to-core floor (200 ns, the floor the sweep's jobs "
        "measured); MPI adds 50 ns",
        "b: 1 B latency 1000 ns, 5.0x the core-to-core floor (200 ns, the floor its jobs "
        "measured); MPI adds 800 ns"]
    assert limits.beside_latency([{**r, "floor_ns": None} for r in rows], 50.0)[0] == (
        "a: 1 B latency 250 ns, 5.0x the core-to-core floor (50 ns, the probe's floor); MPI adds "
        "200 ns")
    text = probe.text({**data, "core_to_core": data["core_to_core"][:2]
                       + [{"a": 1, "b": 2, "one_way_ns": None, "error": "x"}]})
    matrix = text.splitlines()[2:5]
    assert matrix[0].split() == ["0", "-", "50", "200"]
    assert matrix[2].split() == ["2", "200", "?", "-"]


def test_run_ends_with_the_conclusions_of_its_diagnosis(capsys, tmp_path, cores, monkeypatch):
    """The last thing `run` prints is what its diagnosis established (here a
    fixed one: the layout is the test, not the experiments)."""
    from commscope.advise import diagnose
    from commscope.analysis import diagnosis as dg
    from tests.helpers import FAST, SLOW, diagnosis_of, gap_of, rounds_of

    rounds = rounds_of({SLOW: {s: 2.0 for s in (64, 128, 256, 512)},
                      FAST: {s: 1.0 for s in (64, 128, 256, 512)}})
    fixed = diagnosis_of([dg.Outcome(gap_of(), dg.confirm(gap_of(), rounds), unsearched="none")])
    monkeypatch.setattr(diagnose, "diagnose", lambda *a, **k: fixed)
    rc, out, err = run(capsys, "run", "--db", str(tmp_path / "s.db"), "--mpi",
                       sorted(cores)[0], "--bench", "latency", "--sizes", "1:8",
                       "--time-cap", "0.05", "--no-probe")
    assert rc == 0, err
    tail = out[out.index("What the diagnosis established:"):].splitlines()
    assert tail[1].lstrip().startswith("1. MPI_Bcast from 64 B to 512 B"), tail
    assert tail[-1] == ("  (each whole, with what established it: commscope analyze findings "
                        "--details)")
    # each conclusion two lines at most, none wider than the 100 columns of a pipe
    assert all(len(x) <= 100 for x in tail), tail
    assert not tail[3].startswith("     "), tail  # the third line is no conclusion's
