"""commscope matrix --at-once (issue 40): a round's pairs run at the same
time, each job in a process of its own that stores through its own
connection, the next wave only once the last has ended; and the waves as
planned: disjoint pairs, every pair both ways, one pair a wave otherwise.

The launches are replaced by a stand-in (a real Store, the real forked
waves) that records when each job started and ended and sleeps, so that
overlap is a fact of the schedule, not of the machine's speed."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from commscope import cli
from commscope.cli import matrix
from commscope.measure import runner
from commscope.measure.build import Core
from commscope.measure.cluster import Cores, Hostfile, Placement
from commscope.measure.plan import CoreOptions
from commscope.measure.progress import Progress
from commscope.measure.runner import JobOutcome, NoisePolicy
from commscope.store.db import FAILED, OK, RunInfo, Store
from tests.helpers import OMPI, result

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


def standin(log: Path, fail: str | None = None, narrow: str | None = None):
    """run_job as the forked child calls it: note start and end, sleep.
    `narrow`: the pair whose first bw record the time bound narrowed to a
    window of 2 (the others: 4), as a busy machine does."""
    def run_job(job, store, sweep_id, *, timeout_s, policy, attempt=1, workdir=None,
                round_pos=None):
        t0 = time.monotonic()
        time.sleep(NAP_S)
        pair = "/".join(job.cluster.between)
        status = FAILED if pair == fail else OK
        w = job.again_at[0] if job.again_at else 2 if (pair, job.rep) == (narrow, 1) else 4
        results = [] if status == FAILED else [
            result("bw", 1 << 20, 10.0, window=w)]
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
            f.write(json.dumps({"pair": pair, "again": bool(job.again_at),
                                "pid": os.getpid(), "t0": t0,
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


def test_pairs_measured_again_at_a_narrower_window_are_measured_at_once_again(
        tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setattr(runner, "run_job", standin(log, narrow="node0/node1"))
    store = Store(tmp_path / "s.db")
    outs = runner.run_at_once(planned(tmp_path, 4, at_once=True), store, argv=["matrix"],
                              timeout_s=60, policy=NoisePolicy(),
                              progress=Progress(12, enabled=False))
    again = sorted((json.loads(x) for x in log.read_text().splitlines()
                    if json.loads(x)["again"]), key=lambda g: g["t0"])
    assert len(again) == 11 == len(outs) - 12  # every other pair and way, at window 2
    overlapping = sum(b["t0"] < a["t1"] for a, b in zip(again, again[1:], strict=False))
    assert overlapping >= 4, again  # 11 jobs of disjoint pairs: 6 waves at most
    nodes = [set(g["pair"].split("/")) for g in again]
    for i, a in enumerate(again):  # no node in two jobs at once
        for j in range(i + 1, len(again)):
            if again[j]["t0"] < a["t1"]:
                assert not nodes[i] & nodes[j], (a, again[j])
    narrowed = store.db.execute("SELECT COUNT(*) FROM results WHERE window=2").fetchone()[0]
    assert narrowed == 12


def test_a_job_whose_process_dies_is_a_failure_and_the_matrix_goes_on(tmp_path, monkeypatch):
    """A job's process that raises, or is killed after it began its run
    (out of memory, SIGKILL), is a failure of that job alone: the others of
    its wave and the next rounds are measured, the run it began is stored
    as failed, and a later round's death is not read as an earlier round's
    outcome."""
    import signal

    log = tmp_path / "log"
    ok = standin(log)

    def dies(job, store, sweep_id, **kw):
        pair = "/".join(job.cluster.between)
        if pair == "node0/node1" and job.rep == 1:
            raise RuntimeError("the stand-in broke")
        if pair == "node1/node0" and job.rep == 2:  # killed once its run is stored as running
            store.begin_run(RunInfo(plan_key=job.plan_key(), bench=job.bench, np=2,
                                    sizes="8", mpi_name="openmpi", mpi_family="openmpi",
                                    mpi_version="v", mpi_identity="id",
                                    cluster=job.cluster.label, launch_argv=[], env={},
                                    machine={}, options={}, oversubscribed=False,
                                    config=job.config, repetition=job.rep), sweep_id)
            os.kill(os.getpid(), signal.SIGKILL)
        return ok(job, store, sweep_id, **kw)
    monkeypatch.setattr(runner, "run_job", dies)
    store = Store(tmp_path / "s.db")
    outs = runner.run_at_once(planned(tmp_path, 2, True), store, argv=["matrix"],
                              timeout_s=60, policy=NoisePolicy(),
                              progress=Progress(4, enabled=False), repeat=2)
    got = {("/".join(o.job.cluster.between), o.job.rep): o for o in outs}
    assert len(outs) == 4
    broke = got[("node0/node1", 1)]
    assert broke.status == FAILED and broke.message.endswith(
        "(RuntimeError: the stand-in broke)"), broke.message
    killed = got[("node1/node0", 2)]
    assert killed.status == FAILED and "(killed by SIGKILL)" in killed.message, killed.message
    assert got[("node0/node1", 2)].status == got[("node1/node0", 1)].status == OK
    rows = store.db.execute("SELECT status, stderr_tail FROM runs WHERE repetition=2 AND "
                            "config LIKE '%node1/node0%'").fetchall()
    assert [r["status"] for r in rows] == [FAILED] and "interrupted" in rows[0]["stderr_tail"]


# -- --within-node: the pairs are this machine's CPUs ---------------------------------

def test_a_pair_of_cpus_is_pinned_by_the_core_and_named_as_its_pair(tmp_path):
    cl = Cores([0, 3, 5])
    assert cl.node_names() == ["cpu0", "cpu3", "cpu5"]
    v = cl.pair(2, 0, "at once")
    launch = v.launch(OMPI, Placement(1, 2), "/cs-core", ["--bench", "bw"], tmp_path, 8, True)
    assert launch.env == {"COMMSCOPE_PIN": "cpus:5,0"}
    assert launch.argv[launch.argv.index("--bind-to") + 1] == "none"  # the core pins, alone
    assert dict(v.config_extra()) == {"pair": "cpu5/cpu0", "pairs": "at once"}
    assert v.not_taken(SimpleNamespace(cpus=("5", "0"))) == ""
    for cpus in (("0", "5"), ("0-7", "0-7"), ()):
        assert v.not_taken(SimpleNamespace(cpus=cpus)).startswith(
            f"its ranks ran on CPUs {'; '.join(cpus) or 'not reported'}, not on 5 and 0"), cpus
    assert "not reported" in v.not_taken(None)
    assert cl.not_taken(None) == ""  # not a pair: nothing asked


@pytest.mark.mpi
@pytest.mark.parametrize("impl", ["openmpi", "mpich"])
def test_every_pair_of_cpus_ran_on_its_two_cpus(capsys, tmp_path, impl):
    """Two ranks pinned to each ordered pair of this machine's CPUs, as each
    record's header says (each rank's allowed CPUs).  Noise policy: what is
    asserted is where the ranks ran and what was stored, never a time."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no pair")
    cpus = cpus[:3]  # three CPUs at most: six jobs
    db = tmp_path / "m.db"
    # under Open MPI each pair sampled 0.05 s at least, its longest sample judged too
    stall = ["--stall-time", "0.05"] if impl == "openmpi" else []
    rc = cli.main(["matrix", "--within-node", "--cpus", ",".join(map(str, cpus)), "--mpi", impl,
                   "--repeat", "1", "--quiet", "--bw-size", "64K", "--db", str(db), *stall])
    out = capsys.readouterr().out
    assert rc == 0, out
    lat = Store(db, create=False).db.execute(
        "SELECT wall_s FROM results WHERE bench = 'latency'").fetchall()
    assert lat and all(r["wall_s"] >= 0.05 for r in lat) or not stall, [tuple(r) for r in lat]
    assert ("longest stall at 8 B (latency)" in out) == bool(stall), out
    rows = Store(db, create=False).db.execute("SELECT header, config, status FROM runs"
                                              ).fetchall()
    ran = {json.loads(r["config"])["extra"]["pair"]: json.loads(r["header"])["cpus"]
           for r in rows}
    assert ran == {f"cpu{a}/cpu{b}": [str(a), str(b)] for a in cpus for b in cpus if a != b}
    assert {r["status"] for r in rows} == {"ok"}
    assert f"local: {len(cpus)} CPUs" in out, out


SLEEPER = '''
import sys
from pathlib import Path
from commscope.measure import runner
from commscope.measure.build import Core
from commscope.measure.cluster import Cores, Launch
from commscope.measure.mpi import MpiImpl
from commscope.measure.plan import CoreOptions, Job
from commscope.measure.cluster import Placement
from commscope.measure.progress import Progress
from commscope.store.db import Store

class Sleeps(Cores):  # a pair whose job runs long: what a Ctrl-C cuts short
    def launch(self, *a, **k):
        return Launch(["sleep", "61.25"])

    def pair(self, i, j, mode=""):
        v = Sleeps([self.cpus[i], self.cpus[j]])
        v.between, v.mode = (f"cpu{i}", f"cpu{j}"), mode
        return v

impl = MpiImpl("openmpi", "openmpi", "/usr/bin/mpicc", "/usr/bin/mpirun", "debian")
core = Core(impl, Path("/nonexistent/cs-core"), "id", {"mpi_library": "x"}, ())
cl = Sleeps([0, 1, 2, 3])
wave = [Job(core, "bw", Placement(1, 2), CoreOptions(sizes="8"), cluster=cl.pair(i, j, "at once"))
        for i, j in ((0, 1), (2, 3))]
print("started", flush=True)
runner.run_at_once([wave], Store(sys.argv[1]), argv=["matrix"], timeout_s=120,
                   policy=runner.NoisePolicy(), progress=Progress(2, enabled=False))
'''


@pytest.mark.parametrize("who", ["group", "parent"])
def test_an_interrupted_wave_stops_every_job_and_keeps_the_store(tmp_path, who):
    """Ctrl-C at a terminal reaches commscope's process group, which each
    job's process has left; a SIGINT to commscope alone reaches it too: the
    parent tells each job's process once.  Either way every job of the wave
    is killed within seconds and stored as interrupted, and the store opens."""
    import signal
    import subprocess
    import sys

    db = tmp_path / "s.db"
    p = subprocess.Popen([sys.executable, "-c", SLEEPER, str(db)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # as from a terminal: a suite run in the background hands SIGINT
                         # down ignored, and Python keeps an ignored SIGINT ignored
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 60
    while not (db.exists() and db.stat().st_size and Store(db, create=False).db.execute(
            "SELECT COUNT(*) FROM runs").fetchone()[0] == 2):  # both jobs stored as running
        assert time.monotonic() < deadline, "the wave's jobs never began"
        time.sleep(0.1)
    time.sleep(0.5)
    t0 = time.monotonic()
    if who == "group":
        os.killpg(p.pid, signal.SIGINT)
    else:
        os.kill(p.pid, signal.SIGINT)
    p.wait(timeout=30)
    took = time.monotonic() - t0
    assert took < 25, took  # told at once; each kills its sleep (SIGTERM) and stores it
    rows = Store(db, create=False).db.execute("SELECT status, stderr_tail FROM runs").fetchall()
    assert [(r["status"], r["stderr_tail"]) for r in rows] == [
        (FAILED, "interrupted by the user")] * 2
    left = subprocess.run(["pgrep", "-f", "sleep 61.25"], capture_output=True,
                          text=True).stdout
    assert not left.strip(), left


def test_what_within_node_refuses_is_one_line(capsys, tmp_path):
    db = tmp_path / "m.db"
    top = max(os.sched_getaffinity(0))
    for args, says in ((["--cpus", "0-x"], "bad --cpus '0-x'"),
                       (["--cpus", "3-1"], "bad --cpus '3-1'"),
                       (["--cpus", "0,0"], "names a CPU twice"),
                       (["--cpus", str(top + 1)], f"may not run on CPU {top + 1}"),
                       (["--cpus", str(top)], f"--cpus '{top}' names 1 CPU"),
                       (["--cluster", "emu:a"], "not of emu:a's nodes")):
        rc = cli.main(["matrix", "--within-node", *args, "--db", str(db)])
        err = capsys.readouterr().err
        assert rc == 2 and says in err and len(err.strip().splitlines()) == 1, (args, err)
    for args, says in ((["--cpus", "0,1"], "--cpus chooses the CPUs of --within-node"),
                       ([], "--cluster emu:NAME, hostfile:PATH or slurm")):
        rc = cli.main(["matrix", *args, "--db", str(db)])
        err = capsys.readouterr().err
        assert rc == 2 and says in err and len(err.strip().splitlines()) == 1, (args, err)
    assert not db.exists()


@pytest.mark.mpi
def test_pairs_of_cpus_on_two_sockets_are_judged_within_and_across(capsys, tmp_path,
                                                                   monkeypatch):
    """Two CPUs said to be on two sockets: no pair within a socket, the one
    pair across judged on its own.  Noise policy: no time is asserted."""
    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        pytest.skip("one CPU: no pair")
    monkeypatch.setattr(Cores, "sockets", lambda self: {f"cpu{c}": k for k, c in
                                                        enumerate(self.cpus)})
    rc = cli.main(["matrix", "--within-node", "--cpus", ",".join(map(str, cpus)), "--mpi",
                   "openmpi", "--repeat", "1", "--quiet", "--bw-size", "64K",
                   "--db", str(tmp_path / "m.db")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "time of one 64 KiB message, within a socket: no pair measured" in out, out
    across = out.split("  across sockets:\n", 1)[1]  # one pair: no typical to name
    assert across.startswith("  2 CPUs, one pair ("), out


@pytest.mark.mpi
@pytest.mark.parametrize("again", ["ok", "timeout"])
def test_a_pair_that_hung_is_launched_once_more_and_both_tries_are_said(
        capsys, tmp_path, monkeypatch, again):
    """Beside other work a healthy pair under srun once failed and then ran
    into its timeout, and the matrix failed: a pair whose job hung or failed
    is launched once more, alone.  A start-up that hung by chance gets
    through (said, exit 0); a pair that does not carry fails again (said,
    exit 1).  The first try's outcome stands in for the hang here (the
    records of a real job are what the second try measures); its job is run
    for real both times."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no pair")
    real, calls = matrix.run_sweep, []

    def sweep(jobs, *a, **k):
        calls.append(len(jobs))
        outs = real(jobs, *a, **k)
        if len(calls) == 1 or again != "ok":  # the first try of the first pair hangs
            outs[0] = dataclasses.replace(outs[0], status="timeout", message="")
        return outs

    monkeypatch.setattr(matrix, "run_sweep", sweep)
    rc = cli.main(["matrix", "--within-node", "--cpus", f"{cpus[0]},{cpus[1]}", "--repeat", "1",
                   "--quiet", "--bw-size", "64K", "--db", str(tmp_path / "m.db")])
    out = capsys.readouterr().out
    assert calls == [2, 1], calls  # both directions, then the one that hung, alone
    pair = f"cpu{cpus[0]} and cpu{cpus[1]}"
    if again == "ok":
        assert rc == 0 and f"  {pair}: no answer within" in out, out
        assert "; on a second try it got through" in out, out
    else:
        assert rc == 1 and "; again on a second try: no answer within" in out, out
