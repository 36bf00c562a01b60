"""Seed 002's channel: stress under separate processes and under
ThreadSanitizer, death of a peer, cleanup of the segment, the memory
footprint, and the channel as a transport of the real harness."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope import cli
from commscope.store.config import what
from commscope.store.db import Store
from tests.conftest import ROOT, mpi_processes, shm_left

CHAN = ROOT / "channel"
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", f"-I{CHAN}"]


def _cc() -> str:
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.fail("no C compiler")
    return cc


@pytest.fixture(scope="module")
def stress(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("chan") / "stress"
    subprocess.run([_cc(), *CFLAGS, "-O2", str(CHAN / "cs_chan.c"), str(CHAN / "tests/stress.c"),
                    "-o", str(out), "-lpthread"], check=True)
    return out


def _segments() -> set[str]:
    return {p for p in os.listdir("/dev/shm") if p.startswith("cschan-")}


def _stress(exe: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    before = _segments()
    p = subprocess.run([str(exe), *args, "--timeout", "10"], capture_output=True, text=True,
                       timeout=timeout)
    # a segment no live process maps (a neighbour's stress, two tests at a time, maps its own)
    left = {s for s in shm_left(before) if s.startswith("cschan-")}
    assert not left, f"a shared segment was left behind: {left}"
    return p


@pytest.mark.parametrize("args", [
    ["--procs", "2", "--msgs", "400"],
    ["--procs", "4", "--msgs", "200"],
    ["--procs", "8", "--msgs", "40"],
    ["--procs", "3", "--msgs", "300", "--small"],  # tiny rings and pools: wraps, starvation
    ["--procs", "4", "--msgs", "150", "--cma"],     # single copy with process_vm_readv
    ["--procs", "3", "--msgs", "200", "--seed", "7", "--small", "--cma"],
])
def test_every_message_arrives_whole_and_in_order(stress, args):
    p = _stress(stress, *args)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "all checked" in p.stdout


@pytest.mark.parametrize("extra", [[], ["--cma"], ["--small"]])
def test_a_dead_peer_is_reported_not_waited_for(stress, extra):
    p = _stress(stress, "--procs", "4", "--msgs", "300", "--kill-at", "300", *extra)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "peer death detected" in p.stdout
    assert "peer process is gone" in p.stderr


def _tsan_build(tmp_path, name, *defines):
    probe = tmp_path / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    if subprocess.run([_cc(), "-fsanitize=thread", str(probe), "-o", str(tmp_path / "probe")],
                      capture_output=True).returncode != 0:
        pytest.skip("no ThreadSanitizer runtime for this compiler")
    exe = tmp_path / name
    subprocess.run([_cc(), *CFLAGS, "-O1", "-g", "-fsanitize=thread", *defines,
                    str(CHAN / "cs_chan.c"), str(CHAN / "tests/stress.c"), "-o", str(exe),
                    "-lpthread"], check=True)  # the channel itself must build
    return exe


@pytest.mark.slow
def test_stress_under_thread_sanitizer(tmp_path):
    exe = _tsan_build(tmp_path, "stress-tsan")
    for args in (["--msgs", "100"], ["--msgs", "100", "--small"]):
        p = _stress(exe, "--threads", "--procs", "4", *args, timeout=300)
        assert "WARNING: ThreadSanitizer" not in p.stderr, p.stderr[-3000:]
        assert p.returncode == 0 and "all checked" in p.stdout


@pytest.mark.slow
def test_thread_sanitizer_sees_a_race_in_the_shared_segment(tmp_path):
    """The threads share one mapping of the segment, so a weakened ordering
    (the message stamp published relaxed instead of release) is a race
    ThreadSanitizer reports; with one mapping per thread it saw nothing."""
    exe = _tsan_build(tmp_path, "stress-racy", "-DCS_CHAN_STAMP_ORDER=memory_order_relaxed")
    p = _stress(exe, "--threads", "--procs", "2", "--msgs", "50", timeout=300)
    assert "WARNING: ThreadSanitizer: data race" in p.stderr, p.stderr[-2000:]


def test_footprint_arithmetic_matches_the_segment(tmp_path):
    exe = tmp_path / "footprint"
    subprocess.run([_cc(), *CFLAGS, "-O2", str(CHAN / "cs_chan.c"),
                    str(CHAN / "tools/footprint.c"), "-o", str(exe)], check=True)
    rows = [json.loads(x) for x in subprocess.run([str(exe), "--measure", "8"],
                                                   capture_output=True, text=True, check=True,
                                                   timeout=120).stdout.splitlines()]
    assert [r["procs"] for r in rows] == [2, 4, 8, 16, 32, 64]
    for r in rows:
        if r["procs"] <= 8:
            assert r["measured_bytes"] == r["channel_bytes"]
    # pools grow with n, rings with n^2 but small: far below one large buffer per pair
    big = rows[-1]
    assert big["channel_bytes"] < big["per_pair_bytes"] / 10
    n, ring, pool = big["procs"], big["ring_bytes"], big["pool_bytes"]
    assert big["channel_bytes"] >= n * (n - 1) * ring + n * pool


@pytest.mark.mpi
def test_channel_through_the_harness(tmp_path, cores):
    db = tmp_path / "chan.db"
    boot = "openmpi" if "openmpi" in cores else next(iter(cores))
    for np_ in ("2", "4"):  # 4 is oversubscribed here: correctness only
        rc = cli.main(["run", "--no-advise", "--db", str(db), "--mpi", boot, "--np", np_,
                       "--transport", "chan,chan-cma",
                       "--bench", "latency,bw,bibw,sendloop,barrier,alltoall",
                       "--sizes", "1:1M", "--factor", "32", "--min-samples", "5",
                       "--min-time", "0", "--warmup-time", "0", "--quiet"])
        assert rc == 0
    rows = Store(db).result_rows()
    # the transport is part of the configuration, not of the implementation's name
    assert {r["mpi_name"] for r in rows} == {boot}
    assert {what(r) for r in rows} == {f"{boot} chan", f"{boot} chan-cma"}
    assert all(r["valid"] for r in rows)
    assert {r["bench"] for r in rows} == {"latency", "bw", "bibw", "sendloop", "barrier",
                                          "alltoall"}
    assert {r["np"] for r in rows} == {2, 4}
    assert mpi_processes() == []
    assert not _segments()


@pytest.mark.mpi
def test_channel_refuses_mpi_only_benchmarks(capsys, cores):
    rc = cli.main(["run", "--no-advise", "--bench", "bcast", "--transport", "chan",
                   "--mpi", next(iter(cores))])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "runs over MPI only" in err[0]


@pytest.mark.mpi
def test_corruption_over_the_channel_is_caught(tmp_path, cores):
    db = tmp_path / "bad.db"
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "latency", "--transport", "chan",
                   "--mpi", next(iter(cores)), "--sizes", "1K", "--inject", "corrupt@1K",
                   "--quiet", "--min-time", "0"])
    assert rc == 1
    assert {r["status"] for r in Store(db).runs()} == {"invalid"}
