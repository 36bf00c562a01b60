"""Statistics and the stopping rule, on fixed data, in Python and in C."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from commscope.analysis.stats import median_ci_ranks, quantile_sorted, summarize

from .conftest import ROOT


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
