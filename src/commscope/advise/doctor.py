"""commscope doctor: is a cluster ready for a sweep?

What the cluster studies set up by hand before their first run (a shared
home, the same user, passwordless ssh, the same MPI on every node), checked
in a few seconds, each with a one-line verdict and the fix:

  reach    every host answers without a password (ssh BatchMode, the
           emulated cluster's agent, or srun inside the allocation); its
           core count and its clock against this machine's
  core     the same core binary (sha256) at the same path on every host, and
           the same MPI library behind it; the launcher there too
  records  rank 0 runs on the first host and writes its records into a job
           folder there: that folder must be this machine's, or shared; the
           store's folder writable here
  tcp      a 2-rank zero-byte ping between every pair of hosts, bounded in
           time: a firewall, or an MPI that picks an interface that does
           not reach the other host, fails here rather than in the sweep;
           a ping killed at the time limit is tried once more, and one
           that then gets through is a warning that names the hang

Every remote command is a list (quoted for ssh's and the agent's shell by
shlex, never built from unquoted input) and runs under a time limit; a hung
one is killed with its whole process group."""

from __future__ import annotations

import dataclasses
import json
import os
import pwd
import re
import shlex
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import cluster as cluster_mod
from ..measure import mpi as mpi_mod
from ..measure.build_cache import file_sha256
from ..measure.mpi import MpiImpl
from ..measure.procs import run_captured
from ..store.records import parse_file

CLOCK_TOLERANCE_S = 1.0
MAX_ALL_PAIRS = 16  # hosts up to which every pair is pinged; beyond, a chain and a star


@dataclass(frozen=True)
class Check:
    kind: str  # reach | core | records | tcp
    where: str  # a host, a pair "a-b", or "" for the whole cluster
    status: str  # ok | warn | fail | skip
    verdict: str
    fix: str = ""

    def line(self) -> str:
        fix = f" -- fix: {self.fix}" if self.fix and self.status in ("fail", "warn") else ""
        where = f"{self.where}: " if self.where else ""
        return f"{self.status.upper():<4} {self.kind:<7} {where}{self.verdict}{fix}"


@dataclass(frozen=True)
class Answer:
    rc: int | None  # None: killed at the time limit
    out: str
    err: str

    def why(self) -> str:
        if self.rc is None:
            said = [ln.strip() for ln in (self.err + self.out).splitlines() if ln.strip()]
            last = f"; its last words: {said[-1][:160]}" if said else ", having said nothing"
            return f"no answer within the time limit (killed{last})"
        # launchers frame their reason in banners of dashes: the first line
        # that says what went wrong, else the last that says anything
        lines = [ln.strip() for ln in (self.err + self.out).splitlines()
                 if ln.strip() and not re.fullmatch(r"[-=*#\s]+", ln)]
        telling = [ln for ln in lines if re.search(
            r"error|fail|unable|unreach|refused|timed? ?out|could not|cannot|denied|no route",
            ln, re.I)]
        if telling:
            return telling[0][:200]
        return (lines[-1] if lines else f"exit {self.rc}")[:200]


def bounded(argv: list[str], timeout_s: float, env: dict[str, str] | None = None,
            cwd: str | None = None) -> Answer:
    try:
        got = run_captured(argv, timeout_s=timeout_s, env=env or dict(os.environ), cwd=cwd)
    except OSError as exc:
        return Answer(127, "", str(exc))
    res = got.outcome
    rc = None if res.timed_out else (res.exit_code if res.exit_code is not None else -1)
    return Answer(rc, got.out, got.err)


class Remote:
    """How to run a command on one host of the cluster, and the fix for a
    host that cannot be reached that way."""

    how = ""

    def argv(self, host: str, cmd: list[str]) -> list[str]:
        raise NotImplementedError

    def unreachable_fix_for(self, host: str) -> str:
        raise NotImplementedError


class Ssh(Remote):
    how = "ssh without a password (BatchMode)"

    def __init__(self, connect_timeout_s: int = 5) -> None:
        self.t = connect_timeout_s

    def unreachable_fix_for(self, host: str) -> str:
        return (f"give this user a key there (ssh-copy-id {host}) and accept its host key once "
                f"(ssh {host} true); check the name resolves and sshd runs")

    def argv(self, host: str, cmd: list[str]) -> list[str]:
        # options end before the host: a name is never read as one
        return ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.t}", "--", host,
                shlex.join(cmd)]


class Agent(Remote):
    how = "the emulated cluster's agent"

    def __init__(self, agent: str, name: str) -> None:
        self.agent, self.name = agent, name

    def unreachable_fix_for(self, host: str) -> str:
        return (f"recreate the emulated cluster: commscope cluster down {self.name}, then "
                "cluster up")

    def argv(self, host: str, cmd: list[str]) -> list[str]:
        return [self.agent, host, shlex.join(cmd)]


class Srun(Remote):
    how = "srun inside the allocation"

    def unreachable_fix_for(self, host: str) -> str:
        return f"check {host} is up and in this allocation (scontrol show node {host})"

    def argv(self, host: str, cmd: list[str]) -> list[str]:
        return ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={host}", "--job-name=doctor",
                *cmd]


def _slurm_hosts() -> list[str]:
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        raise CommscopeError("--cluster slurm: not inside a Slurm allocation (salloc -N 2, "
                             "then commscope doctor --cluster slurm)")
    a = bounded(["scontrol", "show", "hostnames", nodelist], 20)
    if a.rc != 0:
        raise CommscopeError(f"scontrol cannot expand the node list {nodelist}: {a.why()}")
    return a.out.split()


def plan(spec: str) -> tuple[cluster_mod.Cluster, list[str], dict[str, int | None], Remote]:
    """The cluster of a --cluster value, its hosts, their slot counts, and
    how to reach them."""
    c = cluster_mod.parse(spec)
    if isinstance(c, cluster_mod.Hostfile):
        return c, [h for h, _ in c.hosts], dict(c.hosts), Ssh()
    if isinstance(c, cluster_mod.Emulated):
        hosts = [n.hostname for n in c.c.nodes]
        return c, hosts, dict.fromkeys(hosts), Agent(c.c.agent, c.c.name)
    if isinstance(c, cluster_mod.Slurm):
        hosts = _slurm_hosts()
        return c, hosts, dict.fromkeys(hosts), Srun()
    raise CommscopeError("doctor checks a cluster: --cluster hostfile:PATH, emu:NAME or slurm")


def pairs(hosts: list[str]) -> list[tuple[str, str]]:
    if len(hosts) <= MAX_ALL_PAIRS:
        return list(combinations(hosts, 2))
    chain = list(zip(hosts, hosts[1:], strict=False))
    star = [(hosts[0], h) for h in hosts[2:]]
    return chain + star


def _pair_cluster(c: cluster_mod.Cluster, a: str, b: str, tmp: Path) -> cluster_mod.Cluster:
    if isinstance(c, cluster_mod.Emulated):
        nodes = {n.hostname: n for n in c.c.nodes}
        return cluster_mod.Emulated(state=dataclasses.replace(c.c, nodes=(nodes[a], nodes[b])))
    hf = tmp / f"hosts-{a}-{b}"
    hf.write_text(f"{a}\n{b}\n")
    return cluster_mod.Hostfile(str(hf))


def _ping(c: cluster_mod.Cluster, impl: MpiImpl, core: build_mod.Core, a: str, b: str,
          timeout_s: float) -> tuple[bool, str]:
    """A 2-rank zero-byte latency between a and b, its records checked."""
    with tempfile.TemporaryDirectory(prefix="cs-doctor-ping.") as tmp:
        tmpd = Path(tmp)
        out = tmpd / "records.jsonl"
        args = ["--bench", "latency", "--sizes", "0", "--min-samples", "5", "--max-samples",
                "50", "--time-cap", "0.2", "--output", str(out)]
        place = cluster_mod.Placement(nodes=2, ppn=1)
        if isinstance(c, cluster_mod.Slurm):
            fam = cluster_mod.SRUN_MPI.get(impl.family)
            if fam is None:
                return False, f"no srun PMI plugin known for {impl.family}"
            argv = ["srun", f"--mpi={fam}", "--nodes=2", "--ntasks=2", f"--nodelist={a},{b}",
                    "--kill-on-bad-exit=1", "--job-name=doctor", str(core.exe), *args]
            env: dict[str, str] = {}
        else:
            pc = _pair_cluster(c, a, b, tmpd)
            launch = pc.launch(impl, place, str(core.exe), args, tmpd, os.cpu_count() or 1,
                               os.geteuid() == 0)
            for name, text in launch.files.items():
                (tmpd / name).write_text(text)
            argv, env = launch.argv, launch.env
        ans = bounded(argv, timeout_s, env=mpi_mod.environ(impl.env, env), cwd=tmp)
        if ans.rc != 0:
            return False, ans.why()
        try:
            results = parse_file(out).results
        except (OSError, CommscopeError, ValueError) as exc:
            return False, f"the job ran but its records cannot be read ({exc})"
        if not results:
            return False, "the job ran but wrote no records here"
        good = [r for r in results if r.valid and r.median_us]
        if not good:
            return False, "the job ran but its messages failed validation"
        return True, f"{good[0].median_us:.1f} us one way"


def diagnose(spec: str, impl: MpiImpl, db: Path | None = None, timeout_s: float = 20.0,
             progress: Callable[[Check], None] | None = None) -> list[Check]:
    """Every check, in order: each host reached, then its core, then rank
    0's records, then TCP between the pairs whose hosts passed."""
    c, hosts, slots, remote = plan(spec)
    core = build_mod.build(impl)
    here = file_sha256(core.exe)
    out: list[Check] = []

    def add(check: Check) -> Check:
        out.append(check)
        if progress:
            progress(check)
        return check

    reached = [h for h in hosts
               if add(_reach(h, slots.get(h), remote, timeout_s)).status != "fail"]
    same = [h for h in hosts if add(
        _core(h, remote, impl, core, here, timeout_s) if h in reached else
        Check("core", h, "skip", "not tried: the host is not reachable")).status == "ok"]
    for check in _records(hosts[0] if hosts and hosts[0] in reached else None, remote, db,
                          timeout_s):
        add(check)
    for a, b in pairs(hosts):
        add(_tcp(c, impl, core, a, b, timeout_s) if a in same and b in same else
            Check("tcp", f"{a}-{b}", "skip", "not tried: a host of the pair failed above"))
    return out


def _reach(h: str, slots: int | None, remote: Remote, timeout_s: float) -> Check:
    """The host answers, as this machine's user (the studies' clusters: the
    same user everywhere, whose home holds the runs); its core count, and
    its clock against this machine's (to within half the round trip)."""
    t0 = time.time()
    a = bounded(remote.argv(h, ["sh", "-c", "nproc; date +%s.%N; id -un"]), timeout_s)
    t1 = time.time()
    if a.rc != 0:
        return Check("reach", h, "fail", f"not reachable by {remote.how}: {a.why()}",
                     remote.unreachable_fix_for(h))
    try:
        nproc_s, stamp, user = a.out.split()[-3:]
        ncores, offset = int(nproc_s), float(stamp) - (t0 + t1) / 2
    except ValueError:
        return Check("reach", h, "fail", f"answers, but not as a shell would: {a.why()}",
                     "a login shell there must run sh, nproc, date and id")
    status, extra, fix = "ok", "", ""
    me = pwd.getpwuid(os.geteuid()).pw_name
    if user != me:
        status, extra = "warn", f"; logged in as {user}, not {me}"
        fix = (f"use the user {me} on every host (User in ~/.ssh/config): the ranks there run "
               f"as {user}, with another home and other permissions on the job folders")
    if abs(offset) > max(CLOCK_TOLERANCE_S, t1 - t0):
        status, extra = "warn", f"; its clock is {offset:+.1f} s off this machine's"
        fix = "run chrony or ntpd on every host: records' times would not line up"
    if slots and slots > ncores:
        status = "warn"
        extra += f"; the hostfile gives it {slots} slots for {ncores} cores (oversubscribed)"
        fix = fix or f"give {h} at most slots={ncores}"
    return Check("reach", h, status, f"reachable as {user}, {ncores} cores, clock "
                 f"{offset * 1e3:+.0f} ms ± {(t1 - t0) / 2 * 1e3:.0f} ms{extra}", fix)


def _core(h: str, remote: Remote, impl: MpiImpl, core: build_mod.Core, here: str,
          timeout_s: float) -> Check:
    """The same core binary, the same MPI library behind it, the launcher."""
    a = bounded(remote.argv(h, ["sha256sum", str(core.exe)]), timeout_s)
    if a.rc != 0 or not a.out.split():
        return Check("core", h, "fail", f"no core at {core.exe}: {a.why()}",
                     "share commscope's cache between the hosts (a shared home, or "
                     "COMMSCOPE_CACHE on a shared folder), or run `commscope build` on each "
                     "with the same MPI")
    if a.out.split()[0] != here:
        return Check("core", h, "fail", f"another core binary at {core.exe} (sha256 "
                     f"{a.out.split()[0][:12]}, here {here[:12]})",
                     "the hosts must share one build: a shared cache, or the same MPI and "
                     "sources everywhere, then `commscope build --force`")
    info = bounded(remote.argv(h, ["env", *[f"{k}={v}" for k, v in impl.env.items()],
                                   str(core.exe), "--info"]), timeout_s)
    try:
        lib = str(json.loads(info.out.strip().splitlines()[-1]).get("mpi_library", ""))
    except (ValueError, IndexError, AttributeError):
        lib = ""
    if info.rc != 0 or not lib:
        return Check("core", h, "fail", f"the core does not start there: {info.why()}",
                     f"install {impl.name}'s libraries on {h} at the same prefix")
    if lib.strip() != core.mpi_version:
        return Check("core", h, "fail", f"another MPI library: {lib.splitlines()[0]!r}, "
                     f"here {core.mpi_version.splitlines()[0]!r}",
                     "the same MPI implementation and version on every host")
    if bounded(remote.argv(h, ["test", "-x", impl.launcher]), timeout_s).rc != 0:
        return Check("core", h, "fail", f"no launcher at {impl.launcher}",
                     f"install {impl.name} at the same prefix on {h}")
    return Check("core", h, "ok", f"same core (sha256 {here[:12]}) and MPI "
                 f"({core.mpi_version.splitlines()[0][:40]})")


def _records(first: str | None, remote: Remote, db: Path | None,
             timeout_s: float) -> Iterator[Check]:
    """The store's folder writable here; rank 0's job folder (on the first
    host) this machine's: a file made here is looked for there."""
    if db is not None:
        folder = db.resolve().parent
        if not os.access(folder, os.W_OK):
            yield Check("records", "", "fail", f"the store's folder {folder} is not writable here",
                        "choose --db in a folder you can write")
    if first is None:
        return
    fd, marker = tempfile.mkstemp(prefix="commscope-doctor-")
    os.close(fd)
    try:
        a = bounded(remote.argv(first, ["test", "-e", marker]), timeout_s)
    finally:
        os.unlink(marker)
    if a.rc == 0:
        yield Check("records", first, "ok", f"rank 0 runs here; its job folder "
                    f"({tempfile.gettempdir()}) is this machine's")
    else:
        yield Check("records", first, "fail", f"rank 0 runs on {first}, whose "
                    f"{tempfile.gettempdir()} is not this machine's: its records would not "
                    "come back", "run commscope on the first host of the hostfile, or set "
                    "TMPDIR to a folder every host shares")


def _tcp(c: cluster_mod.Cluster, impl: MpiImpl, core: build_mod.Core, a: str, b: str,
         timeout_s: float) -> Check:
    ok, what = _ping(c, impl, core, a, b, timeout_s)
    if ok:
        return Check("tcp", f"{a}-{b}", "ok", f"2-rank ping got through ({what}, one short run)")
    if what.startswith("no answer within the time limit"):
        # a job that hung once is tried once more: a link that does not
        # reach hangs again, a start-up that hung by chance does not, and
        # the user hears of both
        again, what2 = _ping(c, impl, core, a, b, timeout_s)
        if again:
            return Check("tcp", f"{a}-{b}", "warn",
                         f"2-rank ping got through on a second try ({what2}); the first hung "
                         f"past {timeout_s:g} s: {what}",
                         "a start-up that hangs now and then: if it recurs, rerun with the "
                         "launcher's verbose flag (MPICH: -verbose; Open MPI: --mca "
                         "plm_base_verbose 5) to see which step waits")
        what = f"{what}; again on a second try: {what2}"
    return Check("tcp", f"{a}-{b}", "fail", f"2-rank ping failed: {what}",
                 "a firewall between them, or the MPI picks an interface that does not "
                 "reach (Open MPI: --mca btl_tcp_if_include SUBNET; MPICH: -iface IF)")


def summary(checks: list[Check]) -> str:
    n = {s: sum(1 for c in checks if c.status == s) for s in ("ok", "warn", "fail", "skip")}
    head = "ready" if not n["fail"] else "NOT ready"
    return (f"{head}: {len(checks)} checks, {n['ok']} ok, {n['warn']} warning(s), "
            f"{n['fail']} failed, {n['skip']} not tried")


def to_json(checks: list[Check]) -> str:
    return json.dumps([dataclasses.asdict(c) for c in checks], indent=1)

