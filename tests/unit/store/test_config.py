"""Identity by key (issue 22): above the aggregation, records are told
apart by their configuration's canonical key; the label only names them.
Two keys that one label would show are named apart by what differs, or,
where nothing stored tells them apart, are an error naming both keys;
never one silently overwriting the other.  Fixed data, no MPI."""

from __future__ import annotations

import json

import pytest

from commscope.analysis.findings import faster_implementation
from commscope.analysis.series import Config, Point, collect
from commscope.errors import CommscopeError
from commscope.report.tables import tables
from commscope.store.config import Configuration
from tests.helpers import stored_point

BUILD_A = "2667a80ce68d57d8ab83a36f46dc36ddb8a71c83bd75cfb41f28f121796264c9"
BUILD_B = "9f00d2c1" + BUILD_A[8:]  # another openmpi: another wrapper, same name
PARAMS = {"dtype": "int", "loggp_delay_us": 20.0, "loggp_n": 16, "param": "", "root": 0,
          "rotate_root": False, "window": 64}


def cfg(mpi="openmpi", identity=BUILD_A, **params) -> Configuration:
    return Configuration(mpi, mpi_identity=identity,
                         params=tuple(sorted({**PARAMS, **params}.items())), ppn=2)


_ids = iter(range(1, 10_000))


def rec(c: Configuration | None, bench="latency", size=8, median=1.0, *, key=None,
        mpi_name="openmpi") -> dict[str, object]:
    """One aggregated record as store.result_rows + analysis.repeats give it."""
    i = next(_ids)
    return stored_point({
        "id": i, "run_id": i, "bench": bench, "np": 2, "size_bytes": size, "valid": 1,
        "median_us": median, "ci_lo_us": median * 0.99, "ci_hi_us": median * 1.01,
        "ci_us": median * 0.01, "mb_per_s": None, "rate_per_s": None, "flagged": 0,
        "oversubscribed": 0, "cluster": "local", "nodes": 1, "mpi_name": mpi_name,
        "config_key": key if key is not None else (c.key if c else None),
        "config": json.dumps(c.to_json()) if c else None, "n_reps": 3})


def series_of(rows):
    return {(k.mpi, bench): (k, s) for (k, bench), s in collect(rows).items()}


# -- collect ------------------------------------------------------------------
def test_two_builds_of_one_name_are_two_series_named_by_their_build():
    a, b = cfg(identity=BUILD_A), cfg(identity=BUILD_B)
    rows = [rec(a, median=1.0), rec(a, size=64, median=2.0),
            rec(b, median=5.0), rec(b, size=64, median=6.0)]
    got = series_of(rows)
    assert set(got) == {("openmpi build 2667a80c", "latency"),
                        ("openmpi build 9f00d2c1", "latency")}, got
    ka, sa = got[("openmpi build 2667a80c", "latency")]
    kb, sb = got[("openmpi build 9f00d2c1", "latency")]
    assert (ka.key, kb.key) == (a.key, b.key)
    assert {s: p.median for s, p in sa.items()} == {8: 1.0, 64: 2.0}
    assert {s: p.median for s, p in sb.items()} == {8: 5.0, 64: 6.0}


def test_a_parameter_that_does_not_apply_is_named_wherever_the_configuration_is_shown():
    # two sweeps, --window 128 and the default: latency (which the window does
    # not change) would show both as "openmpi"
    w64, w128 = cfg(window=64), cfg(window=128)
    mpich = cfg("mpich", identity="d476af34" * 8)
    rows = [rec(w64, "latency", median=1.0), rec(w128, "latency", median=1.1),
            rec(w64, "bw", median=3.0), rec(w128, "bw", median=2.0),
            rec(w64, "allreduce", median=4.0), rec(w128, "allreduce", median=4.4),
            rec(mpich, "latency", median=2.0, mpi_name="mpich")]
    got = series_of(rows)
    assert set(got) == {(f"openmpi window={w}", b) for w in (64, 128)
                        for b in ("latency", "bw", "allreduce")} | {("mpich", "latency")}
    # one name per configuration whatever the benchmark, its collectives'
    # point-to-point reference included
    for w, c in ((64, w64), (128, w128)):
        for b in ("latency", "bw", "allreduce"):
            k, _ = got[(f"openmpi window={w}", b)]
            assert k.key == c.key and k.base == f"openmpi window={w}"


def test_the_same_key_from_two_sweeps_is_one_series():
    c = cfg()
    rows = [rec(c, size=8, median=1.0), rec(c, size=64, median=2.0),  # one sweep
            rec(c, size=512, median=3.0)]  # an older one, the same configuration
    assert cfg().key == c.key  # the key is of the configuration, not of the run
    got = collect(rows)
    assert len(got) == 1
    ((k, bench), s), = got.items()
    assert (k.mpi, bench, sorted(s)) == ("openmpi", "latency", [8, 64, 512])


def test_two_keys_of_equal_configurations_are_an_error_naming_both():
    c = cfg()
    rows = [rec(c, median=1.0, key="aaaaaaaaaaaaaaaaaaaa"),
            rec(c, median=2.0, key="bbbbbbbbbbbbbbbbbbbb")]
    with pytest.raises(CommscopeError) as e:
        collect(rows)
    msg = str(e.value)
    assert "\n" not in msg
    assert "aaaaaaaaaaaaaaaaaaaa" in msg and "bbbbbbbbbbbbbbbbbbbb" in msg
    assert "'openmpi, 2 processes, local'" in msg and "nothing stored" in msg


def test_two_keys_without_a_stored_configuration_are_an_error_naming_both():
    rows = [rec(None, median=1.0, key="k-old-1"), rec(None, median=2.0, key="k-old-2")]
    with pytest.raises(CommscopeError, match=r"k-old-1 and k-old-2 \(no configuration is "
                       r"stored for k-old-1 nor k-old-2\)"):
        collect(rows)


# -- Config -------------------------------------------------------------------
def test_config_identity_is_its_key_never_its_label():
    """A series is its configuration's key; the label is for people only: no
    configuration is built to be looked up by what it is called (every stored
    run has a key, a store made before configurations gets them as it opens)."""
    import pytest

    a = Config("openmpi", 2, "local", key="k1")
    assert a == Config("openmpi build x", 2, "local", key="k1")  # the label is display only
    assert a != Config("openmpi", 2, "local", key="k2")  # one label, two configurations
    assert len({a, Config("openmpi", 2, "local", key="k2")}) == 2
    assert a != Config("openmpi", 2, "local", True, key="k1")  # oversubscribed: another series
    with pytest.raises(ValueError, match="without its key"):
        Config("openmpi", 2, "local")


# -- show ---------------------------------------------------------------------
def _columns(text: str, title: str) -> str:
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(title))
    return lines[i + 1]


def test_show_gives_two_builds_of_one_name_two_columns():
    a, b = cfg(identity=BUILD_A), cfg(identity=BUILD_B)
    text = tables([rec(a, median=1.0), rec(b, median=5.0)])
    head = _columns(text, "latency, 2 processes")
    assert "openmpi build 2667a80c" in head and "openmpi build 9f00d2c1" in head, text
    assert "1.000" in text and "5.000" in text, text


def test_show_names_a_parameter_that_does_not_apply_when_it_alone_tells_columns_apart():
    w64, w128 = cfg(window=64), cfg(window=128)
    text = tables([rec(w64, median=1.0), rec(w128, median=1.1)])
    head = _columns(text, "latency, 2 processes")
    assert "openmpi window=64" in head and "openmpi window=128" in head, text


def test_show_refuses_two_keys_nothing_tells_apart():
    c = cfg()
    with pytest.raises(CommscopeError, match="aaaaaaaaaaaaaaaaaaaa and bbbbbbbbbbbbbbbbbbbb"):
        tables([rec(c, median=1.0, key="aaaaaaaaaaaaaaaaaaaa"),
                rec(c, median=2.0, key="bbbbbbbbbbbbbbbbbbbb")])


def test_show_one_key_is_one_column():
    c = cfg()
    text = tables([rec(c, size=8, median=1.0), rec(c, size=64, median=2.0)])
    head = _columns(text, "latency, 2 processes").split()
    assert head == ["size", "openmpi"], text


# -- findings -----------------------------------------------------------------
def _line(k: float) -> dict[int, Point]:
    return {s: Point(s, k * (1 + s / 64), k * (1 + s / 64) * 0.99, k * (1 + s / 64) * 1.01)
            for s in (8, 16, 32, 64)}


def test_faster_compares_configurations_by_key_and_refuses_one_label_for_two():
    fast, slow = Config("openmpi", 2, "local", key="k1"), Config("openmpi", 2, "local", key="k2")
    with pytest.raises(CommscopeError, match=r"'openmpi' \(k1 and k2\)"):
        faster_implementation({(fast, "latency"): _line(1.0), (slow, "latency"): _line(2.0)})
    # named apart (as collect names them), the comparison is made
    fast = Config("openmpi build 2667a80c", 2, "local", key="k1")
    slow = Config("openmpi build 9f00d2c1", 2, "local", key="k2")
    (f,) = faster_implementation({(fast, "latency"): _line(1.0), (slow, "latency"): _line(2.0)})
    assert f.parties == (fast, slow) and [p.key for p in f.parties] == ["k1", "k2"]
    assert "openmpi build 2667a80c is faster than openmpi build 9f00d2c1" in f.text
