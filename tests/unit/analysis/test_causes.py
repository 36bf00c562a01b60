"""Causes before comparisons, on fixed series with known mechanisms: a gap
that begins at one side's eager limit is that limit, said once for every
benchmark it shows in; a drop where the message leaves the cache is no
protocol loss; the sweep's first size alone carries no claim; range words
only where the range means them.  And the advise step's verdicts, with the
measurement injected (the real one is in e2e/test_advise.py)."""

from __future__ import annotations

import pytest

from commscope.analysis import causes, findings, summary
from commscope.analysis.causes import Facts, Machine
from commscope.analysis.series import Config, Point
from commscope.cli import main
from commscope.store.db import Store

SIZES = [2**k for k in range(0, 23)]  # 1 B .. 4 MiB, every power of two

OMPI = Config("openmpi", 2, "local", impl="openmpi", key="openmpi")
MPICH = Config("mpich", 2, "local", impl="mpich", key="mpich")
FACTS = {OMPI: Facts("openmpi", {"btl_vader_eager_limit": "4096",
                                 "btl_vader_max_send_size": "32768"}),
         MPICH: Facts("mpich", {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": "69632"})}
MEM = Machine(mem_copy_gbs=42.9, caches=(("L2", 1 << 20), ("L3", 32 << 20)))


def lat(s: int) -> float:  # 0.2 us and 10 GB/s
    return 0.2 + s / 10000.0


def series(f, sizes=SIZES, rel_ci=0.01):
    return {s: Point(s, f(s), f(s) * (1 - rel_ci), f(s) * (1 + rel_ci)) for s in sizes}


def slow_at(lo: int, hi: int, k: float = 3.0):
    return lambda s: (k if lo <= s <= hi else 1.0) * lat(s)


def explained(data, facts=FACTS, machine=MEM):
    return findings.attribute(findings.all_findings(data), data, facts, machine)


def gap(lo: int, hi: int):
    """Open MPI 3x slower than MPICH from lo to hi, in latency and bw."""
    return {(OMPI, "latency"): series(slow_at(lo, hi)), (MPICH, "latency"): series(lat),
            (OMPI, "bw"): series(slow_at(lo, hi)), (MPICH, "bw"): series(lat)}


def test_gap_beginning_at_one_sides_eager_limit_is_attributed_to_it():
    found = explained(gap(4096, 8192))
    faster = [f for f in found if f.kind == "faster"]
    assert faster and all(f.cause is not None and f.cause.kind == "limit"
                          for f in faster), [(f.text, f.cause) for f in faster]
    c = faster[0].cause
    assert c.config == OMPI and c.limit.variable == "btl_vader_eager_limit"
    assert c.boundary == 4096 and c.sizes == (4096, 8192)
    # eager up to 8 KiB: the power of two above 8 KiB and Open MPI's header
    assert c.candidates == ((("OMPI_MCA_btl_vader_eager_limit", "16384"),),)
    # one cause, one conclusion, naming every benchmark; a setting, not a library
    s = summary.summarize(gap(4096, 8192), found)
    (con,) = [c for c in s.conclusions if c.kind == "cause"]
    assert not [c for c in s.conclusions if c.kind == "implementation"]
    assert con.headline.startswith(
        "openmpi sends messages of 4 KiB and more by rendezvous (btl_vader_eager_limit = "
        "4096 B, Open MPI's shared-memory eager limit): "), con.headline
    assert "latency" in con.headline and "bw" in con.headline
    assert "use mpich" not in con.headline.lower()
    assert "Not measured: commscope tune --mpi openmpi" in con.headline


def test_the_other_side_turning_to_rendezvous_first_is_not_this_sides_limit():
    # Open MPI 5 sends 64 KiB by rendezvous already: a gap from 128 KiB, where
    # Open MPI 4 turns to rendezvous too, is not Open MPI 4's eager limit
    ompi5 = Config("openmpi5", 2, "local", impl="openmpi5", key="openmpi5")
    facts = {OMPI: Facts("openmpi", {"btl_vader_eager_limit": "131072"}),
             ompi5: Facts("openmpi", {"btl_sm_eager_limit": "65536"})}
    data = {(OMPI, "bw"): series(slow_at(131072, 262144)), (ompi5, "bw"): series(lat)}
    f = next(f for f in explained(data, facts) if f.kind == "faster")
    assert f.cause is not None and f.cause.kind == "unexplained", f.cause
    # where Open MPI 5 is still eager there, the limit is Open MPI 4's
    facts[ompi5] = Facts("openmpi", {"btl_sm_eager_limit": "1048576"})
    f = next(f for f in explained(data, facts) if f.kind == "faster")
    assert f.cause.kind == "limit" and f.cause.config == OMPI


def test_a_gap_no_limit_explains_says_so():
    # in bw only: no latency step to name either
    data = {(OMPI, "bw"): series(slow_at(32768, 262144)), (MPICH, "bw"): series(lat)}
    found = explained(data)
    f = next(f for f in found if f.kind == "faster")
    assert f.cause.kind == "unexplained"
    s = summary.summarize(data, found)
    (con,) = [c for c in s.conclusions if c.kind == "implementation"]
    assert "no recorded mechanism" in con.headline, con.headline


def test_a_gap_at_a_measured_step_no_variable_explains_names_the_step():
    found = explained(gap(32768, 262144))
    f = next(f for f in found if f.kind == "faster")
    assert f.cause.kind == "break", f.cause
    s = summary.summarize(gap(32768, 262144), found)
    (con,) = [c for c in s.conclusions if c.kind == "implementation"]
    assert "openmpi changes protocol between 16 KiB and 32 KiB" in con.headline, con.headline


def test_a_two_size_range_is_named_by_its_sizes_not_small_messages():
    data = gap(512, 1024)
    s = summary.summarize(data, explained(data))
    (con,) = [c for c in s.conclusions if c.kind == "implementation"]
    assert "small messages" not in con.headline
    assert con.headline.startswith("Use mpich, not openmpi, from 512 B to 1 KiB"), con.headline
    # while 1 B to 4 KiB is what "small messages" means
    data = gap(1, 2048)
    s = summary.summarize(data, explained(data))
    (con,) = [c for c in s.conclusions if c.kind == "implementation"]
    assert con.headline.startswith("For small messages use mpich"), con.headline


def test_conclusions_with_one_cause_merge_drops_too():
    data = gap(4096, 8192)
    # bw's bandwidth falls at the limit under Open MPI, bibw's too
    data[(OMPI, "bibw")] = series(slow_at(4096, 8192))
    found = explained(data)
    assert [f for f in found if f.kind == "drop"], [f.text for f in found]
    s = summary.summarize(data, found)
    causes_ = [c for c in s.conclusions if c.kind == "cause"]
    assert len(causes_) == 1, [c.headline for c in s.conclusions]
    assert "bibw loses" in causes_[0].headline
    assert not [c for c in s.conclusions if c.kind == "anomaly"]


def _bw_points(gbs: dict[int, float]):
    """A bandwidth series from GB/s per size (time per message, us)."""
    return {s: Point(s, s / (g * 1e3), s / (g * 1e3) * 0.99, s / (g * 1e3) * 1.01)
            for s, g in gbs.items()}


def test_a_cache_boundary_drop_is_not_a_protocol_loss():
    # 44.8 GB/s at 8 KiB is above this machine's 42.9 GB/s from memory
    gbs = {2048: 30.0, 4096: 40.0, 8192: 44.8, 16384: 6.0, 32768: 7.0, 65536: 8.0}
    data = {(MPICH, "sendloop"): _bw_points(gbs)}
    found = explained(data, machine=MEM)
    (drop,) = [f for f in found if f.kind == "drop"]
    assert drop.cause.kind == "cache" and "copy from memory" in drop.cause.text
    assert not summary.conclusions(found), [c.headline for c in summary.conclusions(found)]
    # where the message outgrows L2 while bandwidth stayed below memory's
    gbs = {262144: 12.0, 524288: 12.5, 1 << 20: 12.4, 1 << 21: 9.0, 1 << 22: 9.1}
    found = explained({(MPICH, "sendloop"): _bw_points(gbs)}, machine=MEM)
    (drop,) = [f for f in found if f.kind == "drop"]
    assert drop.cause.kind == "cache" and "L2" in drop.cause.text, drop.cause
    assert not summary.conclusions(found)


def test_a_drop_from_the_first_size_swept_carries_no_claim():
    gbs = {1: 0.05, 2: 0.02, 4: 0.04, 8: 0.08}
    found = explained({(MPICH, "bw"): _bw_points(gbs)})
    (drop,) = [f for f in found if f.kind == "drop"]
    assert drop.cause.kind == "edge"
    assert not summary.conclusions(found)


def test_without_recorded_variables_no_setting_is_named():
    found = explained(gap(4096, 8192), facts={})
    assert all(f.cause.kind in ("unexplained", "break") for f in found if f.kind == "faster")


@pytest.mark.parametrize("value", ["-5", "nan", "soon", ""])
def test_advise_budget_takes_seconds_only(value, capsys):
    with pytest.raises(SystemExit) as e:
        raise SystemExit(main(["run", "--advise-budget", value, "--db", "/nonexistent/x"]))
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--advise-budget" in err[0], err


# -- a collective's algorithm -------------------------------------------------
def coll_gap(coll="allreduce", lo=1, hi=4096):
    return {(MPICH, coll): series(slow_at(lo, hi)), (OMPI, coll): series(lat)}


def test_a_collective_slower_in_one_library_is_first_its_algorithm():
    data = coll_gap()
    found = explained(data)
    (f,) = [f for f in found if f.kind == "faster"]
    assert f.cause.kind == "algorithm" and f.cause.coll == "allreduce"
    assert f.cause.config == MPICH
    s = summary.summarize(data, found)
    (con,) = s.conclusions
    assert con.kind == "cause"
    assert con.headline.startswith("mpich's MPI_Allreduce takes 3.0x as long as openmpi's "
                                   "from 1 B to 4 KiB"), con.headline
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" in con.headline
    assert ("Not measured: commscope tune --mpi mpich --bench allreduce --sizes 1:4K "
            "measures its allreduce algorithms") in con.headline
    assert "use openmpi" not in con.headline.lower()
    # what acting on it saves is said only once measured: the gap to the other
    # library is not what the unmeasured setting would save
    assert con.gain > 0.5 and con.saving == ""


def test_only_when_no_algorithm_helps_is_the_other_library_the_answer():
    data = coll_gap()
    found = explained(data)
    key = causes.cause_key(next(f for f in found if f.cause).cause)
    none = causes.Fix(key, (("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "recursive_doubling"),),
                      "no-gain", "allreduce", (1, 4096), 1.02, 0.95, 1.1, 8, tried=3)
    (con,) = summary.summarize(data, found, fixes={key: none}).conclusions
    assert ("none of the 3 allreduce settings mpich offers was faster over neighbouring "
            "sizes") in con.headline
    assert con.headline.endswith("openmpi is the faster library here"), con.headline
    # a fix that closes part of the gap says what is left of it
    part = causes.Fix(key, none.settings, "verified", "allreduce", (1, 4096), 1.5, 1.3, 1.7, 8,
                      file="advice/mpich.env", tried=3)
    (con,) = summary.summarize(data, found, fixes={key: part}).conclusions
    assert "allreduce is 1.5x faster from 1 B to 4 KiB (95% interval 1.30-1.70x)" in \
        con.headline, con.headline
    assert con.headline.endswith("openmpi stays about 2.0x faster there"), con.headline
    assert con.saving == "the setting took ~33% less per call from 1 B to 4 KiB", con.saving


def test_a_collective_no_setting_can_choose_is_a_fact_not_advice_to_switch():
    data = coll_gap("gather")  # no algorithm variable commscope searches
    found = explained(data)
    (con,) = summary.summarize(data, found).conclusions
    assert con.kind == "implementation"
    assert con.headline.startswith("Under mpich, gather takes 3.0x as long"), con.headline
    assert "no recorded mechanism" in con.headline and "Use " not in con.headline


def test_a_drop_past_256_bytes_is_no_inline_limit_without_xpmem():
    """Without XPMEM, vader's max_inline_send only picks a free list: the step
    after 256 B is ob1's own inline cut-off, a fixed number (pml_ob1_isend.c:95),
    so no setting is named; with XPMEM the limit does send by single copy."""
    gbs = {64: 0.8, 128: 1.6, 256: 2.4, 512: 1.7, 1024: 3.0, 2048: 5.0}
    cma = {OMPI: Facts("openmpi", {"btl_vader_eager_limit": "4096",
                                   "btl_vader_max_inline_send": "256",
                                   "btl_vader_single_copy_mechanism": "cma"})}
    (drop,) = [f for f in explained({(OMPI, "sendloop"): _bw_points(gbs)}, cma)
               if f.kind == "drop"]
    assert drop.cause.kind != "limit", drop.cause
    xpmem = {OMPI: Facts("openmpi", {**cma[OMPI].cvars,
                                     "btl_vader_single_copy_mechanism": "xpmem"})}
    (drop,) = [f for f in explained({(OMPI, "sendloop"): _bw_points(gbs)}, xpmem)
               if f.kind == "drop"]
    assert drop.cause.kind == "limit" and drop.cause.limit.variable == "btl_vader_max_inline_send"
    assert drop.cause.boundary == 512
    # the payload alone counts: 512 B needs a limit of 512
    assert drop.cause.candidates == ((("OMPI_MCA_btl_vader_max_inline_send", "512"),),)


def test_only_causes_on_the_first_screen_are_measured():
    data = {}
    # four collectives, each slower by its own factor (equal ones would merge
    # into one finding of four benchmarks)
    for k, coll in zip((1.5, 3.0, 5.0, 8.0), ("bcast", "allreduce", "reduce", "alltoall"),
                       strict=True):
        data.update({(MPICH, coll): series(slow_at(1, 4096, k)), (OMPI, coll): series(lat)})
    found = explained(data)
    shown = [c for c in summary.conclusions(found) if c.kind == "cause"]
    assert len(shown) == summary.QUOTA["cause"] == 3


def test_a_fix_measured_in_another_host_mode_is_not_carried_over(tmp_path):
    store = Store(tmp_path / "s.db")
    fix = causes.Fix("limit|k|2|local|btl_vader_eager_limit|4096",
                     (("OMPI_MCA_btl_vader_eager_limit", "16384"),), "verified", "bw",
                     (4096, 8192), 3.0, 2.5, 3.5, 5, mode_ns=58.0)
    store.add_advice(fix.cause_key, fix.to_json(), None, None)
    _, same = findings.explained(store, gap(4096, 8192), [], mode_ns=61.0)
    assert same[fix.cause_key].verdict == "verified"
    _, other = findings.explained(store, gap(4096, 8192), [], mode_ns=262.0)
    got = other[fix.cause_key]
    assert got.verdict == "skipped" and "58 ns between cores" in got.reason, got


def test_an_algorithm_cause_names_each_separated_range_not_their_union():
    # mpich's allreduce slower at 1-16 B and at 64 KiB-1 MiB, not in between
    f = lambda s: (3.0 if s <= 16 or 65536 <= s <= 1 << 20 else 1.0) * lat(s)  # noqa: E731
    data = {(MPICH, "allreduce"): series(f, rel_ci=0.01),
            (OMPI, "allreduce"): series(lat, rel_ci=0.01)}
    (con,) = summary.summarize(data, explained(data)).conclusions
    assert con.headline.startswith("mpich's MPI_Allreduce takes 3.0x as long as openmpi's from "
                                   "1 B to 16 B and 3.0x from 64 KiB to 1 MiB"), con.headline


def test_under_pml_ucx_no_btl_limit_is_named():
    """UCX decides the protocol under pml ucx: the shared-memory BTL's limits,
    read all the same, are no cause."""
    ucx = {OMPI: Facts("openmpi", {**FACTS[OMPI].cvars, "pml": "ucx"}), MPICH: FACTS[MPICH]}
    found = explained(gap(4096, 8192), facts=ucx)
    faster = [f for f in found if f.kind == "faster"]
    assert faster and not any(f.cause is not None and f.cause.kind == "limit"
                              for f in faster), [(f.text, f.cause) for f in faster]
    # "^ucx" excludes it: the BTL's limit is the cause again
    ob1 = {OMPI: Facts("openmpi", {**FACTS[OMPI].cvars, "pml": "^ucx"}), MPICH: FACTS[MPICH]}
    assert any(f.cause is not None and f.cause.kind == "limit"
               for f in explained(gap(4096, 8192), facts=ob1) if f.kind == "faster")


def test_an_emulated_single_copy_is_not_called_one_copy():
    cv = {"btl_vader_eager_limit": "4096", "btl_vader_single_copy_mechanism": "emulated"}
    (lim,) = causes.limits(Facts("openmpi", cv), "local")
    assert lim.what == "Open MPI's shared-memory eager limit", lim.what
    cv["btl_vader_single_copy_mechanism"] = "cma"
    assert "one process_vm_readv copy" in causes.limits(Facts("openmpi", cv), "local")[0].what


def test_the_unmeasured_fix_names_the_benchmark_the_cause_showed_in_and_its_base():
    """How to measure it yourself: with the cheapest benchmark the cause
    showed in (here latency alone), and, for a configuration run with
    settings, that tune starts from the library's defaults, not from them."""
    own = Config("openmpi OMPI_MCA_btl_vader_eager_limit=4096", 2, "local", impl="openmpi",
                 settings=(("OMPI_MCA_btl_vader_eager_limit", "4096"),),
                 key="openmpi OMPI_MCA_btl_vader_eager_limit=4096")
    data = {(own, "latency"): series(slow_at(4096, 8192)), (MPICH, "latency"): series(lat)}
    found = explained(data, facts={own: FACTS[OMPI], MPICH: FACTS[MPICH]})
    (con,) = [c for c in summary.summarize(data, found).conclusions if c.kind == "cause"]
    assert "Not measured: commscope tune --mpi openmpi --bench latency --sizes 2K:16K" in \
        con.headline, con.headline
    assert con.headline.endswith("against the library's defaults, not this configuration's "
                                 "OMPI_MCA_btl_vader_eager_limit=4096"), con.headline
