"""Slurm for real: a single-node Slurm from Debian's packages, started by
the suite (tests/slurm_local.py), commscope jobs through srun with each
implementation's PMI plugin, through the implementation's launcher inside
an allocation, and through a generated sbatch script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from commscope import cli
from commscope.store.db import Store
from tests import slurm_local
from tests.conftest import mpi_processes
from tests.helpers import C_DIR

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(os.geteuid() != 0, reason="the test Slurm runs its daemons as root"),
    pytest.mark.skipif(slurm_local.missing() is not None,
                       reason=str(slurm_local.missing()) + " (`make test` installs them)"),
]
FAST = ["--sizes", "8:4K", "--factor", "512", "--min-samples", "5", "--time-cap", "0.1",
        "--min-time", "0.01", "--quiet"]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, cores):
    s = slurm_local.LocalSlurm(tmp_path_factory.mktemp("slurm"), cpus=os.cpu_count() or 2)
    s.start()
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(s.conf)
    try:
        yield s
    finally:
        s.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def squeue() -> str:
    return subprocess.run(["squeue", "-h"], capture_output=True, text=True, timeout=20,
                          check=True).stdout.strip()


def job_end(job_id: str, timeout: float) -> tuple[str, str]:
    """A batch job's final state and exit code, asked of the controller
    every half second (it keeps an ended job for MinJobAge, 300 s)."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True,
                             text=True, timeout=20, check=True).stdout
        f = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
        if f.get("JobState") not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            return f.get("JobState", "?"), f.get("ExitCode", "?")
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], check=False)
            pytest.fail(f"batch job {job_id} still {f.get('JobState')} after {timeout} s")
        time.sleep(0.5)


def test_srun_runs_both_mpis_with_their_pmi_plugin(slurm, cores, tmp_path):
    # noise policy: this checks the plugin and the records, not the time; beside
    # a busy loop Open MPI's job under srun took 47 s once and passed 60 s once
    db = tmp_path / "srun.db"
    mpis = [x for m in cores for x in ("--mpi", m)]
    assert cli.main(["run", "--no-advise", "--db", str(db), "--cluster", "slurm", "--np", "2",
                     "--bench", "latency,allreduce", "--timeout", "240", *mpis, *FAST]) == 0
    runs = Store(db).runs()
    assert len(runs) == len(cores)  # latency and allreduce in one launch
    plugin = {"openmpi": "--mpi=pmix", "mpich": "--mpi=pmi2"}
    for r in runs:
        assert r["status"] == "ok" and r["cluster"] == "slurm", dict(r)
        argv = json.loads(r["launch_argv"])
        assert argv[:2] == ["srun", plugin[r["mpi_family"]]]
        assert json.loads(r["placement"])["kind"] == "slurm"
        assert json.loads(r["header"])["np"] == 2
    assert {x["size_bytes"] for x in Store(db).result_rows()} == {8, 4096}
    # noise policy: a finished job may show as completing (CG) while slurmd cleans up;
    # beside a busy loop it did once, right after the run: it must be gone within 30 s
    deadline = time.monotonic() + 30
    while squeue() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue() == ""


def test_the_implementations_launcher_inside_an_allocation(slurm, cores, tmp_path):
    db = tmp_path / "alloc.db"
    p = subprocess.run(
        ["salloc", "--nodes=1", "--ntasks=2", sys.executable, "-m", "commscope.cli", "run",
         "--db", str(db), "--cluster", "slurm:mpirun", "--np", "2", "--bench", "latency",
         "--timeout", "60", *[x for m in cores for x in ("--mpi", m)], *FAST],
        capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    runs = Store(db).runs()
    assert len(runs) == len(cores)
    for r in runs:
        assert r["status"] == "ok" and r["cluster"] == "slurm:mpirun", dict(r)
        assert json.loads(r["launch_argv"])[0] != "srun"
        assert json.loads(r["placement"])["job_id"]


def test_sbatch_script_runs_the_sweep(slurm, cores, tmp_path):
    db = tmp_path / "batch.db"
    script = tmp_path / "sweep.sh"
    assert cli.main(["slurm", "script", "--nodes", "1", "--ppn", "2", "--time", "5", "--db",
                     str(db), "--out", str(script), "--", "--bench", "latency", "--timeout",
                     "60", *[x for m in cores for x in ("--mpi", m)], *FAST]) == 0
    # not `sbatch --wait`: it sleeps 2, 8, then 32 s between its looks at the
    # job (Slurm 22.05's sbatch.c), so a 15 s job is seen done after 42 s
    p = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    job_id = p.stdout.strip().split(";")[0]
    state, code = job_end(job_id, timeout=300)
    assert (state, code) == ("COMPLETED", "0:0"), (state, code, "".join(
        f.read_text() for f in tmp_path.glob("commscope-*.out")))
    assert (tmp_path / f"commscope-{job_id}.out").exists()
    runs = Store(db).runs()
    assert len(runs) == len(cores)
    for r in runs:
        assert r["status"] == "ok" and r["cluster"] == "slurm", dict(r)
        assert json.loads(r["placement"])["job_id"] == job_id


def test_a_hung_srun_job_is_killed_with_its_step(slurm, cores, tmp_path):
    db = tmp_path / "hang.db"
    name = "openmpi" if "openmpi" in cores else next(iter(cores))
    t0 = time.monotonic()
    # noise policy: the job should reach the hang before its time limit, through
    # an allocation, srun's launch and two sizes; beside a busy loop 8 s was
    # not enough once (killed before the first size), so it gets 30, and with
    # both cores busy even 30 s once ended it during the second size: what
    # must hold is that what ended before the kill is kept and nothing after
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--cluster", "slurm", "--np", "2", "--mpi", name,
                   "--bench", "latency", "--inject", "hang@512", "--timeout", "30", *FAST[2:],
                   "--sizes", "8:4K", "--factor", "8"])
    assert rc == 1 and time.monotonic() - t0 < 120
    (run,) = Store(db).runs()
    assert run["status"] == "timeout"
    kept = {x["size_bytes"] for x in Store(db).result_rows()}
    assert 8 in kept and kept <= {8, 64}, kept
    deadline = time.monotonic() + 30
    while (squeue() or mpi_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue() == "" and mpi_processes() == []


def test_a_users_program_profiled_under_srun(slurm, cores, tmp_path, capsys, monkeypatch):
    """commscope profile --cluster slurm: srun hands its own environment to
    its tasks, the profiler's library with it; every rank's profile comes
    back, and the store says where it ran.  Noise policy: correctness only."""
    family = "mpich" if "mpich" in cores else sorted(cores)[0]
    exe = tmp_path / "profiled"
    subprocess.run([cores[family].impl.mpicc, "-O2", "-o", str(exe),
                    str(C_DIR / "profiled.c")], check=True,
                   capture_output=True)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "p.db"
    capsys.readouterr()
    rc = cli.main(["profile", "--db", str(db), "--cluster", "slurm", "--np", "2", "--timeout",
                   "120", "--", str(exe)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "2 processes on slurm (1 node): ok" in out, out
    (p,) = Store(db).profiles()
    argv = json.loads(p["launch_argv"])
    assert argv[0] == "srun" and any(x.startswith("--export=ALL,LD_PRELOAD=") for x in argv)
    data = json.loads(p["data"])
    assert data["cluster"] == "slurm" and len(data["ranks"]) == 2
    assert all(r["calls"] for r in data["ranks"])
