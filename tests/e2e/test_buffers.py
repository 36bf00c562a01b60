"""Cold buffers (--buffers cold), as IMB's off-cache mode: timed samples
rotate over pools larger than the last-level cache the probe reads, every
slot a timed message landed in is checked with the benchmark's own check
(a slot corrupted in the middle of the pool is caught), the configuration
says which buffers were used, and hot against cold is a fact about the
cache, never advice to change libraries.  Evicted (--buffers evicted):
every operation timed alone after each rank has streamed over twice the
last-level cache, its data checked as a hot run's.  Bad input is one line,
exit 2.

Noise policy: nothing here compares times measured on this machine; the
conclusion test uses fixed series."""

from __future__ import annotations

import pytest

from commscope.analysis import causes, findings, summary
from commscope.analysis.series import Config, Point
from commscope.measure import probe
from commscope.store.config import Configuration, params_of
from tests.helpers import core_run, one_line_error, run


@pytest.mark.mpi
def test_cold_pools_exceed_the_last_level_cache_and_every_slot_used_is_checked(cores,
                                                                            tmp_path):
    llc = int(probe.run(pair_ms=1.0)["l3_bytes"] or 0)  # type: ignore[call-overload]
    if not llc:
        pytest.skip("the last-level cache's size is not known here: no stream to size")
    core = cores[sorted(cores)[0]]
    rc, recs, err = core_run(core, tmp_path, "--bench", "latency,bw,allreduce,alltoall,bcast",
                             "--sizes", "8:64K", "--factor", "64", "--buffers", "cold")
    assert rc == 0, err
    head = recs[0]
    assert head["options"]["buffers"] == "cold"
    res = [r for r in recs if r["type"] == "result"]
    assert len(res) == 5 * 3 and all(r["valid"] for r in res), [r.get("why") for r in res]
    for r in res:
        pool = r["pool"]
        assert pool["llc_bytes"] == llc > 0, (pool, llc)  # the probe's figure, the same rule
        assert pool["bytes"] >= 2 * llc and pool["slots"] * r["size_bytes"] <= pool["bytes"]
        # every slot the timed samples (and calibration, warm-up) used: at
        # least one per sample, at most the pool
        assert r["n_samples"] <= pool["checked"] <= pool["slots"], (r["bench"], pool)


@pytest.mark.mpi
def test_a_slot_corrupted_in_the_middle_of_the_pool_is_caught(cores, tmp_path):
    core = cores[sorted(cores)[0]]
    rc, recs, err = core_run(core, tmp_path, "--bench", "latency,bw", "--sizes", "4K",
                             "--buffers", "cold", "--inject", "corrupt@4096")
    res = [r for r in recs if r["type"] == "result"]
    assert rc != 0 and len(res) == 2 and not any(r["valid"] for r in res), err
    for r in res:
        used, slots = r["pool"]["checked"], r["pool"]["slots"]
        assert f"cold pool slot {used // 2} of {slots}" in r["error"], r["error"]
        assert 0 < used // 2 < used <= slots


@pytest.mark.mpi
def test_hot_records_carry_no_pool_and_keep_their_keys(cores, tmp_path):
    core = cores[sorted(cores)[0]]
    rc, recs, err = core_run(core, tmp_path, "--bench", "latency", "--sizes", "8")
    assert rc == 0, err
    assert recs[0]["options"]["buffers"] == "hot"
    assert all("pool" not in r for r in recs if r["type"] == "result")
    # a configuration stored before --buffers existed keeps its key
    old = {"window": 64, "dtype": "int"}
    hot, cold = ({**old, "buffers": b} for b in ("hot", "cold"))
    key = Configuration("openmpi", params=params_of(old)).key
    assert Configuration("openmpi", params=params_of(hot)).key == key
    c = Configuration("openmpi", params=params_of(cold))
    assert c.key != key and c.label() == "openmpi buffers=cold"


@pytest.mark.mpi
def test_evicted_times_each_operation_alone_after_a_stream_beyond_the_cache(cores, tmp_path):
    llc = int(probe.run(pair_ms=1.0)["l3_bytes"] or 0)  # type: ignore[call-overload]
    if not llc:
        pytest.skip("the last-level cache's size is not known here: no stream to size")
    core = cores[sorted(cores)[0]]
    rc, recs, err = core_run(core, tmp_path, "--bench", "latency,bw,allreduce", "--sizes",
                             "8:4K", "--factor", "512", "--buffers", "evicted")
    assert rc == 0, err
    assert recs[0]["options"]["buffers"] == "evicted"
    res = [r for r in recs if r["type"] == "result"]
    assert len(res) == 3 * 2 and all(r["valid"] for r in res), [r.get("why") for r in res]
    # a stream reads and writes 2 x LLC: at 100 GB/s, faster than any node's memory, it
    # takes at least this long; under load it only takes longer (noise policy: bounds only)
    stream_s = 2 * 2 * llc / 100e9
    for r in res:
        assert r["evicted"] == {"bytes": 2 * llc, "llc_bytes": llc} and llc > 0, r["evicted"]
        assert r["batch"] == 1, (r["bench"], r["batch"])  # one operation a sample
        assert "pool" not in r
        # every sample streamed first (the size took at least that) ...
        assert r["elapsed_s"] >= r["n_samples"] * stream_s, (r["elapsed_s"], r["n_samples"])
        # ... outside its timed region: a latency far below one stream, at its fastest
        # sample (beside two busy loops the median read 2.0 ms, a rank waiting out its
        # peer's time slice: a bound load breaks; the fastest of the samples holds)
        if r["bench"] == "latency":
            assert r["min_us"] * 1e-6 < stream_s / 4, (r["min_us"], r["median_us"])
    # what moved is checked as in a hot run: a corrupted message is caught
    rc, recs, err = core_run(core, tmp_path, "--bench", "latency", "--sizes", "4K",
                             "--buffers", "evicted", "--inject", "corrupt@4096")
    (r,) = [r for r in recs if r["type"] == "result"]
    assert rc != 0 and not r["valid"] and "byte 2048" in r["error"], r.get("error")


@pytest.mark.slow
def test_bad_buffers_input_is_one_line(capsys, tmp_path):
    db = tmp_path / "x.db"
    for args, says in (
            (["--buffers", "warm"], "--buffers must be hot, cold or evicted, got 'warm'"),
            (["--buffers", "\x1b[2J"], "got '\\x1b[2J'"),  # shown, not acted out
            (["--buffers", "\x01\udcff"], "--buffers must be hot, cold or evicted"),  # bytes
            (["--buffers", "cold", "--rotate-root"], "--buffers cold keeps one root per size"),
            # pools of 1 GiB (the hidden --cold-pool) on 64 ranks: beyond this machine
            (["--buffers", "cold", "--np", "64", "--cold-pool", str(1 << 30)],
             "--buffers cold: latency needs"),
            # 1 GiB streamed by each of 64 ranks: beyond this machine as well
            (["--buffers", "evicted", "--np", "64", "--cold-pool", str(1 << 30)],
             "--buffers evicted: latency needs 64.00 GiB")):
        rc, out, err = run(capsys, "run", "--no-advise",
                           "--db", str(db), "--bench", "latency", "--sizes", "8",
                           *args)
        assert rc == 2, (args, out, err)
        one_line_error(rc, err, says)
    assert not db.exists()  # refused before any launch


def _lat(s: int) -> float:
    return 0.2 + s / 10000.0


def _against_hot(buffers: str, slow_from: int, k: float, flip: bool = False):
    """hot latency against the same latency with `buffers`, k times as long
    from `slow_from` (flip: the hot side slow): its findings and conclusions."""
    hot = Config("openmpi", 2, "local", impl="openmpi", key="openmpi")
    other = Config(f"openmpi buffers={buffers}", 2, "local", impl="openmpi", base="openmpi",
                   key=f"openmpi buffers={buffers}")
    sizes = [2**k for k in range(0, 23)]

    def pts(f):
        return {s: Point(s, f(s), f(s) * 0.99, f(s) * 1.01) for s in sizes}

    fast, slow = pts(_lat), pts(lambda s: _lat(s) * (k if s >= slow_from else 1.0))
    data = {(hot, "latency"): slow if flip else fast, (other, "latency"): fast if flip else slow}
    found = findings.attribute(findings.all_findings(data), data, {}, causes.Machine())
    return found, summary.conclusions(found)


def test_hot_against_cold_is_what_the_cache_gives_not_a_library_to_prefer():
    found, conclusions = _against_hot("cold", 32768, 2.2)
    f = next(f for f in found if f.kind == "faster")
    assert f.cause is not None and f.cause.kind == "buffers", f
    (c,) = conclusions
    assert c.kind == "buffers", c
    assert c.headline.startswith("Cold buffers take 2.2x as long (at least "), c.headline
    assert "as hot ones under openmpi from 32 KiB to 4 MiB" in c.headline, c.headline
    assert "not a setting" in c.headline and "Prefer" not in c.headline
    # cold measured faster (the host's modes, not the cache): a fact with no cause
    # claimed, never "prefer cold buffers"
    _, (c,) = _against_hot("cold", 32768, 2.2, flip=True)
    assert c.kind == "buffers" and c.headline.startswith(
        "Cold buffers measured faster than hot ones under openmpi from 32 KiB to 4 MiB"), c
    assert "no cache mechanism explains that" in c.headline and "Prefer" not in c.headline


def test_hot_against_evicted_is_what_the_cache_gives_not_a_library_to_prefer():
    found, conclusions = _against_hot("evicted", 4096, 3.0)
    f = next(f for f in found if f.kind == "faster")
    assert f.cause is not None and f.cause.kind == "buffers", f
    assert "state other than the message data out of cache too" in f.cause.text
    assert f.gain > 0.5 and findings.saving(f) == ""  # no choice: nothing to save by it
    (c,) = conclusions
    assert c.kind == "buffers" and "Prefer" not in c.headline, c
    assert c.headline.startswith("Evicted buffers take 3.0x as long (at least "), c.headline
    assert "as hot ones under openmpi from 4 KiB to 4 MiB" in c.headline, c.headline
    assert "first call after a compute sweep of about twice the last-level cache" in \
        c.headline, c.headline


def test_cold_against_evicted_is_two_regimes_and_no_cross_pairing():
    """Cold and evicted are two ways out of cache: either may be slower (1 MiB
    latency here: cold 2.4x hot, evicted 2.1x), so neither side faster is an
    anomaly.  And another library with its data held otherwise is two changes
    at once: no comparison is made."""
    cold = Config("openmpi buffers=cold", 2, "local", impl="openmpi", base="openmpi",
                  key="openmpi buffers=cold")
    ev = Config("openmpi buffers=evicted", 2, "local", impl="openmpi", base="openmpi",
                key="openmpi buffers=evicted")
    sizes = [2**k for k in range(0, 23)]

    def pts(f):
        return {s: Point(s, f(s), f(s) * 0.99, f(s) * 1.01) for s in sizes}

    data = {(ev, "latency"): pts(_lat),
            (cold, "latency"): pts(lambda s: _lat(s) * (1.5 if s >= 32768 else 1.0))}
    found = findings.attribute(findings.all_findings(data), data, {}, causes.Machine())
    f = next(f for f in found if f.kind == "faster")
    assert f.cause is not None and f.cause.kind == "buffers", f
    assert "two ways data can be out of cache" in f.cause.text
    (c,) = summary.conclusions(found)
    assert c.headline.startswith("Cold buffers take 1.5x as long (at least "), c.headline
    assert "no cache mechanism" not in c.headline and c.saving == ""
    mpich = Config("mpich", 2, "local", impl="mpich", key="mpich")
    data = {(ev, "latency"): pts(_lat), (mpich, "latency"): pts(lambda s: 3 * _lat(s))}
    assert [f for f in findings.all_findings(data) if f.kind == "faster"] == []
    # nor is it said to have been compared and found even
    assert summary.even(data, findings.all_findings(data)) == []
