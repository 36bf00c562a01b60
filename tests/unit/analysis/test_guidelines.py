"""Self-consistency guidelines on synthetic series: violations claimed only
beyond the between-run uncertainty, at the sizes the convention asks for."""

from __future__ import annotations

from commscope.analysis import findings, guidelines
from commscope.analysis.series import Config, Point

CFG = Config("mpich", 4, "local", key="mpich")
SIZES = [2 ** k for k in range(2, 17)]


def pt(size, t, rel=0.02, reps=3):
    """A point from `reps` runs whose between-run interval is +-rel."""
    runs = tuple(t * (1 + rel * (i - (reps - 1) / 2) / max(reps - 1, 1)) for i in range(reps))
    return Point(size, t, t * (1 - rel), t * (1 + rel), size, runs if reps > 1 else ())


def line(a, b, rel=0.02, reps=3, sizes=SIZES):
    return {s: pt(s, a + b * s, rel, reps) for s in sizes}


def base(**over):
    """Consistent collectives: every composition is slower than the collective."""
    s = {
        "reduce": line(5, 0.002), "bcast": line(4, 0.002), "allreduce": line(7, 0.003),
        "reduce_scatter": line(6, 0.008), "allgather": line(6, 0.008),
        "scatter": line(4, 0.001), "gather": line(4, 0.001),
    }
    s.update(over)
    return {(CFG, k): v for k, v in s.items()}


def test_consistent_collectives_violate_nothing_and_every_check_is_counted():
    res = guidelines.check(base())
    assert res.violations == []
    # 15 sizes, 4 B to 64 KiB. allreduce<=reduce+bcast: 15; rs+ag at m/4: 13 (m >= 16);
    # bcast<=scatter+ag at m/4: 13; reduce<=allreduce 15; gather<=allgather 15; the three
    # with a part at 4s: 13 each (s <= 16K); monotony: 14 pairs in each of 7 series
    assert res.checked == 15 + 13 + 13 + 15 + 15 + 3 * 13 + 7 * 14
    assert res.one_run == 0


def test_allreduce_slower_than_reduce_plus_bcast_above_a_size_is_reported_there():
    slow = {s: pt(s, 7 + 0.003 * s if s < 4096 else 20 + 0.01 * s) for s in SIZES}
    res = guidelines.check(base(allreduce=slow))
    (v,) = [v for v in res.violations if v.guideline.startswith("allreduce(m) <= reduce(m)")]
    assert [c.size for c in v.checks] == [s for s in SIZES if s >= 4096]
    assert v.checks[0].parts == (("reduce", 4096), ("bcast", 4096))
    assert "MPI_Reduce followed by MPI_Bcast" in v.advice
    assert v.where() == "from 4 KiB to 64 KiB (5 sizes)"


def test_the_block_convention_takes_parts_at_m_over_n():
    # reduce_scatter + allgather very fast at block m/4: allreduce(m) violates
    fast = {s: pt(s, 0.5) for s in SIZES}
    res = guidelines.check(base(reduce_scatter=fast, allgather=fast))
    (v,) = [v for v in res.violations if "reduce_scatter(m/n)" in v.guideline]
    c = v.checks[0]
    assert c.parts == (("reduce_scatter", c.size // 4), ("allgather", c.size // 4))
    assert abs(c.rhs_median - 1.0) < 1e-12
    assert [c.size for c in v.checks] == [s for s in SIZES if s >= 16]


def test_a_difference_inside_the_between_run_interval_is_no_violation():
    # allreduce 8% above reduce+bcast, but runs spread +-10%: intervals overlap
    over = {s: pt(s, 1.08 * (9 + 0.004 * s), rel=0.10) for s in SIZES}
    wide = {s: pt(s, 5 + 0.002 * s, rel=0.10) for s in SIZES}
    res = guidelines.check(base(allreduce=over, reduce=wide))
    assert not [v for v in res.violations if v.lhs == "allreduce"]
    # the same gap with tight intervals is one
    tight = {s: pt(s, 1.08 * (9 + 0.004 * s), rel=0.005) for s in SIZES}
    tight_r = {s: pt(s, 5 + 0.002 * s, rel=0.005) for s in SIZES}
    bcast = {s: pt(s, 4 + 0.002 * s, rel=0.005) for s in SIZES}
    res = guidelines.check(base(allreduce=tight, reduce=tight_r, bcast=bcast))
    assert [v for v in res.violations if v.guideline.startswith("allreduce(m) <= reduce(m)")]


def test_one_run_supports_no_claim_however_narrow_its_own_interval():
    slow = {s: pt(s, 100.0, rel=0.001, reps=1) for s in SIZES}
    res = guidelines.check(base(allreduce=slow))
    assert not [v for v in res.violations if v.lhs == "allreduce"]
    assert res.one_run > 0
    assert "one run only" in guidelines.table(res)


def test_a_size_separated_alone_among_measured_neighbours_is_no_claim():
    odd = {s: pt(s, (7 + 0.003 * s) * (3.0 if s == 1024 else 1.0)) for s in SIZES}
    res = guidelines.check(base(allreduce=odd))
    assert not [v for v in res.violations if v.guideline.startswith("allreduce(m) <= reduce(m)")]
    # two neighbouring sizes are a claim
    odd2 = {s: pt(s, (7 + 0.003 * s) * (3.0 if s in (1024, 2048) else 1.0)) for s in SIZES}
    res = guidelines.check(base(allreduce=odd2))
    (v,) = [v for v in res.violations if v.guideline.startswith("allreduce(m) <= reduce(m)")]
    assert [c.size for c in v.checks] == [1024, 2048]


def test_a_smaller_message_surely_slower_breaks_monotony():
    bump = {s: pt(s, 4 + 0.002 * s + (30 if s == 512 else 0)) for s in SIZES}
    res = guidelines.check(base(bcast=bump))
    (v,) = [v for v in res.violations if v.guideline.startswith("monotony") and v.lhs == "bcast"]
    (c,) = v.checks
    assert c.size == 512 and c.parts[0][1] > 512
    # the widest gap: the larger size with the smallest time above 512
    assert c.parts == (("bcast", 1024),)
    f = [f for f in findings.all_findings(base(bcast=bump)) if f.kind == "guideline"]
    assert any("monotony" in x.text and x.records == (512,) for x in f)


def test_the_table_states_each_violation_with_both_sides_figures():
    slow = {s: pt(s, 7 + 0.003 * s if s < 4096 else 20 + 0.01 * s) for s in SIZES}
    text = guidelines.table(guidelines.check(base(allreduce=slow)))
    assert "allreduce(m) <= reduce(m) + bcast(m): violated from 4 KiB" in text
    assert "reduce(4 KiB) + bcast(4 KiB)" in text
    assert "mpich, 4 processes, local" in text


def test_a_separated_difference_under_five_percent_is_no_violation():
    """Intervals of +-0.5% separate a 4% gap, but a violation needs the
    medians 5% apart (MIN_FACTOR); 6% is one."""
    tight = {"reduce": line(5, 0.002, rel=0.005), "bcast": line(4, 0.002, rel=0.005)}

    def allreduce(k):
        return {s: pt(s, k * (9 + 0.004 * s), rel=0.005) for s in SIZES}

    def violated(res):
        return [v for v in res.violations if v.guideline.startswith("allreduce(m) <= reduce(m)")]

    res = guidelines.check(base(allreduce=allreduce(1.04), **tight))
    assert not violated(res)
    # the intervals do separate at every size: only the factor keeps it out
    lhs, rhs = allreduce(1.04)[1024], (tight["reduce"][1024], tight["bcast"][1024])
    assert lhs.lo > sum(p.hi for p in rhs)
    (v,) = violated(guidelines.check(base(allreduce=allreduce(1.06), **tight)))
    assert [c.size for c in v.checks] == SIZES and 1.05 < v.ratio < 1.07


def test_a_first_size_slower_alone_is_a_likely_warm_up_with_no_advice():
    """A gather of 1 B slower than of 2 B (and of every larger size up to
    64 B): 1 B is the first size swept, which also pays the sweep's warm-up.
    No violation, no 'pad the message'; said as a likely warm-up."""
    sizes = [1, 2, *SIZES]
    slow1 = {s: pt(s, (9.0 if s == 1 else 4 + 0.001 * s)) for s in sizes}
    res = guidelines.check(base(gather=slow1))
    assert not [v for v in res.violations if v.lhs == "gather"]
    (w,) = res.first_size
    assert w.lhs == "gather" and [c.size for c in w.checks] == [1]
    assert "pad the message" not in w.advice and "warm-up" in w.advice
    text = guidelines.table(res)
    assert "gather at 1 B" in text and "likely a first-size (warm-up) effect" in text
    assert "pad the message" not in text
    assert not [f for f in findings.all_findings(base(gather=slow1)) if f.kind == "guideline"]
    # the first two sizes slower together are a run, not the first size alone: a claim
    slow2 = {s: pt(s, (9.0 if s <= 2 else 4 + 0.001 * s)) for s in sizes}
    res = guidelines.check(base(gather=slow2))
    (v,) = [v for v in res.violations if v.lhs == "gather"]
    assert [c.size for c in v.checks] == [1, 2] and "pad the message" in v.advice
    assert res.first_size == []
