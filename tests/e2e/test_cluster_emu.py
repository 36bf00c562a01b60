"""Emulated clusters, for real: namespaces, shaped links, both MPIs across
nodes, the transport each used, teardown, and a rank killed mid-run.
Needs root (CI runs as root); elsewhere it skips with the reason."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from commscope import cli
from commscope.measure.cluster import emu
from commscope.store.db import Store
from tests.conftest import mpi_processes, shm_left
from tests.helpers import C_DIR

TOOLS = ("ip", "tc", "nsenter", "unshare", "ethtool")
pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated clusters need root (namespaces)"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                       reason=f"needs {', '.join(TOOLS)} (`make test` installs them)"),
]
FAST = ["--min-samples", "5", "--time-cap", "0.1", "--min-time", "0.01", "--quiet"]
TAG = f"t{os.getpid() % 100000}"


def host_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip() for line in out.splitlines()}


def ours() -> list[str]:
    return [p.name for p in emu.NETNS_DIR.glob(f"{emu.prefix(TAG)}*")]


@pytest.fixture(scope="module")
def two(cores):
    links = host_links()
    name = f"{TAG}a"
    assert cli.main(["cluster", "up", "--nodes", "2", "--link", "1gbit", "--name", name]) == 0
    yield name
    emu.down(name)
    assert host_links() == links


@pytest.fixture(scope="module")
def four(cores):
    name = f"{TAG}b"
    assert cli.main(["cluster", "up", "--nodes", "4", "--name", name]) == 0
    yield name
    emu.down(name)


def runs_of(db) -> list[dict]:
    return [dict(r) for r in Store(db).runs()]


def test_nodes_have_their_own_names_addresses_and_links(two):
    c = emu.load(two)
    assert [n.hostname for n in c.nodes] == [f"{two}-n0", f"{two}-n1"]
    for n in c.nodes:
        name = subprocess.run([*n.nsenter(), "hostname"], capture_output=True, text=True,
                              check=True).stdout.strip()
        assert name == n.hostname
        addr = subprocess.run(["ip", "-n", n.netns, "-o", "-4", "addr", "show", "dev", "eth0"],
                              capture_output=True, text=True, check=True).stdout
        assert f"{n.address}/24" in addr
        qdisc = subprocess.run(["tc", "-n", n.netns, "qdisc", "show", "dev", "eth0"],
                               capture_output=True, text=True, check=True).stdout
        assert "tbf" in qdisc and "rate 1Gbit" in qdisc
    # a second cluster of the same name is refused, and nothing changes
    before = sorted(ours())
    assert cli.main(["cluster", "up", "--nodes", "2", "--name", two]) == 2
    assert sorted(ours()) == before


def test_across_two_nodes_both_mpis_use_tcp_and_inside_one_shared_memory(two, cores, tmp_path):
    db = tmp_path / "emu.db"
    mpis = [x for m in cores for x in ("--mpi", m)]
    common = ["--db", str(db), "--bench", "latency,allreduce", "--sizes", "8:64K", "--factor",
              "64", "--timeout", "60", "--no-advise", *mpis, *FAST]
    assert cli.main(["run", "--cluster", f"emu:{two}", "--cluster", "local", "--np", "2",
                     *common]) == 0
    assert cli.main(["run", "--cluster", f"emu:{two}", "--nodes", "1", "--ppn", "2",
                     *common]) == 0
    runs = runs_of(db)
    assert len(runs) == 3 * len(cores)  # one launch per implementation and placement
    seen = set()
    for r in runs:
        assert r["status"] == "ok", r
        place = json.loads(r["placement"])
        hosts = json.loads(r["header"])["hosts"]
        if r["cluster"] == "local":
            assert place["kind"] == "local" and r["transport_check"] is None
            continue
        check = json.loads(r["transport_check"])
        assert place["kind"] == "emu" and place["link"] == "1gbit"
        assert json.loads(r["launch_argv"])[0] == "nsenter"
        if place["nodes"] == 2:
            assert hosts == [f"{two}-n0", f"{two}-n1"] and r["nodes"] == 2
            assert check["verdict"] == "network between nodes" and check["ok"], check
            assert min(check["link_bytes"].values()) >= check["payload_bytes"] > 0
        else:
            assert hosts == [f"{two}-n0"] * 2 and r["nodes"] == 1
            assert check["verdict"] == "shared memory" and check["ok"], check
        seen.update((r["mpi_name"], b, place["nodes"]) for b in r["bench"].split(","))
    assert seen == {(m, b, n) for m in cores for b in ("latency", "allreduce") for n in (1, 2)}
    # latency across the 1gbit link is well above latency through shared memory
    rows = Store(db).result_rows()
    lat = {(r["mpi_name"], r["cluster"], r["nodes"]): r["median_us"] for r in rows
           if r["bench"] == "latency" and r["size_bytes"] == 8}
    for m in cores:
        assert lat[(m, f"emu:{two}", 2)] > 3 * lat[(m, f"emu:{two}", 1)]
    # show puts the clusters side by side in one table
    out = subprocess.run([sys.executable, "-m", "commscope.cli", "show", "--db", str(db),
                          "--bench", "latency"], capture_output=True, text=True, check=True)
    # the table's header: the line after its title (the legend comes first)
    lines = out.stdout.splitlines()
    head = lines[next(i for i, x in enumerate(lines) if x.startswith("latency, ")) + 1]
    for m in cores:
        for col in (f"{m} local", f"{m} emu:{two} 2 nodes", f"{m} emu:{two} "):
            assert col in head


def test_a_slow_link_narrows_the_window_instead_of_running_into_the_timeout(two, cores,
                                                                           tmp_path):
    """64 x 1 MiB take 0.57 s over 1 Gbit/s, and a size must fit five samples
    into its 0.25 s cap: the window narrows from the size where it would not."""
    m = sorted(cores)[0]
    # Noise policy: Debian's MPICH (ch4:ucx, UCX over TCP) between two emulated
    # nodes hangs now and then: before its first record (about once in 50
    # launches), or in MPI_Finalize after its last (4 of 126 launches with both
    # cores busy, none of 25 idle: one rank blocked reading the PMI socket, the
    # other in ucp_worker_progress under MPI_Finalize: a UCX TCP hang of the
    # kind openucx/ucx#8738 reports).  A job killed at its timeout with no record, or
    # after its last ("every record was written"), is launched once more; one that ran
    # into the timeout mid-sweep (the window rule broken) is not, and a second hang fails.
    for attempt in (1, 2):
        db = tmp_path / f"slow{attempt}.db"
        t0 = time.monotonic()
        rc = cli.main(["run", "--no-advise",
                       "--db", str(db), "--cluster", f"emu:{two}", "--np", "2",
                       "--bench", "bw", "--sizes", "4K:1M", "--factor", "4", "--mpi", m,
                       "--timeout", "60", "--quiet"])
        runs = Store(db).runs()
        # a hang, not the window rule running into the timeout: no record, or every one
        hung = runs[-1]["status"] == "timeout" and (
            not Store(db).result_rows() or "every record was written" in runs[-1]["stderr_tail"])
        if rc == 0 or attempt == 2 or not hung:
            break
    assert rc == 0
    assert time.monotonic() - t0 < 60
    rows = {r["size_bytes"]: r for r in Store(db).result_rows()}
    # 256 KiB a window: well inside the budget, and never narrowed like 1 MiB.  Noise
    # policy: the window comes from a message measured at its size, so on a busy
    # machine a descheduled 4 KiB message may narrow it a little (52 beside a busy
    # loop); what must hold is that the narrowing follows the size
    assert rows[4096]["window"] >= 32 and rows[4096]["window"] >= 4 * rows[1 << 20]["window"]
    assert rows[1 << 20]["window"] < 16
    # a Gigabit link where the link bounds it (1 MiB); a small size's rate is the cores'
    # (beside two busy loops a 4 KiB window once fell under 50 MB/s), so only its data.
    # Noise policy: the packets cross the veth pair in this machine's softirqs, so a
    # 1 MiB record flagged noisy (other processes used the CPU: beside a busy loop and
    # another test's jobs, pytest -n 2, it read 43.8 MB/s) need only beat 100 Mbit/s
    big = rows[1 << 20]
    floor = 20 if big["flagged"] else 50
    assert all(r["valid"] for r in rows.values()) and big["mb_per_s"] > floor, dict(big)


def test_both_applications_across_two_emulated_nodes(two, cores, tmp_path):
    # Noise policy, as the slow-link test's: MPICH's job between two emulated nodes
    # hangs now and then, before its first record or in MPI_Finalize after its last
    # (a busy suite run met both); a sweep whose only failures are such timeouts is
    # launched once more
    for attempt in (1, 2):
        db = tmp_path / f"apps{attempt}.db"
        rc = cli.main(["run", "--no-advise", "--db", str(db), "--cluster", f"emu:{two}",
                       "--np", "2", "--bench", "matmul,jacobi", "--param", "N=96", "--timeout",
                       "120", *[x for m in cores for x in ("--mpi", m)], *FAST])
        bad = [r for r in runs_of(db) if r["status"] != "ok"]
        hung = bool(bad) and all(r["status"] == "timeout" and (
            "every record was written" in (r["stderr_tail"] or "")
            or not any(x["run_id"] == r["id"] for x in Store(db).result_rows(latest=False)))
            for r in bad)
        if rc == 0 or attempt == 2 or not hung:
            break
    assert rc == 0
    runs = runs_of(db)
    assert len(runs) == len(cores)
    for r in runs:
        assert r["status"] == "ok" and json.loads(r["transport_check"])["verdict"] == (
            "network between nodes"), r
    rows = Store(db).result_rows()
    assert {(x["mpi_name"], x["bench"]) for x in rows} == {
        (m, b) for m in cores for b in ("matmul", "jacobi")}
    assert all(x["valid"] and x["nodes"] == 2 and json.loads(x["phases"]) for x in rows)


def test_a_users_program_profiled_across_two_emulated_nodes(two, cores, tmp_path, capsys,
                                                           monkeypatch):
    """commscope profile --cluster: the profiler reaches the ranks of every
    node (mpirun -x, Hydra -genv), each rank's file says its node, the
    store says where it ran, and the folder the ranks wrote in is gone.
    Noise policy: correctness only; MPICH's rare hang between emulated
    nodes (MPI_Finalize, above) is run once more."""
    src = C_DIR / "profiled.c"
    monkeypatch.chdir(tmp_path)  # the ranks write in a folder under the program's own
    for family, core in sorted(cores.items()):
        exe = tmp_path / f"profiled-{family}"
        subprocess.run([core.impl.mpicc, "-O2", "-g", "-o", str(exe), str(src)], check=True,
                       capture_output=True)
        db = tmp_path / f"profile-{family}.db"
        for attempt in (1, 2):
            capsys.readouterr()
            rc = cli.main(["profile", "--db", str(db), "--cluster", f"emu:{two}", "--np", "2",
                           "--timeout", "60", "--", str(exe)])
            out = capsys.readouterr().out
            last = Store(db).profiles()[-1]
            if rc == 0 or attempt == 2 or last["status"] != "timeout":
                break
        assert rc == 0, out
        assert f"2 processes on emu:{two} (2 nodes): ok" in out, out
        assert f"per node, time inside MPI: {two}-n0 " in out and f"{two}-n1 " in out, out
        data = json.loads(last["data"])
        assert (data["cluster"], data["nodes"], data["ppn"]) == (f"emu:{two}", 2, 1)
        assert sorted(r["host"] for r in data["ranks"]) == [f"{two}-n0", f"{two}-n1"]
        assert all(r["calls"] for r in data["ranks"])
        # handed to the ranks by the launcher: the emulated nodes' agent passes the
        # whole environment on, a real node's ssh does not (this run cannot tell)
        argv = json.loads(last["launch_argv"])
        flag = "-x" if family == "openmpi" else "-genv"
        assert [flag, "COMMSCOPE_PROFILE_DIR"] in [argv[i:i + 2] for i in range(len(argv))]
        assert any(x.startswith("LD_PRELOAD") for x in argv), argv
        assert not list(tmp_path.glob(".commscope-profile-*"))
        # its calls are set against the benchmarks of those nodes: none stored there yet,
        # and the command that measures them on the same nodes, a rank a node
        capsys.readouterr()
        assert cli.main(["analyze", "app", "--db", str(db)]) == 0
        shown = capsys.readouterr().out
        assert f"on emu:{two} 2 nodes" in shown, shown
        assert f"--cluster emu:{two} --nodes 2 --ppn 1 " in shown, shown


def test_four_nodes_p2p_and_collective(four, cores, tmp_path):
    """Four ranks on two cores: correctness only.  Debian's MPICH over UCX
    may hang in MPI_Finalize with more than two ranks over TCP; then the
    timeout must kill it, keep every record it wrote and say so."""
    db = tmp_path / "four.db"
    rc = cli.main(["run", "--no-advise", "--db", str(db), "--cluster", f"emu:{four}", "--np", "4",
                   "--bench", "latency,allreduce", "--sizes", "8:512", "--factor", "64",
                   "--timeout", "40", *[x for m in cores for x in ("--mpi", m)], *FAST])
    runs = runs_of(db)
    assert len(runs) == len(cores)  # latency and allreduce in one launch
    rows = Store(db).result_rows()
    for r in runs:
        assert r["oversubscribed"] == 1 and r["nodes"] == 4
        if r["mpi_family"] == "openmpi":
            assert r["status"] == "ok", r
        else:
            assert r["status"] in ("ok", "timeout"), r
            if r["status"] == "timeout":
                assert "hung in MPI_Finalize" in r["stderr_tail"], r
        kept = sorted((x["bench"], x["size_bytes"]) for x in rows if x["run_id"] == r["id"])
        # every size of both benchmarks measured, also when finalize hung
        assert kept == [("allreduce", 8), ("allreduce", 512), ("latency", 8),
                        ("latency", 512)], r
        hosts = json.loads(r["header"])["hosts"]
        assert sorted(hosts) == [f"{four}-n{i}" for i in range(4)]
        assert json.loads(r["transport_check"])["ok"]
    assert rc == (0 if all(r["status"] == "ok" for r in runs) else 1)
    assert emu.processes_in([emu.NETNS_DIR / n for n in ours()]) == set()
    assert mpi_processes() == []


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_killing_a_rank_mid_run_is_a_failure_and_leaves_nothing(two, cores, tmp_path, family):
    name = next((m for m in cores if m == family), None)
    if name is None:
        pytest.skip(f"{family} not installed")
    db = tmp_path / "kill.db"
    shm_before = set(os.listdir("/dev/shm"))
    node1 = emu.NETNS_DIR / emu.load(two).nodes[1].netns
    proc = subprocess.Popen(
        [sys.executable, "-m", "commscope.cli", "run", "--no-advise", "--db", str(db), "--cluster",
         f"emu:{two}", "--np", "2", "--mpi", name, "--bench", "latency", "--sizes", "1:4M",
         "--time-cap", "1", "--min-time", "0.5", "--timeout", "120", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.monotonic() + 30
    while victim is None and time.monotonic() < deadline:
        for pid in emu.processes_in([node1]):
            try:
                comm = open(f"/proc/{pid}/comm").read().strip()
            except OSError:
                continue
            if comm == "cs-core":
                victim = pid
        time.sleep(0.2)
    assert victim, "no rank appeared in the second node"
    time.sleep(1.0)  # let it measure a few sizes
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 1, err
    (run,) = runs_of(db)
    assert run["status"] in ("failed", "timeout") and run["stderr_tail"], run
    assert "did not finish cleanly" in err
    assert emu.processes_in([emu.NETNS_DIR / n for n in ours()]) == set()
    assert mpi_processes() == []
    # a neighbour's job (two tests at a time) maps its own: shm_left leaves those out
    # (a busy run's Open MPI job beside this MPICH one had two vader segments there)
    assert shm_left(shm_before) == set()


def test_down_removes_everything_and_list_forgets(cores, capsys):
    name = f"{TAG}c"
    links = host_links()
    assert cli.main(["cluster", "up", "--nodes", "2", "--link", "100mbit", "--name", name]) == 0
    c = emu.load(name)
    # something left running inside a node is killed by down
    sleeper = subprocess.Popen([*c.nodes[1].nsenter(), "sleep", "300"])
    capsys.readouterr()
    assert cli.main(["cluster", "list"]) == 0
    assert name in capsys.readouterr().out
    assert cli.main(["cluster", "down", name]) == 0
    assert "1 process(es) left inside were killed" in capsys.readouterr().out
    assert sleeper.wait(timeout=10) != 0
    assert not any(emu.NETNS_DIR.glob(f"{c.prefix}-*"))
    assert not c.state_dir.exists()
    assert host_links() == links
    assert cli.main(["cluster", "list"]) == 0
    assert name not in capsys.readouterr().out
    assert cli.main(["cluster", "down", name]) == 2
    assert "no emulated cluster" in capsys.readouterr().err
