"""commscope matrix --at-once (issue 40): a round's pairs run at the same
time, each job in a process of its own that stores through its own
connection, the next wave only once the last has ended; and the waves as
planned: disjoint pairs, every pair both ways, one pair a wave otherwise.

The launches are replaced by a stand-in (a real Store, the real forked
waves) that records when each job started and ended and sleeps, so that
overlap is a fact of the schedule, not of the machine's speed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from commscope.cli import matrix
from commscope.measure import runner
from commscope.measure.build import Core
from commscope.measure.cluster import Hostfile
from commscope.measure.mpi import MpiImpl
from commscope.measure.plan import CoreOptions
from commscope.measure.progress import Progress
from commscope.measure.runner import JobOutcome, NoisePolicy
from commscope.store.db import FAILED, OK, RunInfo, Store
from commscope.store.records import Result

OMPI = MpiImpl("openmpi", "openmpi", "/usr/bin/mpicc.openmpi", "/usr/bin/mpirun.openmpi",
               "debian")
BENCHES = ({"name": "bw", "group": "p2p", "min_np": 2, "any_transport": True},
           {"name": "latency", "group": "p2p", "min_np": 2, "any_transport": True})
NAP_S = 0.4


def hosts(tmp_path: Path, n: int) -> Hostfile:
    f = tmp_path / "hosts"
    f.write_text("".join(f"node{i}\n" for i in range(n)))
    return Hostfile(f)


def planned(tmp_path: Path, n: int, at_once: bool) -> list[list]:
    core = Core(OMPI, Path("/cache/cs-core"), "id", {"mpi_library": "x"}, BENCHES)
    return matrix.waves(core, hosts(tmp_path, n), CoreOptions(sizes="1048576"), 8, at_once)


def ends(job) -> tuple[str, str]:
    return job.cluster.between


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_a_wave_at_once_is_disjoint_pairs_and_every_pair_is_measured_both_ways(tmp_path, n):
    waves = planned(tmp_path, n, at_once=True)
    assert len(waves) == 2 * (n - 1 if n % 2 == 0 else n)  # a round each way
    seen = []
    for w in waves:
        nodes = [x for j in w for x in ends(j)]
        assert len(nodes) == len(set(nodes)), w  # no node twice in a wave
        assert len({j.bench for j in w}) == 1  # latency with the first way, bw alone back
        for j in w:
            assert dict(j.config.extra)["pairs"] == "at once"
            seen.append((ends(j), "latency" in j.bench))
    ordered = {(f"node{i}", f"node{k}") for i in range(n) for k in range(n) if i != k}
    assert sorted(p for p, _ in seen) == sorted(ordered)  # each way exactly once
    assert sum(lat for _, lat in seen) == n * (n - 1) // 2  # latency once a pair
    alone = planned(tmp_path, n, at_once=False)
    assert all(len(w) == 1 for w in alone) and len(alone) == n * (n - 1)
    assert all("pairs" not in dict(w[0].config.extra) for w in alone)


def standin(log: Path, fail: str | None = None):
    """run_job as the forked child calls it: note start and end, sleep."""
    def run_job(job, store, sweep_id, *, timeout_s, policy, attempt=1, workdir=None,
                round_pos=None):
        t0 = time.monotonic()
        time.sleep(NAP_S)
        pair = "/".join(job.cluster.between)
        status = FAILED if pair == fail else OK
        results = [] if status == FAILED else [
            Result("bw", 1 << 20, 2, True, 5, 1, 5, *[10.0] * 9, 1.0, 1.0, True, "converged")]
        info = RunInfo(plan_key=job.plan_key(), bench=job.bench, np=2, sizes="1048576",
                       mpi_name="openmpi", mpi_family="openmpi", mpi_version="v",
                       mpi_identity="id", cluster=job.cluster.label, launch_argv=[], env={},
                       machine={}, options={}, oversubscribed=False, config=job.config,
                       repetition=job.rep)
        rid = store.begin_run(info, sweep_id)
        store.finish_run(rid, status, exit_code=0 if status == OK else 1, signal=None,
                         stderr_tail="", header=None, results=results,
                         flags=[False] * len(results), noise={})
        with open(log, "a") as f:
            f.write(json.dumps({"pair": pair, "pid": os.getpid(), "t0": t0,
                                "t1": time.monotonic()}) + "\n")
        return JobOutcome(job, rid, status, runner.Parsed(results=results),
                          [False] * len(results), "exit code 1" if status == FAILED else "")
    return run_job


def test_the_pairs_of_a_wave_run_at_once_and_the_waves_one_after_another(tmp_path,
                                                                          monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setattr(runner, "run_job", standin(log, fail="node3/node1"))
    waves = planned(tmp_path, 4, at_once=True)
    store = Store(tmp_path / "s.db")
    outs = runner.run_at_once(waves, store, argv=["matrix"], timeout_s=60,
                              policy=NoisePolicy(), progress=Progress(12, enabled=False),
                              repeat=2)
    got = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(got) == len(outs) == 24 and len({g["pid"] for g in got}) == 24  # a process each
    assert os.getpid() not in {g["pid"] for g in got}
    got.sort(key=lambda g: g["t0"])
    for a, b in zip(got[::2], got[1::2], strict=True):  # the two pairs of a wave: together
        assert b["t0"] < a["t1"] and a["t0"] < b["t1"], (a, b)
    for a, b in zip(got[1::2], got[2::2], strict=False):  # a wave after the last has ended
        assert b["t0"] >= a["t1"], (a, b)
    rows = store.db.execute("SELECT status, repetition, config FROM runs").fetchall()
    assert len(rows) == 24 and {r["repetition"] for r in rows} == {1, 2}
    assert sorted(r["status"] for r in rows).count(FAILED) == 2  # a failure stays its own
    assert [o.status for o in outs].count(FAILED) == 2
    assert all(json.loads(r["config"])["extra"]["pairs"] == "at once" for r in rows)
    assert store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 22
    assert store.db.execute("SELECT finished_at IS NOT NULL FROM sweeps").fetchone()[0]


def test_a_job_whose_process_ends_without_an_outcome_is_said(tmp_path, monkeypatch):
    def dies(job, store, sweep_id, **kw):
        raise RuntimeError("the stand-in broke")
    monkeypatch.setattr(runner, "run_job", dies)
    store = Store(tmp_path / "s.db")
    with pytest.raises(runner.CommscopeError, match="ended without an outcome "
                       r"\(RuntimeError: the stand-in broke\)"):
        runner.run_at_once(planned(tmp_path, 2, True)[:1], store, argv=["matrix"],
                           timeout_s=60, policy=NoisePolicy(),
                           progress=Progress(1, enabled=False))
