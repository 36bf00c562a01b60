"""Cluster kinds on fixed data: every launch line (local, hostfile, Slurm,
emulated) for each implementation family, placements, hostfiles, the
transport verdict and the sbatch script.  Nothing here runs MPI."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from commscope import cli
from commscope.errors import CommscopeError
from commscope.measure.cluster import (
    Emulated,
    Hostfile,
    Local,
    Placement,
    Slurm,
    emu,
    parse,
    read_hostfile,
    transport_check,
)
from commscope.measure.cluster.slurm import sbatch_script
from commscope.measure.plan import CoreOptions, expand, placements
from tests.helpers import IMPI, MPICH, OMPI, stub_core

EXE, ARGS = "/cache/cs-core", ["--bench", "latency"]
WORK = Path("/tmp/job")


def fake_emu(nodes: int = 2, link: str = "1gbit") -> emu.EmuCluster:
    pre = emu.prefix("t")
    return emu.EmuCluster(
        name="t", prefix=pre, link=link, subnet=emu.SUBNET, bridge_netns=f"{pre}-br",
        nodes=tuple(emu.Node(i, f"t-n{i}", f"10.77.0.{i + 1}", f"{pre}-n{i}",
                             f"/run/x/n{i}.uts", f"/run/x/n{i}.ipc") for i in range(nodes)),
        agent="/run/x/agent", created_at=0.0)


def test_local_launch_lines_bind_and_allow_root():
    ompi = Local().launch(OMPI, Placement(1, 2), EXE, ARGS, WORK, cores=2, root=True)
    assert ompi.argv == ["/usr/bin/mpirun.openmpi", "-n", "2", "--allow-run-as-root",
                         "--bind-to", "core", "--map-by", "core", EXE, *ARGS]
    mpich = Local().launch(MPICH, Placement(1, 2), EXE, ARGS, WORK, cores=2, root=True)
    assert mpich.argv == ["/usr/bin/mpiexec.mpich", "-n", "2", "-bind-to", "core", EXE, *ARGS]
    assert not ompi.files and not mpich.files
    with pytest.raises(CommscopeError, match="local cluster is one node"):
        Local().check(OMPI, Placement(2, 1))


def test_hostfile_launch_lines_translate_the_hostfile(tmp_path):
    hf = tmp_path / "hosts"
    hf.write_text("# the rack\nnodeA slots=4\nnodeB:4\n\nnodeC   # spare\n")
    c = parse(f"hostfile:{hf}")
    assert isinstance(c, Hostfile) and c.label == f"hostfile:{hf}" and c.size() == 3
    ompi = c.launch(OMPI, Placement(2, 2), EXE, ARGS, WORK, cores=2, root=False)
    assert ompi.argv == ["/usr/bin/mpirun.openmpi", "-n", "4", "--hostfile",
                         str(WORK / "hostfile"), "--map-by", "ppr:2:node", "--bind-to", "core",
                         EXE, *ARGS]
    assert ompi.files == {"hostfile": "nodeA slots=2\nnodeB slots=2\n"}
    mpich = c.launch(MPICH, Placement(2, 2), EXE, ARGS, WORK, cores=2, root=True)
    assert mpich.argv == ["/usr/bin/mpiexec.mpich", "-n", "4", "-f", str(WORK / "hostfile"),
                          "-ppn", "2", "-bind-to", "core", EXE, *ARGS]
    assert mpich.files == {"hostfile": "nodeA:2\nnodeB:2\n"}
    intel = c.launch(IMPI, Placement(3, 1), EXE, ARGS, WORK, cores=2, root=True)
    assert intel.argv[:7] == ["/x/bin/mpiexec", "-n", "3", "-f", str(WORK / "hostfile"),
                              "-ppn", "1"]
    with pytest.raises(CommscopeError, match="has 3 node"):
        c.check(OMPI, Placement(4, 1))


def test_bad_hostfiles_get_one_clear_error(tmp_path):
    with pytest.raises(CommscopeError, match="cannot read hostfile"):
        read_hostfile(tmp_path / "none")
    (tmp_path / "empty").write_text("# nothing\n")
    with pytest.raises(CommscopeError, match="names no host"):
        read_hostfile(tmp_path / "empty")
    (tmp_path / "bad").write_text("nodeA slots=2\nnode B C\n")
    with pytest.raises(CommscopeError, match="bad:2: not a hostfile line"):
        read_hostfile(tmp_path / "bad")


def test_slurm_launch_lines_pick_the_pmi_plugin(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    s = parse("slurm")
    assert isinstance(s, Slurm) and s.label == "slurm"
    ompi = s.launch(OMPI, Placement(2, 4), EXE, ARGS, WORK, cores=2, root=True)
    assert ompi.argv == ["srun", "--mpi=pmix", "--nodes=2", "--ntasks-per-node=4",
                         "--ntasks=8", "--cpu-bind=cores", "--kill-on-bad-exit=1",
                         "--job-name=commscope", EXE, *ARGS]
    mpich = s.launch(MPICH, Placement(1, 2), EXE, ARGS, WORK, cores=2, root=True)
    assert mpich.argv[:2] == ["srun", "--mpi=pmi2"]
    with pytest.raises(CommscopeError, match="no srun PMI plugin known for intel"):
        s.check(IMPI, Placement(1, 2))
    m = parse("slurm:mpirun")
    with pytest.raises(CommscopeError, match="inside an allocation"):
        m.check(OMPI, Placement(1, 2))
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "3")
    m.check(OMPI, Placement(3, 1))
    assert m.default_nodes(2) == 3
    assert m.launch(OMPI, Placement(3, 2), EXE, ARGS, WORK, cores=2, root=True).argv == [
        "/usr/bin/mpirun.openmpi", "--allow-run-as-root", "-n", "6", "--map-by", "ppr:2:node",
        "--bind-to", "core", EXE, *ARGS]
    assert m.launch(MPICH, Placement(3, 2), EXE, ARGS, WORK, cores=2, root=True).argv == [
        "/usr/bin/mpiexec.mpich", "-launcher", "slurm", "-rmk", "slurm", "-n", "6", "-ppn", "2",
        "-bind-to", "core", EXE, *ARGS]
    with pytest.raises(CommscopeError, match="has 3 node"):
        m.check(OMPI, Placement(4, 1))


def test_emulated_launch_lines_run_inside_the_first_node():
    c = Emulated(state=fake_emu(nodes=4))
    assert c.label == "emu:t" and c.size() == 4 and c.default_nodes(2) == 2
    enter = ["nsenter", f"--net=/run/netns/{emu.prefix('t')}-n0", "--uts=/run/x/n0.uts",
             "--ipc=/run/x/n0.ipc", "--"]
    ompi = c.launch(OMPI, Placement(2, 1), EXE, ARGS, WORK, cores=2, root=True)
    assert ompi.argv[:5] == enter
    inner = ompi.argv[5:]
    assert inner[:4] == ["/usr/bin/mpirun.openmpi", "--allow-run-as-root", "-n", "2"]
    joined = " ".join(inner)
    for part in ("--hostfile /tmp/job/hostfile", "--map-by ppr:1:node", "--bind-to none",
                 "--mca plm_rsh_agent /run/x/agent", "--mca pml ob1",
                 "--mca btl self,vader,tcp", f"--mca btl_tcp_if_include {emu.SUBNET}",
                 f"--mca oob_tcp_if_include {emu.SUBNET}", "-x COMMSCOPE_PIN"):
        assert part in joined
    assert "mpi_yield_when_idle" not in joined
    assert inner[-3:] == [EXE, *ARGS]
    assert ompi.env == {"COMMSCOPE_PIN": "machine"}
    assert ompi.files == {"hostfile": "10.77.0.1 slots=1\n10.77.0.2 slots=1\n"}
    # four ranks on two cores: Open MPI is told to yield
    over = c.launch(OMPI, Placement(4, 1), EXE, ARGS, WORK, cores=2, root=True)
    assert "mpi_yield_when_idle" in over.argv and c.oversubscribed(Placement(4, 1), 2)
    mpich = c.launch(MPICH, Placement(2, 2), EXE, ARGS, WORK, cores=2, root=True)
    assert mpich.argv[:5] == enter
    assert mpich.argv[5:] == [
        "/usr/bin/mpiexec.mpich", "-n", "4", "-f", "/tmp/job/hostfile", "-ppn", "2",
        "-launcher", "ssh", "-launcher-exec", "/run/x/agent", "-iface", "eth0",
        "-genv", "COMMSCOPE_PIN", "machine", "-genv", "UCX_NET_DEVICES", "eth0", EXE, *ARGS]
    assert mpich.files == {"hostfile": "10.77.0.1:2\n10.77.0.2:2\n"}
    with pytest.raises(CommscopeError, match="not intel"):
        c.check(IMPI, Placement(2, 1))
    with pytest.raises(CommscopeError, match="has 4 node"):
        c.check(OMPI, Placement(5, 1))


def test_agent_script_maps_names_and_addresses_to_nodes(tmp_path):
    """The agent is run by sh with what an MPI launcher passes to ssh: the
    options are skipped, the host picks the namespaces, the rest runs."""
    c = fake_emu(nodes=2)
    script = emu.agent_script(c)
    # replace nsenter by echo to see what would run, without namespaces
    (tmp_path / "agent").write_text(script.replace("exec nsenter", "exec echo nsenter"))

    def agent(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(["sh", str(tmp_path / "agent"), *argv], capture_output=True,
                              text=True, check=False)

    p = agent("-x", "10.77.0.2", "orted", "-mca", "ess", "env")
    assert p.returncode == 0
    assert p.stdout.split() == ["nsenter", f"--net=/run/netns/{emu.prefix('t')}-n1",
                                "--uts=/run/x/n1.uts", "--ipc=/run/x/n1.ipc", "--", "/bin/sh",
                                "-c", "orted", "-mca", "ess", "env"]
    assert agent("-o", "StrictHostKeyChecking=no", "t-n0", "true").stdout.split()[1].endswith(
        "-n0")
    bad = agent("10.77.0.9", "true")
    assert bad.returncode == 255 and "no node 10.77.0.9" in bad.stderr


def test_placements_spread_and_divide():
    emu2 = Emulated(state=fake_emu(nodes=2))
    assert placements(Local(), [2, 4], [], []) == [Placement(1, 2), Placement(1, 4)]
    assert placements(emu2, [2], [], []) == [Placement(2, 1)]
    assert placements(emu2, [4], [1, 2], []) == [Placement(1, 4), Placement(2, 2)]
    assert placements(emu2, [], [], [2]) == [Placement(2, 2)]
    assert placements(emu2, [], [1], [1, 2]) == [Placement(1, 1), Placement(1, 2)]
    with pytest.raises(CommscopeError, match="does not divide over 2 nodes"):
        placements(emu2, [3], [2], [])
    with pytest.raises(CommscopeError, match="not both"):
        placements(emu2, [2], [], [1])


def test_jobs_carry_cluster_and_placement_into_their_keys():
    emu2 = Emulated(state=fake_emu(nodes=2))
    local = expand([stub_core(OMPI)], ["latency"], [2], CoreOptions())[0]
    spread = expand([stub_core(OMPI)], ["latency"], [], CoreOptions(), emu2, [Placement(2, 1)])[0]
    packed = expand([stub_core(OMPI)], ["latency"], [], CoreOptions(), emu2, [Placement(1, 2)])[0]
    assert local.np == spread.np == packed.np == 2
    assert len({local.plan_key(), spread.plan_key(), packed.plan_key()}) == 3
    assert "on emu:t (2x1)" in spread.label
    with pytest.raises(CommscopeError, match="runs on one node"):
        expand([stub_core(OMPI)], ["latency"], [], CoreOptions(transport="chan"), emu2,
               [Placement(2, 1)])


def test_parse_refuses_unknown_clusters():
    for bad in ("cloud", "emu:", "hostfile:", "local:x", "slurm:ssh"):
        with pytest.raises(CommscopeError):
            parse(bad)
    with pytest.raises(CommscopeError, match="bad cluster name"):
        parse("emu:Bad-Name")


def test_transport_verdicts():
    one, two = Placement(1, 2), Placement(2, 1)
    quiet = transport_check(one, {"a": 100}, {"a": 300}, 10_000_000)
    assert quiet["verdict"] == "shared memory" and quiet["ok"]
    loud = transport_check(one, {"a": 0}, {"a": 5_000_000}, 10_000_000)
    assert loud["verdict"] == "network inside one node" and not loud["ok"]
    net = transport_check(two, {"a": 0, "b": 0}, {"a": 6_000_000, "b": 6_000_000}, 10_000_000)
    assert net["verdict"] == "network between nodes" and net["link_bytes"]["b"] == 6_000_000
    short = transport_check(two, {"a": 0, "b": 0}, {"a": 1000, "b": 1000}, 10_000_000)
    assert not short["ok"]
    assert transport_check(two, None, None, 10) is None


def test_tbf_parameters_follow_the_rate():
    g = emu.PROFILES["1gbit"].tbf_args()
    assert g[:3] == ["tbf", "rate", "1000000000bit"]
    assert dict(zip(g[3::2], g[4::2], strict=True)) == {"burst": "125000", "limit": "2500000",
                                           "overhead": "24", "mpu": "84"}
    f = emu.PROFILES["100mbit"].tbf_args()
    assert dict(zip(f[3::2], f[4::2], strict=True))["burst"] == "12500"
    assert emu.PROFILES["unshaped"].rate_bps is None


def test_sbatch_script_quotes_and_refuses_what_it_sets(tmp_path):
    text = sbatch_script(nodes=2, ppn=4, time_min=20, run_args=["--bench", "latency; rm -rf /"],
                         db="/data/my db.sqlite", partition="short", python="/venv/bin/python")
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --time=20\n" in text
    assert "#SBATCH --partition=short" in text
    exec_line = next(ln for ln in text.splitlines() if ln.startswith("exec "))
    assert shlex.split(exec_line)[1:] == [
        "/venv/bin/python", "-m", "commscope.cli", "run", "--cluster", "slurm", "--nodes", "2",
        "--ppn", "4", "--db", "/data/my db.sqlite", "--bench", "latency; rm -rf /"]
    with pytest.raises(CommscopeError, match="set by the script"):
        sbatch_script(nodes=1, ppn=1, time_min=1, run_args=["--np", "4"], db="x")


def test_slurm_script_command_checks_the_sweep(tmp_path, capsys):
    out = tmp_path / "job.sh"
    assert cli.main(["slurm", "script", "--nodes", "1", "--ppn", "2", "--out", str(out),
                     "--", "--bench", "latency", "--sizes", "8"]) == 0
    assert out.read_text().startswith("#!/bin/bash") and out.stat().st_mode & 0o100
    capsys.readouterr()
    assert cli.main(["slurm", "script", "--nodes", "1", "--", "--sizes", "huge"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0]


def test_cluster_commands_refuse_without_root(monkeypatch, capsys):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert cli.main(["cluster", "up", "--nodes", "2", "--name", "x"]) == 2
    assert cli.main(["cluster", "down", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("needs root" in e for e in err)


def test_a_slurm_pair_is_placed_by_its_own_order_and_known_by_its_nodes_host_names(
        tmp_path, monkeypatch):
    """A matrix's pair under srun: the environment's SLURM_HOSTFILE (which
    the arbitrary distribution reads where it is set) is taken out of the
    step's; its ranks' host names are the nodes' where they are the node
    names, their full domain names, or the NodeHostName Slurm knows them by;
    a rank elsewhere fails the job."""
    from types import SimpleNamespace

    from commscope.measure import cluster as cl

    v = Slurm("srun")
    v.between = ("n1", "n2")
    argv = v.launch(MPICH, Placement(2, 1), "/cs-core", [], tmp_path, 2, True).argv
    assert argv[:6] == ["env", "-u", "SLURM_HOSTFILE", "-u", "SLURM_DISTRIBUTION", "srun"]
    assert "--nodelist=n1,n2" in argv and "--distribution=arbitrary" in argv
    plain = Slurm("srun").launch(MPICH, Placement(2, 1), "/cs-core", [], tmp_path, 2, True)
    assert plain.argv[0] == "srun"  # not a pair: the user's environment as it is
    monkeypatch.setattr(cl, "_HOSTNAMES", {"n1": "compute-17.site", "n2": "compute-18.site"})
    for hosts in (("n1", "n2"), ("n1.cluster.local", "n2.cluster.local"),
                  ("compute-17", "compute-18.site")):
        assert v.not_taken(SimpleNamespace(hosts=hosts)) == "", hosts
    for hosts in (("n2", "n1"), ("n1", "n3"), ("compute-18", "compute-17"), ()):
        assert "the pair's placement not taken" in v.not_taken(SimpleNamespace(hosts=hosts))
