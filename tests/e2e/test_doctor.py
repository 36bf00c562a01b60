"""commscope doctor against real clusters of this machine: an emulated
cluster healthy, then with a node whose link is down (TCP to it fails) and
with a node that sees another core binary at the same path (its own mount
namespace); a hostfile naming a host ssh cannot reach; and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from commscope import cli
from commscope.advise import doctor as doctor_mod
from commscope.measure.cluster import emu
from tests.conftest import mpi_processes
from tests.helpers import one_line_error, run

TOOLS = ("ip", "tc", "nsenter", "unshare", "ethtool")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="emulated clusters need root")
with_tools = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                reason=f"needs {', '.join(TOOLS)} (`make test` installs them)")
TAG = f"d{os.getpid() % 100000}"


@pytest.fixture(scope="module")
def three(cores):
    name = f"{TAG}c"
    assert cli.main(["cluster", "up", "--nodes", "3", "--name", name]) == 0
    yield emu.load(name)
    emu.down(name)


def doctor(capsys, *argv: str) -> tuple[int, list[dict], str]:
    rc, out, err = run(capsys, "doctor", *argv, "--json")
    return rc, json.loads(out) if out.strip() else [], err


def by(checks: list[dict], kind: str) -> dict[str, dict]:
    return {c["where"]: c for c in checks if c["kind"] == kind}


def mpich_or_first(cores) -> str:
    return "mpich" if "mpich" in cores else sorted(cores)[0]


@pytest.mark.mpi
@as_root
@with_tools
def test_a_healthy_cluster_is_ready(capsys, three, cores):
    m = mpich_or_first(cores)
    rc, checks, err = doctor(capsys, "--cluster", f"emu:{three.name}", "--mpi", m)
    # Noise policy: a start-up that hangs by chance (a CI run saw MPICH's ping
    # killed at the time limit once, and never again in 35 tries, busy or idle)
    # is tried once more and reported as a warning that says so; that warning
    # is the only one a healthy cluster may give.  Anything else must be ok.
    assert rc == 0, (err, [c for c in checks if c.get("status") != "ok"])
    hosts = [n.hostname for n in three.nodes]
    assert sorted(by(checks, "reach")) == sorted(hosts)
    assert all(healthy(c) for c in checks), [c for c in checks if c["status"] != "ok"]
    assert sorted(by(checks, "core")) == sorted(hosts)
    assert sorted(by(checks, "tcp")) == sorted(f"{a}-{b}" for i, a in enumerate(hosts)
                                               for b in hosts[i + 1:])
    assert by(checks, "records")[hosts[0]]["status"] == "ok"
    rc, out, err = run(capsys, "doctor", "--cluster", f"emu:{three.name}", "--mpi", m)
    last = out.strip().splitlines()[-1]
    assert rc == 0 and last.startswith("ready: 10 checks,") and " 0 failed" in last, (
        out, err)  # the second look: what failed, if it does


def healthy(c: dict) -> bool:
    return c["status"] == "ok" or (c["kind"] == "tcp" and c["status"] == "warn"
                                   and "on a second try" in c["verdict"])


@pytest.mark.mpi
@as_root
@with_tools
def test_a_node_whose_link_is_down(capsys, three, cores):
    bad = three.nodes[2]
    subprocess.run(["ip", "-n", bad.netns, "link", "set", "eth0", "down"], check=True)
    try:
        rc, checks, _ = doctor(capsys, "--cluster", f"emu:{three.name}", "--mpi",
                               mpich_or_first(cores), "--timeout", "8")
    finally:
        subprocess.run(["ip", "-n", bad.netns, "link", "set", "eth0", "up"], check=True)
    assert rc == 1
    tcp = by(checks, "tcp")
    n0, n1, n2 = (n.hostname for n in three.nodes)
    # the pair whose link is up: ok, or (the healthy cluster's noise policy) a start-up
    # that hung once and got through on a second try (a busy suite run met it)
    assert healthy(tcp[f"{n0}-{n1}"]), tcp[f"{n0}-{n1}"]
    for pair in (f"{n0}-{n2}", f"{n1}-{n2}"):
        assert tcp[pair]["status"] == "fail" and "firewall" in tcp[pair]["fix"], tcp[pair]
    # the agent still reaches it (it is a namespace of this machine): only TCP fails
    assert by(checks, "reach")[n2]["status"] == "ok"
    assert mpi_processes() == []


@pytest.mark.mpi
@as_root
@with_tools
def test_a_node_with_another_core_binary(capsys, three, cores, tmp_path):
    """The node's agent enters a mount namespace of its own in which the
    core's path holds another build, as a host without the shared cache
    would."""
    m = mpich_or_first(cores)
    exe = str(cores[m].exe)
    other = tmp_path / "cs-core"
    other.write_bytes(cores[m].exe.read_bytes() + b"\0another build")
    other.chmod(0o755)
    agent = three.agent
    original = open(agent).read()
    n1 = three.nodes[1].hostname
    shutil.copy(agent, tmp_path / "agent.orig")
    with open(agent, "w") as f:
        f.write(f'#!/bin/sh\nif [ "$1" = {n1} ]; then\n'
                f"  exec unshare -m sh -c 'mount --bind {other} {exe} && exec \"$0\" \"$@\"' "
                f'{tmp_path / "agent.orig"} "$@"\nfi\nexec {tmp_path / "agent.orig"} "$@"\n')
    try:
        rc, checks, _ = doctor(capsys, "--cluster", f"emu:{three.name}", "--mpi", m,
                               "--timeout", "10")
    finally:
        with open(agent, "w") as f:
            f.write(original)
    assert rc == 1
    core = by(checks, "core")
    n0, _, n2 = (n.hostname for n in three.nodes)
    assert core[n1]["status"] == "fail" and "another core binary" in core[n1]["verdict"]
    assert core[n0]["status"] == "ok" and core[n2]["status"] == "ok"
    tcp = by(checks, "tcp")
    # the healthy cluster's noise policy: ok, or a start-up that hung once and got through
    # on a second try (met beside another test's jobs, pytest -n 2)
    assert healthy(tcp[f"{n0}-{n2}"]), tcp[f"{n0}-{n2}"]
    assert tcp[f"{n0}-{n1}"]["status"] == "skip" and tcp[f"{n1}-{n2}"]["status"] == "skip"


@pytest.mark.mpi
def test_a_host_ssh_cannot_reach(capsys, cores, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("nosuchhost.invalid slots=2\n")
    rc, checks, err = doctor(capsys, "--cluster", f"hostfile:{hosts}", "--timeout", "10")
    assert rc == 1, err
    reach = by(checks, "reach")["nosuchhost.invalid"]
    assert reach["status"] == "fail" and "ssh without a password" in reach["verdict"]
    assert "ssh-copy-id nosuchhost.invalid" in reach["fix"]
    assert by(checks, "core")["nosuchhost.invalid"]["status"] == "skip"
    rc, out, _ = run(capsys, "doctor", "--cluster", f"hostfile:{hosts}", "--timeout", "10")
    assert rc == 1 and "NOT ready" in out.splitlines()[-1]
    assert any(ln.startswith("FAIL reach   nosuchhost.invalid: not reachable") and
               "-- fix: give this user a key there" in ln for ln in out.splitlines())


def test_bad_input_is_one_line(capsys, tmp_path, monkeypatch):
    for v in ("SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(v, raising=False)
    for argv, needle in ((["--cluster", "local"], "doctor checks a cluster"),
                         (["--cluster", f"hostfile:{tmp_path / 'none'}"], "cannot read hostfile"),
                         (["--cluster", "slurm"], "not inside a Slurm allocation"),
                         (["--cluster", "emu:nosuch"], "nosuch"),
                         (["--cluster", "emu:x", "--timeout", "0"], "outside")):
        rc, _, err = run(capsys, "doctor", *argv)
        one_line_error(rc, err, needle)


class _Here(doctor_mod.Remote):
    """This machine as a host of the cluster, reached as another user
    (setpriv) or as this one."""

    how = "a local shell"

    def __init__(self, uid: int | None = None) -> None:
        self.uid = uid

    def argv(self, host: str, cmd: list[str]) -> list[str]:
        if self.uid is None:
            return cmd
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", *cmd]

    def unreachable_fix_for(self, host: str) -> str:
        return "-"


@as_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_host_reached_as_another_user_is_a_warning_with_the_fix():
    import pwd

    me = pwd.getpwuid(os.geteuid()).pw_name
    ok = doctor_mod._reach("here", 2, _Here(), 10.0)
    assert ok.status == "ok" and ok.verdict.startswith(f"reachable as {me}, "), ok
    nobody = pwd.getpwnam("nobody")
    other = doctor_mod._reach("here", 2, _Here(nobody.pw_uid), 10.0)
    assert other.status == "warn", other
    assert f"logged in as nobody, not {me}" in other.verdict, other.verdict
    assert other.fix.startswith(f"use the user {me} on every host"), other.fix


def test_a_ping_that_hangs_once_is_tried_again_and_said(monkeypatch):
    """A killed ping is tried once more: got through the second time, a
    warning that names both tries; hung twice, a failure that says so."""
    hung = doctor_mod.Answer(None, "", "[proxy:0@n1] waiting for the first rank\n").why()
    assert hung == ("no answer within the time limit (killed; its last words: "
                    "[proxy:0@n1] waiting for the first rank)"), hung
    tries: list[tuple[bool, str]] = []
    monkeypatch.setattr(doctor_mod, "_ping", lambda *a: tries.pop(0))
    tries[:] = [(False, hung), (True, "11.2 us one way")]
    w = doctor_mod._tcp(None, None, None, "a", "b", 20.0)
    assert w.status == "warn" and not tries, w
    assert w.verdict.startswith("2-rank ping got through on a second try (11.2 us one way); "
                                "the first hung past 20 s: no answer"), w.verdict
    tries[:] = [(False, hung), (False, hung)]
    f = doctor_mod._tcp(None, None, None, "a", "b", 20.0)
    assert f.status == "fail" and "again on a second try: no answer" in f.verdict, f
    tries[:] = [(False, "Connection refused")]  # not a hang: no second try
    r = doctor_mod._tcp(None, None, None, "a", "b", 20.0)
    assert r.status == "fail" and r.verdict == "2-rank ping failed: Connection refused", r
