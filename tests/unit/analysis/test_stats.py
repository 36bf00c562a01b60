"""Statistics and the stopping rule, on fixed data, in Python and in C."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from commscope.analysis.stats import median_ci_ranks, quantile_sorted, summarize
from tests.conftest import ROOT


def test_quantiles_on_fixed_data():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert quantile_sorted(x, 0.5) == 3.0
    assert quantile_sorted(x, 0.0) == 1.0
    assert quantile_sorted(x, 1.0) == 5.0
    assert quantile_sorted(x, 0.05) == pytest.approx(1.2)
    assert quantile_sorted([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def test_median_ci_ranks_known_values():
    # n=20: n/2 -+ 1.96*sqrt(20)/2 = 10 -+ 4.38 -> 1-based ranks 5 and 16
    assert median_ci_ranks(20) == (4, 15)
    # n=100: 50 -+ 9.8 -> ranks 40 and 61 (1-based)
    assert median_ci_ranks(100) == (39, 60)
    # tiny samples: the CI is the whole range
    assert median_ci_ranks(3) == (0, 2)


def test_summary_fields():
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.n, s.median, s.mean, s.min, s.max) == (5, 3.0, 3.0, 1.0, 5.0)
    assert s.ci_lo == 1.0 and s.ci_hi == 5.0


def test_stopping_rule():
    tight = [100.0 + 0.01 * i for i in range(50)]
    assert summarize(tight).converged(0.02)
    wide = [100.0 * (1 + i % 2) for i in range(50)]  # bimodal: CI spans both modes
    assert not summarize(wide).converged(0.02)
    assert not summarize([1.0, 1.0]).converged(0.5)  # never with fewer than 3


def test_ci_coverage_is_about_95_percent():
    rng = random.Random(7)
    hits, trials = 0, 400
    for _ in range(trials):
        s = summarize([rng.expovariate(1.0) for _ in range(60)])
        hits += s.ci_lo <= 0.6931471805599453 <= s.ci_hi  # true median of Exp(1)
    assert 0.90 <= hits / trials <= 0.99


@pytest.fixture(scope="module")
def c_driver(tmp_path_factory):
    mpicc = shutil.which("mpicc.openmpi") or shutil.which("mpicc.mpich")
    if not mpicc:
        pytest.skip("no mpicc to compile the C statistics with")
    out = tmp_path_factory.mktemp("c") / "stats_driver"
    core = ROOT / "core" / "harness"
    subprocess.run([mpicc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{core}",
                    f"-I{ROOT / 'channel'}",
                    str(ROOT / "tests" / "c" / "stats_driver.c"), str(core / "stats.c"),
                    "-o", str(out), "-lm"], check=True)
    return out


@pytest.mark.parametrize("seed,n", [(1, 20), (2, 57), (3, 400), (4, 5)])
def test_c_and_python_statistics_agree(c_driver, seed, n):
    rng = random.Random(seed)
    x = [rng.lognormvariate(0, 0.3) for _ in range(n)]
    p = subprocess.run([str(c_driver), "0.05"], input="\n".join(repr(v) for v in x),
                       capture_output=True, text=True, check=True)
    c = json.loads(p.stdout)
    s = summarize(x)
    assert (c["lo"], c["hi"]) == median_ci_ranks(n)
    for k in ("median", "mean", "min", "max", "p5", "p95", "ci_lo", "ci_hi"):
        assert c[k] == pytest.approx(getattr(s, k), rel=1e-12), k
    assert bool(c["converged"]) == s.converged(0.05)


def test_the_window_comes_from_a_message_measured_at_its_own_size(c_driver):
    """cs_fit_window: one message of this size, measured, times the window
    against the time one sample may take (--time-cap / 5); narrowed, the
    widest power of two that fits, so that libraries of nearly one speed
    narrow alike."""
    cases = [
        (64, 100.0, 50000.0, 64),     # 1 MiB through shared memory: the whole window
        (64, 0.05, 50000.0, 64),      # 8 B: nothing to narrow, whatever came before
        (64, 1000.0, 50000.0, 32),    # a slow message narrows to what fits: 50, so 32
        (64, 1100.0, 50000.0, 32),    # a library 10% slower narrows alike (45: 32)
        (64, 780.0, 50000.0, 64),     # 64.1 fit: the whole window
        (48, 1100.0, 50000.0, 32),    # 45 fit in a window of 48: 32
        (64, 340000.0, 50000.0, 1),   # 4 MiB over 100 Mbit/s: one message a sample
        (1, 340000.0, 50000.0, 1),    # a window of one stays one
    ]
    p = subprocess.run([str(c_driver), "window"], capture_output=True, text=True, check=True,
                       input="\n".join(f"{w} {op} {b}" for w, op, b, _ in cases))
    assert [int(x) for x in p.stdout.split()] == [want for *_, want in cases]


# The sampling stop rule (cs_stop_rule): at a check point, after n samples
# and elapsed seconds, stop and why (the record's "stop"), or go on for
# `step` more samples.  Options as the core's defaults but for the ones a
# case names; CIs as (median, half-width): TIGHT is 1%, WIDE 30%.
STOP_OPTS = {"min_samples": 20, "max_samples": 1000, "target_ci": 0.05, "time_cap_s": 0.25,
             "min_time_s": 0.002}
TIGHT, WIDE, NONE = (10.0, 0.1), (10.0, 3.0), None  # NONE: no statistics computed
GO_ON = "-"


def _stop_case(case_id, n, elapsed, ci, want, step=None, **opts):
    return pytest.param(n, elapsed, ci, {**STOP_OPTS, **opts}, want, step, id=case_id)


STOP_CASES = [
    # converged: enough samples, enough time, the CI within the target
    _stop_case("ci", 100, 0.1, TIGHT, "ci", step=25),
    _stop_case("ci-at-the-target", 100, 0.1, (10.0, 0.5), "ci"),
    _stop_case("ci-just-wider", 100, 0.1, (10.0, 0.51), GO_ON),
    _stop_case("ci-needs-min-samples", 19, 0.1, TIGHT, GO_ON),
    _stop_case("ci-at-min-samples", 20, 0.1, TIGHT, "ci"),
    _stop_case("ci-needs-min-time", 100, 0.0012, TIGHT, GO_ON, step=67),  # 66.7 to --min-time
    _stop_case("ci-at-min-time", 100, 0.002, TIGHT, "ci"),
    _stop_case("ci-needs-statistics", 100, 0.1, NONE, GO_ON, step=25),
    _stop_case("ci-needs-a-positive-median", 100, 0.1, (0.0, 0.0), GO_ON),
    # the time cap: at or past it, but never with fewer than 5 samples
    _stop_case("time-cap", 5, 0.25, WIDE, "time_cap"),
    _stop_case("time-cap-past", 300, 1.0, WIDE, "time_cap"),
    _stop_case("time-cap-not-yet", 100, 0.2499, WIDE, GO_ON, step=1),
    _stop_case("time-cap-leaves-5-samples", 4, 0.3, WIDE, GO_ON, step=1),
    _stop_case("time-cap-leaves-5-below-min-samples", 3, 1.0, WIDE, GO_ON, step=1,
               min_samples=3),
    _stop_case("time-cap-at-5-below-min-samples", 5, 1.0, WIDE, "time_cap", min_samples=3),
    # max samples
    _stop_case("max-samples", 1000, 0.1, WIDE, "max_samples", step=1),
    _stop_case("max-samples-at-4", 4, 0.3, WIDE, "max_samples", min_samples=3, max_samples=4),
    # which reason wins where several hold
    _stop_case("ci-before-time-cap-and-max", 1000, 1.0, TIGHT, "ci"),
    _stop_case("time-cap-before-max", 1000, 1.0, WIDE, "time_cap"),
    # the next check: 25% more samples, at least 5; none before --min-time;
    # sooner near the time cap; never past --max-samples
    _stop_case("step-a-quarter", 400, 0.01, WIDE, GO_ON, step=100),
    _stop_case("step-at-least-5", 8, 0.01, WIDE, GO_ON, step=5),
    _stop_case("step-sooner-near-the-cap", 100, 0.21, WIDE, GO_ON, step=20),  # 19.05 left
    _stop_case("step-up-to-max-samples", 990, 0.01, WIDE, GO_ON, step=10),
]


@pytest.mark.parametrize("n,elapsed,ci,opts,want,step", STOP_CASES)
def test_the_sampling_stop_rule(c_driver, n, elapsed, ci, opts, want, step):
    median, half = ci or (0.0, 0.0)
    line = (f"{n} {elapsed!r} {int(ci is not None)} {median!r} {median - half!r} "
            f"{median + half!r} {opts['min_samples']} {opts['max_samples']} "
            f"{opts['target_ci']!r} {opts['time_cap_s']!r} {opts['min_time_s']!r}")
    p = subprocess.run([str(c_driver), "stop"], input=line, capture_output=True, text=True,
                       check=True)
    got, got_step, _ = p.stdout.split()
    assert got == want
    assert int(got_step) >= 1
    if step is not None:
        assert int(got_step) == step


def test_the_first_check_comes_after_min_samples_or_5(c_driver):
    lines = [f"1 0.1 0 0 0 0 {m} 1000 0.05 0.25 0.002" for m in (3, 4, 5, 20)]
    p = subprocess.run([str(c_driver), "stop"], input="\n".join(lines), capture_output=True,
                       text=True, check=True)
    assert [int(row.split()[2]) for row in p.stdout.splitlines()] == [3, 4, 5, 5]
