"""Every pair of nodes (issue 40): the schedule is a 1-factorisation and the
verdict names the node or link that was made slow, and nothing on a healthy
cluster.  Fixed data."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace

import pytest

from commscope.analysis import pairs
from tests.helpers import ROOT, stored_row


@pytest.mark.parametrize("n", range(2, 18))
def test_the_schedule_measures_every_pair_once_in_rounds_of_disjoint_pairs(n):
    rounds = pairs.schedule(n)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [p for r in rounds for p in r]
    assert sorted(seen) == list(itertools.combinations(range(n), 2))  # each exactly once
    for r in rounds:
        nodes = [x for p in r for x in p]
        assert len(nodes) == len(set(nodes))  # disjoint: measured at once
        assert len(r) == n // 2  # every node busy (one idle where n is odd)


def test_fewer_than_two_nodes_has_no_schedule():
    with pytest.raises(ValueError, match="a pair needs 2"):
        pairs.schedule(1)


def _cluster(n: int, slow: dict[tuple[str, str], float], seed: int = 1,
             spread: float = 0.03) -> list[pairs.Pair]:
    """Pairs of nodes n1..nN at 1.0 (times its own noise), some made slow."""
    rng = random.Random(seed)
    out = []
    for i, j in itertools.combinations(range(1, n + 1), 2):
        a, b = f"n{i}", f"n{j}"
        m = slow.get((a, b), 1.0) * (1 + rng.uniform(-spread, spread))
        out.append(pairs.Pair(a, b, m, m * 0.97, m * 1.03))
    return out


def test_a_node_degraded_tenfold_is_named_and_no_other():
    slow = {p: 10.0 for p in (("n1", "n3"), ("n2", "n3"), ("n3", "n4"))}
    v = pairs.verdict(_cluster(4, slow), "time at 4 MiB")
    assert v.nodes == ("n3",) and v.links == ()
    (line,) = v.lines
    assert line.startswith("n3: every pair with n3 takes ") and "time at 4 MiB" in line, line
    assert 9 < float(line.split("takes ")[1].split("x")[0]) < 11


def test_a_single_slow_link_is_named_as_a_link_not_a_node():
    v = pairs.verdict(_cluster(5, {("n1", "n2"): 3.0}))
    assert v.nodes == () and v.links == ("n1/n2",)
    assert v.lines[0].startswith("n1/n2: this pair takes ")
    assert 2.6 < float(v.lines[0].split("takes ")[1].split("x")[0]) < 3.4


@pytest.mark.parametrize("seed", range(5))
def test_a_healthy_cluster_names_nothing(seed):
    v = pairs.verdict(_cluster(6, {}, seed=seed, spread=0.08))
    assert v.nodes == () and v.links == ()
    assert v.lines[0].startswith("no node stands out"), v.lines


def test_a_ratio_far_under_one_keeps_two_figures():
    # --at-once under Slurm, beside other work: a pair alone at 0.003x the typical
    # pair alone was printed "0.00x [0.00x, 0.00x]"
    assert [pairs._x(r) for r in (0.0033, 0.05, 0.096, 0.38, 9.996, 710.94)] == [
        "0.0033x", "0.05x", "0.10x", "0.38x", "10.0x", "710.9x"]


def test_two_nodes_are_one_pair_with_nothing_to_set_it_against():
    v = pairs.verdict(_cluster(2, {("n1", "n2"): 10.0}))
    assert v.nodes == () and "needs 3 nodes" in v.lines[0]


# -- from stored records: commscope matrix's runs (docs/clusters/, bench/matrix.py) ----
STORES = ROOT / "docs" / "clusters"


def test_the_stored_matrix_names_the_degraded_node_and_the_report_draws_it(tmp_path):
    """Four emulated nodes on Gigabit, bm7607-n2 on 100 Mbit/s (a run of
    bench/matrix.py): each pair is read from its records, n2 is named in the
    bandwidth figure and nothing in latency; the report has the section and
    a heat map for each."""
    from commscope.report import matrix as rmatrix
    from commscope.store.db import Store

    rows = Store(STORES / "matrix-degraded.db", create=False).result_rows()
    times = pairs.per_pair(rows, "bw", 1 << 20)
    assert len(times) == 12 and all(len(x) == 3 for x in times.values())  # both ways
    # the same records twice, as a second sweep: each repetition of each sweep a value
    # (keyed by repetition alone, the second sweep's took the first's places)
    again = [{**dict(r), "sweep_id": int(r["sweep_id"]) + 100} for r in rows]
    twice = pairs.per_pair([*rows, *again], "bw", 1 << 20)
    assert all(len(x) == 6 for x in twice.values()), twice
    got = {what: v for _, what, _, _, v in rmatrix.matrices(rows)}
    assert got["time of one 1 MiB message"].nodes == ("bm7607-n2",)
    assert "bm7607-n2: slow both when it sends and when it receives" in got[
        "time of one 1 MiB message"].lines
    assert got["latency at 8 B"].nodes == () and got["latency at 8 B"].links == ()
    healthy = Store(STORES / "matrix-healthy.db", create=False).result_rows()
    assert all(not v.nodes and not v.links for *_, v in rmatrix.matrices(healthy))
    (tmp_path / "fig").mkdir()
    entries = rmatrix.section(tmp_path, rows)
    assert [e["title"] for e in entries] == ["emu:bm7607: time of one 1 MiB message",
                                             "emu:bm7607: latency at 8 B"]
    assert entries[0]["lines"][0].startswith("bm7607-n2: every pair with bm7607-n2 takes 10.0x")
    for e in entries:
        assert (tmp_path / "fig" / f"{e['fig']}.svg").read_text().startswith("<?xml")


def test_a_record_names_its_pair_or_none():
    import json as _json

    row = {"config": _json.dumps({"extra": {"pair": "a-n0/a-n3"}})}
    assert pairs.pair_of(row) == ("a-n0", "a-n3")
    for bad in ({"config": "{}"}, {"config": "not json"}, {},
                {"config": _json.dumps({"extra": {"pair": "a-n0"}})}):
        assert pairs.pair_of(bad) is None


def test_a_node_in_no_measured_pair_is_named_as_such():
    """Every pair with n3 failed: the verdict says so, never 'no node stands
    out' over the pairs that remain."""
    ok = [pairs.Pair(a, b, 10.0, 9.8, 10.2) for a, b in (("n0", "n1"), ("n0", "n2"),
                                                        ("n1", "n2"))]
    v = pairs.verdict(ok, "time", ["n0", "n1", "n2", "n3"])
    assert v.silent == ("n3",) and v.lines[0].startswith("n3: no pair with n3 was measured")
    assert not any(x.startswith("no node stands out") for x in v.lines)
    assert pairs.verdict(ok, "time", ["n0", "n1", "n2"]).silent == ()


def test_short_names_stay_apart():
    assert pairs.short_names(["emu-n0", "emu-n1", "emu-n10"]) == ["n0", "n1", "n10"]
    assert pairs.short_names(["rack1-n0", "rack2-n0", "rack3-n0"]) == [
        "rack1-n0", "rack2-n0", "rack3-n0"]  # not three columns all headed n0
    assert pairs.short_names(["node1.lan", "node2.lan"]) == ["node1.lan", "node2.lan"]
    assert pairs.short_names(["a.x.org", "a.y.org"]) == ["x.org", "y.org"]


def test_a_node_slow_one_way_is_named_with_its_direction():
    """bw from n2 is ten times slower, to n2 it is not: n2 is named, and the
    direction said (each two nodes are judged by their slower direction)."""
    names = ["n0", "n1", "n2", "n3"]
    found = [pairs.Pair(a, b, 100.0 if a == "n2" else 10.0, 98.0 if a == "n2" else 9.8,
                        102.0 if a == "n2" else 10.2)
             for a in names for b in names if a != b]
    v = pairs.verdict(pairs.unordered(found), "time", names)
    assert v.nodes == ("n2",)
    assert pairs.directions(found, v) == ["n2: slow when it sends, not when it receives"]
    text = pairs.matrix_text(names, v.typical, found).splitlines()
    assert text[3].split()[1:] == ["10.0x", "10.0x", "-", "10.0x"]  # row n2: it sends
    assert text[1].split()[1:] == ["-", "1.00x", "1.00x", "1.00x"]  # row n0: to n2 as well


def test_a_pair_slow_only_beside_its_round_is_told_from_a_slow_link():
    """--at-once: each slow pair alone is set against the reference pairs
    alone, not against the typical pair at once (which carries what the
    pairs shared: here every pair at once took 1.4x its time alone).
    n1/n2 no slower alone than the references is contention; n3/n4 slow
    alone too is the link; one not measured again is said so; one surely
    slow neither way is said to be neither."""
    slow = {("n1", "n2"): 3.0, ("n3", "n4"): 4.0, ("n1", "n5"): 2.5, ("n2", "n6"): 2.0}
    v = pairs.verdict(_cluster(6, slow), "time at 4 MiB")
    assert pairs.slow_pairs(v) == [("n1", "n2"), ("n1", "n5"), ("n2", "n6"), ("n3", "n4")]
    refs = pairs.references(v)
    assert len(refs) == 2 and not set(refs) & set(pairs.slow_pairs(v))
    t = v.typical / 1.4  # a pair alone, when nothing is shared
    again = [pairs.Pair(*refs[0], 1.01 * t, 0.99 * t, 1.03 * t),
             pairs.Pair(*refs[1], 0.99 * t, 0.97 * t, 1.01 * t),
             pairs.Pair("n2", "n1", 1.02 * t, 0.99 * t, 1.05 * t),  # bw the other way too
             pairs.Pair("n1", "n2", 0.98 * t, 0.95 * t, 1.01 * t),
             pairs.Pair("n4", "n3", 1.45 * t, 1.4 * t, 1.5 * t),  # 1.45x alone: the link
             pairs.Pair("n2", "n6", 1.3 * t, 1.0 * t, 1.6 * t)]
    head, *lines = pairs.alone(v, again, refs, "time at 4 MiB")
    assert head.startswith("alone, the typical pair (") and len(lines) == 4, lines
    said = dict(x.split(" alone: ", 1) for x in lines)
    assert said["n1/n2"].startswith("1.02x [0.99x, 1.05x] the typical time at 4 MiB alone")
    assert "slow only beside the other pairs of its round" in said["n1/n2"]
    # against the typical pair at once it would have read 1.04x: "not a slow link"
    assert said["n3/n4"].startswith("1.45x") and said["n3/n4"].endswith(
        "slow alone too, the link or its nodes")
    assert said["n1/n5"].startswith("not measured")
    assert said["n2/n6"].endswith("alone neither surely slow nor surely not")
    none = pairs.alone(v, again[2:], refs, "time at 4 MiB")  # no reference came back
    assert len(none) == 4 and all("no pair fine at once was measured alone" in x for x in none)


def test_a_stall_at_once_is_measured_alone_and_judged_by_the_stalls_cut():
    """--at-once --stall-time: the pairs whose longest sample was slow at once
    are judged alone by the stall's cut (10x the references alone, and 10
    ms or more), not the 1.2x of a median: a pair 3x the references alone,
    1.2 ms, is no stall; one 95x, 38 ms, is; one whose interval holds 10 ms is
    neither surely."""
    us = 960.0  # a healthy pair's longest sample over 0.3 s (docs/clusters.md)
    found = [pairs.Pair(p.a, p.b, p.median * us, p.lo * us, p.hi * us)
             for p in _cluster(4, {("n1", "n3"): 40.0, ("n2", "n3"): 40.0,
                                   ("n3", "n4"): 40.0, ("n1", "n2"): 1.0})]
    v = pairs.verdict(found, "longest stall at 8 B", (), "node", pairs.STALL, pairs.STALL_US)
    assert v.nodes == ("n3",)
    refs = pairs.references(v)
    t = 400.0  # alone, a typical pair's longest sample
    again = [pairs.Pair(*refs[0], t, 0.9 * t, 1.1 * t), pairs.Pair(*refs[1], t, 0.9 * t, 1.1 * t),
             pairs.Pair("n1", "n3", 95 * t, 90 * t, 100 * t),  # 38 ms: a stop
             pairs.Pair("n2", "n3", 3 * t, 2.9 * t, 3.1 * t),  # 1.2 ms: 3x, no stall
             pairs.Pair("n3", "n4", 25 * t, 20 * t, 30 * t)]  # 8-12 ms: 20x-30x
    _, *lines = pairs.alone(v, again, refs, "longest stall at 8 B", pairs.STALL,
                            pairs.STALL_US)
    said = dict(x.split(" alone: ", 1) for x in lines)
    assert said["n1/n3"].endswith("slow alone too, the link or its nodes"), said
    assert "slow only beside the other pairs" in said["n2/n3"], said
    assert said["n3/n4"].endswith("alone neither surely slow nor surely not"), said
    # by a median's cut the 3x pair would have been slow alone too
    plain = dict(x.split(" alone: ", 1) for x in pairs.alone(v, again, refs, "x")[1:])
    assert plain["n2/n3"].endswith("slow alone too, the link or its nodes"), plain


def test_a_pair_under_the_stalls_cut_at_once_and_alone_is_no_contention():
    """A pair the matrix's 1.2x cut found slow at once (1.3x the typical
    longest sample, 1.7 ms), under the stall's cut there and alone: there
    was no stall at once to set down to what its round shared, and none is
    said; a pair 40x at once and 3x alone is still what its round shared."""
    us = 960.0
    found = [pairs.Pair(p.a, p.b, p.median * us, p.lo * us, p.hi * us)
             for p in _cluster(5, {("n1", "n3"): 40.0, ("n2", "n3"): 40.0, ("n3", "n4"): 40.0,
                                   ("n3", "n5"): 40.0, ("n2", "n4"): 1.8})]
    v = pairs.verdict(found, "longest stall at 8 B", (), "node", pairs.STALL, pairs.STALL_US)
    assert ("n2", "n4") in pairs.slow_pairs(v) and v.nodes == ("n3",)
    refs = pairs.references(v)
    t = 400.0
    again = [pairs.Pair(*r, t, 0.9 * t, 1.1 * t) for r in refs] + [
        pairs.Pair("n2", "n4", t, 0.9 * t, 1.1 * t),
        pairs.Pair("n2", "n3", 3 * t, 2.9 * t, 3.1 * t)]
    _, *lines = pairs.alone(v, again, refs, "longest stall at 8 B", pairs.STALL,
                            pairs.STALL_US)
    said = dict(x.split(" alone: ", 1) for x in lines if " alone: " in x)
    assert "share something" not in said["n2/n4"], said
    assert said["n2/n4"].endswith("under the cut alone, and not surely over it beside its "
                                  "round's pairs either (10.0x and 10 ms): nothing to set down "
                                  "to what the round shared"), said
    assert "slow only beside the other pairs" in said["n2/n3"], said


def test_the_cpus_of_one_machine_are_named_as_cpus():
    """--within-node: the verdict speaks of CPUs and this machine."""
    v = pairs.verdict(_cluster(4, {p: 3.0 for p in (("n1", "n3"), ("n2", "n3"), ("n3", "n4"))}),
                      "latency at 8 B", word="CPU")
    assert v.nodes == ("n3",) and "this machine's typical latency at 8 B" in v.lines[0]
    assert pairs.verdict(_cluster(4, {}), word="CPU").lines[0].startswith("no CPU stands out")
    two = pairs.verdict(_cluster(2, {}), word="CPU").lines[0]
    assert two.startswith("2 CPUs, one pair (n1-n2 ") and "a slow CPU needs 3 CPUs" in two


def test_two_sockets_are_judged_apart_and_a_slow_cpu_within_one_is_named():
    """Two sockets of four CPUs: a pair across them takes 1.8x one within.
    Judged together, the typical pair is one across (each CPU's median
    pair) and nothing is named; judged apart, the slow CPU is."""
    sockets = {f"cpu{i}": i // 4 for i in range(8)}
    found = []
    for i, j in itertools.combinations(range(8), 2):
        m = (1.0 if i // 4 == j // 4 else 1.8) * (3.0 if 2 in (i, j) and j // 4 == i // 4 else 1)
        found.append(pairs.Pair(f"cpu{i}", f"cpu{j}", m, m * 0.98, m * 1.02))
    together = pairs.verdict(found, word="CPU")
    assert together.nodes == () and together.typical == 1.8  # what judging apart avoids
    (within, keep_in), (across, keep_x) = pairs.classes(sockets)
    assert (within, across) == ("within a socket", "across sockets")
    v = pairs.verdict(pairs.unordered([p for p in found if keep_in(p)]), word="CPU")
    assert v.nodes == ("cpu2",) and v.typical == 1.0, v.lines
    x = pairs.verdict(pairs.unordered([p for p in found if keep_x(p)]), word="CPU")
    assert x.nodes == () and x.typical == 1.8 and x.lines[0].startswith("no CPU stands out")
    assert pairs.classes({"cpu0": 0, "cpu1": 0}) == [("", None)]


def test_a_pair_whose_bytes_went_another_way_is_named_with_it():
    """Every pair's runs read 'network between nodes' of the node links but
    n0/n1's, whose links carried too little for the payload (its bytes went
    another way: shared memory where the others used the network, say):
    named with what its check read, in the verdict the report draws; with
    every pair alike, or no check stored, nothing is said."""
    from commscope.report import matrix as rmatrix
    from commscope.store.db import Store

    rows = [dict(r) for r in Store(STORES / "matrix-degraded.db", create=False).result_rows()]
    assert rows and all(pairs._carried(r) == "network between nodes" for r in rows)
    assert pairs.transports(rows) == []
    odd = json.dumps({"link_bytes": {}, "payload_bytes": 6291456, "ok": False,
                      "verdict": "too little on the links for the payload"})
    for r in rows:
        if pairs.pair_of(r) in (("bm7607-n0", "bm7607-n1"), ("bm7607-n1", "bm7607-n0")):
            r["transport_check"] = odd
    said = pairs.transports(rows)
    assert said == ["bm7607-n0/bm7607-n1: its links read 'too little on the links for the "
                    "payload' where the other pairs' read 'network between nodes': a transport "
                    "of its own"], said
    lines = [line for *_, v in rmatrix.matrices(rows) for line in v.lines]
    assert lines.count(said[0]) == 1  # once, under the first figure
    assert pairs.transports([{**r, "transport_check": None} for r in rows]) == []


def test_two_sweeps_of_one_cluster_are_two_matrices_in_the_report():
    """Two `matrix` commands under one cluster name (two Slurm allocations
    are both "slurm"; a node mended between two sweeps): each sweep its own
    verdict, titled with its sweep.  Merged, the healthy sweep's pairs stood
    beside the degraded one's in one matrix."""
    from commscope.report import matrix as rmatrix
    from commscope.store.db import Store

    bad = [dict(r) for r in Store(STORES / "matrix-degraded.db", create=False).result_rows()]
    good = [dict(r) for r in Store(STORES / "matrix-healthy.db", create=False).result_rows()]
    cl = str(bad[0]["cluster"])
    good = [{**r, "cluster": cl, "sweep_id": int(r["sweep_id"]) + 100} for r in good]
    got = {(t, what): v for t, what, _, _, v in rmatrix.matrices([*bad, *good])}
    s_bad, s_good = int(bad[0]["sweep_id"]), int(good[0]["sweep_id"])
    one = "time of one 1 MiB message"
    assert got[(f"{cl} (sweep {s_bad})", one)].nodes == ("bm7607-n2",)
    mended = got[(f"{cl} (sweep {s_good})", one)]
    assert not mended.nodes and not mended.links
    assert len(got) == 4  # two figures each
    # one sweep alone: the cluster's name, as before
    assert {t for t, *_ in rmatrix.matrices(bad)} == {cl}


def test_a_matrix_at_once_is_its_own_and_its_pairs_alone_no_matrix_in_the_report():
    """bench/matrix.py's run with --at-once (n2 on 100 Mbit/s): the pairs of
    each round at once, then n2's three pairs alone, one cluster; the report
    judges the matrix at once on its own (mixed, the alone pairs would stand
    in for the same pairs at once) and draws no matrix of the pairs alone
    (three pairs round one node: judged as a matrix, "no node stands out")."""
    from commscope.report import matrix as rmatrix
    from commscope.store.db import Store

    rows = [dict(r) for r in Store(STORES / "matrix-degraded-at-once.db",
                                   create=False).result_rows()]
    got = {(cl, what): v for cl, what, _, _, v in rmatrix.matrices(rows)}
    at_once = got[("emu:bm388, each round's pairs at once", "time of one 1 MiB message")]
    assert at_once.nodes == ("bm388-n2",) and len(at_once.ratios) == 6
    # n2's pairs measured alone after it (stored before they were marked as such, so
    # marked here as the command marks them now): a check said by the command, no matrix
    for r in rows:
        if "pairs" not in r["config"]:
            assert pairs.mode(r) == ""
            r["config"] = r["config"].replace('"pair":', '"pairs": "alone after at once", '
                                              '"pair":')
            assert pairs.mode(r) == pairs.ALONE
        else:
            assert pairs.mode(r) == pairs.AT_ONCE
    assert [cl for cl, *_ in rmatrix.matrices(rows)] == [
        "emu:bm388, each round's pairs at once"] * 2


def test_the_report_draws_the_stalls_matrix_where_latency_was_sampled_long_enough():
    """A matrix taken with --stall-time 0.3 (n2 held to a quarter of one CPU,
    one pair at a time, 2026-11-28): the report judges a third figure, the
    longest stall, and names n2 by it; latency's median names nothing.  A
    matrix of latency sampled a few milliseconds gets no stall matrix."""
    from commscope.report import matrix as rmatrix
    from commscope.store.db import Store

    rows = [dict(r) for r in Store(STORES / "matrix-stall.db", create=False).result_rows()]
    got = {what: v for _, what, _, _, v in rmatrix.matrices(rows)}
    assert set(got) == {"time of one 1 MiB message", "latency at 8 B", "longest stall at 8 B"}
    assert got["longest stall at 8 B"].nodes == ("stb-n2",), got["longest stall at 8 B"].lines
    assert got["latency at 8 B"].nodes == ()
    # a failed record among them (no wall time) is no reason to drop the stall matrix
    lat = next(r for r in rows if r["bench"] == "latency")
    failed = {**lat, "id": -1, "valid": 0, "wall_s": None, "median_us": None}
    assert "longest stall at 8 B" in {what for _, what, *_ in rmatrix.matrices([*rows, failed])}
    short = [dict(r) for r in Store(STORES / "matrix-healthy.db", create=False).result_rows()]
    assert [what for _, what, *_ in rmatrix.matrices(short)] == [
        "time of one 1 MiB message", "latency at 8 B"]


def test_a_node_that_stalls_is_named_by_its_longest_sample_and_noise_is_not():
    """--stall-time: a node held to a quarter of one CPU stops for tens of
    milliseconds (37.7 ms seen) while its median latency is the others';
    healthy pairs' longest samples over 0.3 s spread 230-1,360 us (6x) on this VM: a
    stall must be 10x the typical pair's and 10 ms or more, surely."""
    def rows(longest: dict[tuple[int, int], float]) -> list[dict]:
        out = []
        for (i, j), us in longest.items():
            for rep in (1, 2, 3):
                out.append(stored_row(
                    bench="latency", size_bytes=8, valid=True, repetition=rep, median_us=13.0,
                    max_us=us * (1 + rep / 100), batch=1,
                    config=json.dumps({"extra": {"pair": f"n{i}/n{j}"}})))
        return out

    healthy = {(i, j): 40.0 * (1 + 9 * ((i * 7 + j) % 4 == 0))
               for i, j in itertools.combinations(range(4), 2)}
    found, v = pairs.judge(rows(healthy), "latency", 8, "longest stall", figure="stall")
    assert v.nodes == () and v.lines[0].startswith("no node stands out"), v.lines
    assert "10 ms or more" in v.lines[0]
    held = {k: (37_700.0 if 2 in k else us) for k, us in healthy.items()}
    found, v = pairs.judge(rows(held), "latency", 8, "longest stall", figure="stall")
    assert v.nodes == ("n2",), v.lines
    assert not any("when it sends" in x for x in v.lines), v.lines  # a round trip: no way
    # the medians alike: the median's verdict names nothing
    _, med = pairs.judge(rows(held), "latency", 8, "latency")
    assert med.nodes == ()
    # tenfold but short (a healthy host's hiccups of a few ms): not a stall
    short = {k: (4_000.0 if 2 in k else 40.0) for k in healthy}
    _, v = pairs.judge(rows(short), "latency", 8, "longest stall", figure="stall")
    assert v.nodes == (), v.lines


def test_a_node_slow_with_every_other_by_its_medians_is_named_not_split_into_links():
    """A busy run (two tests at a time beside a load): n2 on 100 Mbit/s, two
    rounds; every pair with n2 3.6-4.0x the typical pair, but only two of
    them surely (the others' intervals reached under 1.2x), and the verdict
    named two links 'while n1 and n2 are not slow with the others'.  Every
    pair with a node on one side of the cut, one of them surely, names the
    node; a link alone needs both its nodes surely fine with another."""
    # n2's pairs' medians are the busy run's (typical 2.598e4 us; the others read 0.82-1.00x,
    # here 0.9x), and so are the two links'
    # intervals; the run printed no interval for n2's other four pairs, only that they
    # were not surely slow: their lower ends here are any under 1.2x
    t = 26000.0
    wide = {("n1", "n2"): (4.04, 2.77, 5.87), ("n2", "n3"): (3.85, 1.38, 10.6),
            ("n0", "n2"): (3.68, 1.1, 9.0), ("n2", "n0"): (3.79, 1.05, 8.0),
            ("n2", "n1"): (3.73, 1.15, 7.0), ("n3", "n2"): (3.62, 1.0, 9.5)}
    found = []
    for a in ("n0", "n1", "n2", "n3"):
        for b in ("n0", "n1", "n2", "n3"):
            if a != b:
                m, lo, hi = wide.get((a, b), (0.9, 0.85, 0.95))
                found.append(pairs.Pair(a, b, m * t, lo * t, hi * t))
    v = pairs.verdict(found, "time of one 1 MiB message")
    assert v.nodes == ("n2",) and v.links == (), v.lines
    assert v.lines[0].startswith("n2: every pair with n2 takes"), v.lines
    # one pair over the cut by its median alone names nothing: it needs one surely
    half = [replace(p, lo=p.median * 0.2) for p in found]
    v = pairs.verdict(half, "time of one 1 MiB message")
    assert v.nodes == () and v.links == (), v.lines
