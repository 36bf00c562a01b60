"""The headline figures against the machine's own limits, on fixed rows
(analysis/limits.py)."""

from __future__ import annotations

from dataclasses import replace

from commscope.analysis import limits
from tests.helpers import stored_point

PROBE = {"process_vm_readv": {"call_8b_ns": 680.0, "gbs_4mib": 8.8},
         "copy": [{"where": "cache", "bytes": 524288, "gbs": 76.0},
                  {"where": "memory", "bytes": 67108864, "gbs": 11.7}]}


def _row(mpi, bench, size, med, lo, hi, mb=None, floor=190.0, flagged=False):
    return stored_point({"mpi_name": mpi, "bench": bench, "size_bytes": size, "median_us": med,
                         "ci_lo_us": lo, "ci_hi_us": hi, "mb_per_s": mb, "floor_ns": floor,
                         "np": 2, "cluster": "local", "valid": True, "flagged": flagged})


def _rows():
    out = []
    for mpi, lat, ar, bw in (("openmpi", (0.40, 0.38, 0.43), (0.80, 0.75, 0.85), 20000.0),
                             ("mpich", (0.52, 0.42, 0.69), (1.32, 1.12, 1.56), 22000.0)):
        out += [_row(mpi, "latency", 1, *lat), _row(mpi, "latency", 8, 9.0, 8.0, 10.0),
                _row(mpi, "allreduce", 8, *ar), _row(mpi, "allreduce", 16, 5.0, 4.0, 6.0),
                _row(mpi, "bw", 512 << 10, 512 * 1024 / bw, 512 * 1024 / bw * 0.95,
                     512 * 1024 / bw * 1.05, bw),
                _row(mpi, "bw", 4 << 20, 500.0, 480.0, 520.0, 8400.0)]
    out.append(_row("mpich", "barrier", 0, 1.2, 1.0, 1.6))
    out.append(_row("openmpi", "barrier", 0, 0.1, 0.09, 0.11, flagged=True))  # busy: marked
    out.append(_row("mpich", "barrier", 0, 9.9, 9.0, 11.0, flagged=True))  # a quiet one stands
    return out


def test_each_figure_is_set_against_the_limit_of_its_own_reach(monkeypatch):
    monkeypatch.setattr(limits, "what", lambda r: r["mpi_name"])
    h = limits.headline(_rows(), PROBE)
    assert h is not None and h.names == ("mpich", "openmpi")
    rows = {label: figs for label, _, figs in h.rows}
    mp, om = rows["latency, smallest message"]
    assert (om.value, om.size) == (0.40, 1) and abs(om.times - 400 / 190) < 1e-9
    assert om.tied and mp.tied  # 0.38-0.43 inside 0.42-0.69: not told apart
    ar = rows["allreduce 8 B"]
    assert [f.value for f in ar] == [1.32, 0.80] and not any(f.tied for f in ar)
    # the peak sits in cache (512 KiB): set against the probe's copy in cache
    bw = rows["bw, peak"]
    assert [f.size for f in bw] == [512 << 10] * 2 and "in cache" in bw[0].against
    assert abs(bw[1].times - 20000.0 / 76000.0) < 1e-9
    # 4 MiB against the single copy; the rate's interval from the time's (a shorter time
    # is a higher rate)
    (m4, o4) = rows["bw at 4 MiB"]
    assert abs(o4.times - 8400 / 8800) < 1e-9 and o4.lo < o4.value < o4.hi
    # a barrier measured only on a busy machine is a figure, said to be one
    assert rows["barrier"][1].busy and rows["barrier"][1].value == 0.1
    assert not rows["barrier"][0].busy and rows["barrier"][0].value == 1.2
    text = limits.text(h)
    assert max(len(x) for x in text.splitlines()) <= 88
    assert "2.1x" in text and "26%" in text and "95%" in text
    assert "0.100 (0.090-0.110) *" in text and "*: measured while other processes" in text
    page = dict(limits.compact(h))  # the report's cells: the value, and under it its limit
    assert page["bw, peak (MB/s)"][1] == ("20000 (19048-21053) ≈",
                                          "at 512 KiB, 26% of a copy in cache")
    assert page["latency, smallest message (us)"][1][1] == "2.1x the core-to-core floor of 190 ns"


def test_the_floor_is_the_jobs_own_and_the_probes_is_said_where_the_host_moved(monkeypatch):
    monkeypatch.setattr(limits, "what", lambda r: r["mpi_name"])
    moved = limits.limits_text(limits.headline(_rows(), PROBE, probe_floor_ns=150.0))
    assert "core to core 190 ns one way (the median of the jobs' own floors" in moved
    assert "the probe read 150 ns at the sweep's start" in moved
    still = limits.limits_text(limits.headline(_rows(), PROBE, probe_floor_ns=185.0))
    assert "the probe read" not in still


def test_no_latency_between_two_ranks_is_no_table(monkeypatch):
    monkeypatch.setattr(limits, "what", lambda r: r["mpi_name"])
    assert limits.headline([r for r in _rows() if r["bench"] != "latency"], PROBE) is None
    # without a probe, no bandwidth limit: the figures stand alone
    h = limits.headline(_rows(), None)
    assert h is not None and all(f is None or f.times is None for label, _, figs in h.rows
                                 for f in figs if not label.startswith("latency"))


def test_a_gpu_paths_figures_are_not_set_against_the_hosts_limits(monkeypatch):
    """An H200's staged 1 B latency, 152 us, read '971x the core-to-core
    floor', and cuda-aware's 475 GB/s was set against a host copy: a GPU
    path's figures stand without them, host memory's keep theirs."""
    import json
    monkeypatch.setattr(limits, "what", lambda r: r["mpi_name"])
    rows = [replace(r, config=json.dumps({"mpi": r["mpi_name"], "buffer": "staged"
                                          if r["mpi_name"] == "mpich" else ""}))
            for r in _rows()]
    h = limits.headline(rows, PROBE)
    got = {label: figs for label, _, figs in h.rows}
    gpu, host = got["latency, smallest message"]
    assert gpu.times is None and host.times is not None
    assert got["bw, peak"][0].times is None and got["bw, peak"][1].times is not None
    assert got["bw at 4 MiB"][0].times is None and got["bw at 4 MiB"][1].times is not None


def test_one_floor_figure_wherever_a_latency_is_set_against_it(monkeypatch):
    """The headline table, `show`'s lines and the report set each
    implementation's smallest latency against the same floor: the one its
    own latency jobs measured (the host moves between jobs), named with its
    figure; the note gives the jobs' median with its spread."""
    monkeypatch.setattr(limits, "what", lambda r: r["mpi_name"])
    rows = [replace(r, floor_ns=260.0)  # mpich's jobs ran while the host sat higher
            if r["mpi_name"] == "mpich" and r["bench"] == "latency" else r for r in _rows()]
    h = limits.headline(rows, PROBE, probe_floor_ns=140.0)
    assert h is not None
    mp, om = dict((label, figs) for label, _, figs in h.rows)["latency, smallest message"]
    assert (mp.times, mp.against) == (520 / 260, "260 ns")
    assert (om.times, om.against) == (400 / 190, "190 ns")
    said = [x for _, row in limits.cells(h) for x in row if "of " in x and "ns" in x]
    assert said == ["2.0x of 260 ns", "2.1x of 190 ns"], said
    assert limits.beside_latency(rows, 140.0) == [
        "mpich: 1 B latency 520 ns, 2.0x the core-to-core floor (260 ns, the floor its jobs "
        "measured); MPI adds 260 ns",
        "openmpi: 1 B latency 400 ns, 2.1x the core-to-core floor (190 ns, the floor its jobs "
        "measured); MPI adds 210 ns"]
    note = limits.limits_text(h)
    assert "core to core 190 ns one way (the median of the jobs' own floors" in note
    assert "190-260 ns in the middle 80%" in note
    assert "the probe read 140 ns" in note
    # without floors in the records: the probe's, said so
    bare = [replace(r, floor_ns=None) for r in rows]
    assert limits.beside_latency(bare, 140.0)[1].endswith(
        "2.9x the core-to-core floor (140 ns, the probe's floor); MPI adds 260 ns")
