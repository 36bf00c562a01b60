"""Where a job runs: the cluster kinds and their launch lines.

A cluster is part of every run's provenance:

  local           this machine, the implementation's own launcher
  hostfile:PATH   the hosts of a hostfile, the implementation's launcher
  slurm           inside (or asking for) a Slurm allocation, through srun
                  with the implementation's PMI plugin
  slurm:mpirun    inside a Slurm allocation, the implementation's launcher
  emu:NAME        an emulated cluster of this machine (`commscope cluster up`)

A placement is nodes x processes per node.  Launch lines are lists, never
shell strings; files a launcher needs (hostfiles) come back as text for the
runner to write into the job's own directory."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import CommscopeError
from ...store.outputs import read_user_text
from ...store.records import Header
from ..mpi import LaunchSpec, MpiImpl, launch_argv
from . import emu as emu_mod


@dataclass(frozen=True)
class Placement:
    nodes: int
    ppn: int

    @property
    def np(self) -> int:
        return self.nodes * self.ppn


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # file name in the job dir -> text


class Cluster:
    kind = "local"

    @property
    def label(self) -> str:
        return self.kind

    def size(self) -> int | None:
        """How many nodes there are, when that is known here."""
        return 1

    def default_nodes(self, np_: int) -> int:
        """Spread np ranks over as many nodes as there are, one per node at most."""
        n = self.size() or 1
        return max(1, min(np_, n))

    def cannot_launch(self, impl: MpiImpl) -> str | None:
        """Why this kind of cluster cannot launch this implementation at all
        (None: it can); a sweep over every implementation found leaves it
        out and says so."""
        return None

    def check(self, impl: MpiImpl, place: Placement) -> None:
        if (why := self.cannot_launch(impl)) is not None:
            raise CommscopeError(why)
        if impl.variant == "mvapich2" and place.nodes > 1:
            raise CommscopeError(
                f"{impl.name}: commscope runs MVAPICH2 on one node only (there its mrail "
                "device needs no adapter; between nodes it needs an InfiniBand one, which "
                f"commscope neither sets up nor checks): not on {place.nodes} nodes of "
                f"{self.label}")
        n = self.size()
        if n is not None and place.nodes > n:
            raise CommscopeError(f"{self.label} has {n} node(s); cannot place ranks on "
                                 f"{place.nodes}")

    def oversubscribed(self, place: Placement, cores: int) -> bool:
        return place.ppn > cores

    def launch(self, impl: MpiImpl, place: Placement, exe: str, args: list[str],
               workdir: Path, cores: int, root: bool, bind: str = "core") -> Launch:
        """The command line of one job, bound as `bind` (COMMSCOPE_BIND) says."""
        spec = LaunchSpec(np=place.np, cores=cores, root=root, bind=bind)
        return Launch(launch_argv(impl, spec, exe, args))

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind}

    def link_bytes(self, place: Placement) -> dict[str, int] | None:
        """Bytes on each used node's network interface, where this machine
        can read them."""
        return None

    def node_names(self) -> list[str]:
        """The nodes, in order, where this kind of cluster names them here."""
        return []

    def pair(self, i: int, j: int, mode: str = "") -> Cluster:
        """The same cluster restricted to its nodes i and j (in that order):
        what `commscope matrix` launches one pair's job on (`mode`: "at once",
        beside the other pairs of its round, or "alone after at once", a
        configuration of its own each; "": one pair at a time)."""
        raise CommscopeError(f"{self.label}: commscope matrix runs on an emulated cluster, "
                             "a hostfile's hosts or a Slurm allocation's nodes")

    def not_taken(self, header: Header | None) -> str:
        """Why a job that ended well did not run where this cluster placed it
        (read from its records' header), or "" where it did or cannot tell."""
        return ""

    def config_extra(self) -> tuple[tuple[str, object], ...]:
        """What a job's configuration says of where it ran beyond the label
        and the placement (a pair view: which two nodes)."""
        return ()


def pair_extra(between: tuple[str, str] | None, mode: str
               ) -> tuple[tuple[str, object], ...]:
    """A pair view's configuration: its two nodes, rank 0 on the first,
    and how it was measured where not one pair at a time (Cluster.pair)."""
    if not between:
        return ()
    return (("pair", "/".join(between)),) + ((("pairs", mode),) if mode else ())


MAX_PER_CORE = 64  # local oversubscription: beyond it a run only exhausts the machine


class Local(Cluster):
    def check(self, impl: MpiImpl, place: Placement) -> None:
        if place.nodes != 1:
            raise CommscopeError(f"the local cluster is one node; --nodes {place.nodes} needs "
                                 "--cluster emu:NAME, hostfile:PATH or slurm")
        cores = os.cpu_count() or 1
        if place.np > MAX_PER_CORE * cores:
            raise CommscopeError(f"--np {place.np} on this machine's {cores} cores is more than "
                                 f"{MAX_PER_CORE} processes a core (oversubscribed runs check "
                                 "correctness only; use a cluster for more)")


class Cores(Local):
    """This machine's CPUs as the nodes of a matrix (`commscope matrix
    --within-node`): a pair view is a two-rank job whose ranks the core
    pins to the pair's two CPUs (COMMSCOPE_PIN=cpus:A,B), whatever the
    launcher's own syntax; the launcher binds nothing."""

    def __init__(self, cpus: Sequence[int] | None = None) -> None:
        self.cpus = sorted(os.sched_getaffinity(0)) if cpus is None else list(cpus)

    between: tuple[str, str] | None = None
    mode = ""

    def node_names(self) -> list[str]:
        return [f"cpu{c}" for c in self.cpus]

    def sockets(self) -> dict[str, int]:
        """Each CPU's socket (its physical package), where the kernel says."""
        out = {}
        for c in self.cpus:
            try:
                out[f"cpu{c}"] = int(Path(f"/sys/devices/system/cpu/cpu{c}/topology/"
                                          "physical_package_id").read_text())
            except (OSError, ValueError):
                out[f"cpu{c}"] = 0
        return out

    def pair(self, i: int, j: int, mode: str = "") -> Cluster:
        view = Cores([self.cpus[i], self.cpus[j]])
        view.between, view.mode = (f"cpu{self.cpus[i]}", f"cpu{self.cpus[j]}"), mode
        return view

    def config_extra(self) -> tuple[tuple[str, object], ...]:
        return pair_extra(self.between, self.mode)

    def launch(self, impl: MpiImpl, place: Placement, exe: str, args: list[str],
               workdir: Path, cores: int, root: bool, bind: str = "core") -> Launch:
        spec = LaunchSpec(np=place.np, cores=cores, root=root, bind="none")
        return Launch(launch_argv(impl, spec, exe, args),
                      env={"COMMSCOPE_PIN": "cpus:" + ",".join(map(str, self.cpus))})

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "cpus": list(self.cpus)}

    def not_taken(self, header: Header | None) -> str:
        """A pair's job whose ranks did not run on the pair's CPUs, one each
        (the header's allowed CPUs of each rank)."""
        cpus = list(header.cpus) if header else []
        if not self.between or cpus == [str(c) for c in self.cpus]:
            return ""
        return (f"its ranks ran on CPUs {'; '.join(cpus) or 'not reported'}, not on "
                f"{' and '.join(map(str, self.cpus))} (COMMSCOPE_PIN not taken)")


def read_hostfile(path: Path) -> list[tuple[str, int | None]]:
    """Hosts and slot counts from an Open MPI (`host slots=N`) or MPICH
    (`host:N`) hostfile; comments and blank lines are skipped."""
    text = read_user_text(path, "hostfile")
    hosts: list[tuple[str, int | None]] = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # a host name starts with a letter or digit: never an option to ssh
        host = r"([A-Za-z0-9][\w.\-]*)"
        m = (re.fullmatch(host + r"(?:\s+slots\s*=\s*(\d+))?(?:\s+max_slots\s*=\s*\d+)?",
                          line)
             or re.fullmatch(host + r"(?::(\d+))?", line))
        if not m:
            raise CommscopeError(f"{path}:{no}: not a hostfile line: {raw.strip()!r}")
        if m.group(2) is not None and int(m.group(2)) < 1:
            raise CommscopeError(f"{path}:{no}: {m.group(1)} has no slots ({raw.strip()!r})")
        hosts.append((m.group(1), int(m.group(2)) if m.group(2) else None))
    if not hosts:
        raise CommscopeError(f"hostfile {path} names no host")
    return hosts


def local_only(bind: str, label: str) -> None:
    """Clusters bind as their launchers do: COMMSCOPE_BIND is a local setting."""
    if bind != "core":
        raise CommscopeError(f"COMMSCOPE_BIND={bind} applies to local runs only, not {label}")


def _head(impl: MpiImpl, place: Placement, root: bool) -> list[str]:
    """The launcher and the rank count; Open MPI also needs leave to run as root."""
    allow = ["--allow-run-as-root"] if root and impl.family == "openmpi" else []
    return [impl.launcher, *allow, "-n", str(place.np)]


def _bind_core(impl: MpiImpl) -> list[str]:
    """Hydra's binding flag (MPICH); Intel MPI pins through its own variables."""
    return ["-bind-to", "core"] if impl.family == "mpich" else []


def hostfile_text(family: str, hosts: list[str], ppn: int) -> str:
    if family == "openmpi":
        return "".join(f"{h} slots={ppn}\n" for h in hosts)
    return "".join(f"{h}:{ppn}\n" for h in hosts)


class Hostfile(Cluster):
    kind = "hostfile"

    def __init__(self, path: str) -> None:
        self.path = Path(path).resolve()
        self.hosts = read_hostfile(self.path)

    @property
    def label(self) -> str:
        return f"hostfile:{self.path}"

    def size(self) -> int | None:
        return len(self.hosts)

    def launch(self, impl: MpiImpl, place: Placement, exe: str, args: list[str],
               workdir: Path, cores: int, root: bool, bind: str = "core") -> Launch:
        local_only(bind, self.label)
        hf = workdir / "hostfile"
        text = hostfile_text(impl.family, [h for h, _ in self.hosts[:place.nodes]], place.ppn)
        if impl.family == "openmpi":
            argv = [*_head(impl, place, root), "--hostfile", str(hf), "--map-by",
                    f"ppr:{place.ppn}:node", "--bind-to", "core", exe, *args]
        else:
            argv = [*_head(impl, place, root), "-f", str(hf), "-ppn", str(place.ppn),
                    *_bind_core(impl), exe, *args]
        return Launch(argv, files={"hostfile": text})

    def describe(self) -> dict[str, object]:
        d: dict[str, object] = {"kind": self.kind, "path": str(self.path),
                                "hosts": [h for h, _ in self.hosts]}
        if self.between:
            d["pair"] = list(self.between)
        return d

    between: tuple[str, str] | None = None  # a pair view: its two hosts
    mode = ""  # ... how: Cluster.pair

    def node_names(self) -> list[str]:
        return [h for h, _ in self.hosts]

    def pair(self, i: int, j: int, mode: str = "") -> Cluster:
        names = self.node_names()
        if len(set(names)) != len(names):
            dup = next(h for h in names if names.count(h) > 1)
            raise CommscopeError(f"{self.label} names host {dup} twice: a pair of it with "
                                 "itself is no pair of nodes")
        view = Hostfile.__new__(Hostfile)
        view.path, view.hosts = self.path, [self.hosts[i], self.hosts[j]]
        view.between = (names[i], names[j])
        view.mode = mode
        return view

    def config_extra(self) -> tuple[tuple[str, object], ...]:
        return pair_extra(self.between, self.mode)


# srun's PMI plugin for each family (Debian: Open MPI through PMIx, MPICH
# through PMI-2).
SRUN_MPI = {"openmpi": "pmix", "mpich": "pmi2"}


class Slurm(Cluster):
    kind = "slurm"

    def __init__(self, mode: str = "srun") -> None:
        if mode not in ("srun", "mpirun"):
            raise CommscopeError(f"unknown Slurm launch mode '{mode}' (slurm or slurm:mpirun)")
        self.mode = mode

    @property
    def label(self) -> str:
        return "slurm" if self.mode == "srun" else "slurm:mpirun"

    def size(self) -> int | None:
        n = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES")
        return int(n) if n and n.isdigit() else None

    def default_nodes(self, np_: int) -> int:
        return self.size() or 1

    def cannot_launch(self, impl: MpiImpl) -> str | None:
        if self.mode == "srun" and impl.family not in SRUN_MPI:
            return (f"no srun PMI plugin known for {impl.family}; use --cluster slurm:mpirun "
                    "inside an allocation")
        return None

    def check(self, impl: MpiImpl, place: Placement) -> None:
        super().check(impl, place)
        if self.mode == "mpirun" and "SLURM_JOB_ID" not in os.environ:
            raise CommscopeError("--cluster slurm:mpirun runs inside an allocation (salloc or "
                                 "sbatch); use --cluster slurm to let srun ask for one")

    def launch(self, impl: MpiImpl, place: Placement, exe: str, args: list[str],
               workdir: Path, cores: int, root: bool, bind: str = "core") -> Launch:
        local_only(bind, self.label)
        n, ppn = str(place.np), str(place.ppn)
        # a pair view: its two nodes, in order (rank 0 on the first)
        hosts = ",".join(self.between) if self.between else ""
        if self.mode == "srun":
            where = [f"--nodelist={hosts}", "--distribution=arbitrary"] if hosts else []
            # a pair's order is --nodelist's: srun reads the arbitrary distribution from
            # SLURM_HOSTFILE where it is set (an sbatch script may export it), and a
            # distribution the environment names would stand beside ours
            unset = ["env", "-u", "SLURM_HOSTFILE", "-u", "SLURM_DISTRIBUTION"] if hosts else []
            argv = [*unset, "srun", f"--mpi={SRUN_MPI[impl.family]}", f"--nodes={place.nodes}",
                    f"--ntasks-per-node={ppn}", f"--ntasks={n}", *where, "--cpu-bind=cores",
                    "--kill-on-bad-exit=1", "--job-name=commscope", exe, *args]
        elif impl.family == "openmpi":
            argv = [*_head(impl, place, root), "--map-by", f"ppr:{ppn}:node", "--bind-to",
                    "core", exe, *args]
        else:
            argv = [impl.launcher, "-launcher", "slurm", "-rmk", "slurm", "-n", n, "-ppn", ppn,
                    *_bind_core(impl), exe, *args]
        return Launch(argv)

    def describe(self) -> dict[str, object]:
        d: dict[str, object] = {"kind": self.kind, "mode": self.mode,
                                "job_id": os.environ.get("SLURM_JOB_ID"),
                                "nodelist": os.environ.get("SLURM_JOB_NODELIST")}
        if self.between:
            d["pair"] = list(self.between)
        return d

    between: tuple[str, str] | None = None  # a pair view: its two nodes, rank 0 on the first
    how = ""  # ... how it is measured: Cluster.pair
    _names: list[str] | None = None  # the allocation's nodes, once expanded (pair)

    def node_names(self) -> list[str]:
        """The allocation's nodes, as Slurm orders them (its compressed list
        expanded by scontrol, which every Slurm installation with srun has);
        none outside an allocation."""
        nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
        if not nodelist or "SLURM_JOB_ID" not in os.environ:
            return []
        try:
            p = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                               text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CommscopeError(f"scontrol could not expand the allocation's node list "
                                 f"{nodelist}: {e}") from None
        if p.returncode != 0:
            raise CommscopeError(f"scontrol could not expand the allocation's node list "
                                 f"{nodelist}: {p.stderr.strip()[:200]}")
        return p.stdout.split()

    def pair(self, i: int, j: int, mode: str = "") -> Cluster:
        """Nodes i and j of the allocation, rank 0 on node i (srun's arbitrary
        distribution takes --nodelist's order): every pair of one allocation,
        so that the matrix is of the nodes the user was given."""
        if self.mode != "srun":
            # tried: Open MPI's mpirun inside the allocation placed a pair's ranks in the
            # allocation's order whatever --host said, and the pair's second node first
            # is how a link slow one way is found
            raise CommscopeError("commscope matrix under Slurm launches each pair with srun "
                                 "(--cluster slurm), which places rank 0 on the pair's first "
                                 "node; not with slurm:mpirun")
        if "SLURM_JOB_ID" not in os.environ:
            raise CommscopeError("commscope matrix under Slurm runs inside an allocation of the "
                                 "nodes to measure: salloc -N 4 commscope matrix --cluster "
                                 "slurm ... (or the same line in an sbatch script)")
        if self._names is None:  # expanded once: a matrix asks for every pair
            self._names = self.node_names()
        names = self._names
        if len(set(names)) != len(names):
            dup = next(h for h in names if names.count(h) > 1)
            raise CommscopeError(f"the allocation names node {dup} twice")
        if max(i, j) >= len(names):
            raise CommscopeError(f"the allocation has {len(names)} node(s): a matrix needs 2 "
                                 "or more")
        view = Slurm(self.mode)
        view.between, view.how = (names[i], names[j]), mode
        return view

    def config_extra(self) -> tuple[tuple[str, object], ...]:
        return pair_extra(self.between, self.how)

    def not_taken(self, header: Header | None) -> str:
        """A pair's job whose ranks did not run on the pair's nodes, rank 0
        on the first (the header's host of each rank)."""
        hosts = list(header.hosts) if header else []
        if not self.between or hosts == list(self.between):
            return ""
        # a rank reports its host name (MPI_Get_processor_name), which may be
        # the node's full domain name, or a NodeHostName Slurm's NodeName is not
        short = [_short(h) for h in hosts]
        if hosts and (short == [_short(n) for n in self.between]  # scontrol only where needed
                      or short == [_short(node_hostname(n)) for n in self.between]):
            return ""
        return (f"its ranks ran on {', '.join(hosts) or 'hosts not reported'}, not on "
                f"{' then '.join(self.between)} (the pair's placement not taken)")


def _short(host: str) -> str:
    return host.split(".", 1)[0]


_HOSTNAMES: dict[str, str] = {}


def node_hostname(node: str) -> str:
    """A Slurm node's NodeHostName (`scontrol show node`), where it differs
    from its NodeName; the name itself where none is read."""
    if node not in _HOSTNAMES:
        try:
            p = subprocess.run(["scontrol", "show", "node", "-o", node], capture_output=True,
                               text=True, timeout=60, check=False)
            got = re.search(r"\bNodeHostName=(\S+)", p.stdout) if p.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            got = None
        _HOSTNAMES[node] = got.group(1) if got else node
    return _HOSTNAMES[node]


class Emulated(Cluster):
    kind = "emu"

    def __init__(self, name: str | None = None, *, state: emu_mod.EmuCluster | None = None
                 ) -> None:
        if state is None:
            if name is None:
                raise CommscopeError("an emulated cluster needs a name")
            state = emu_mod.load(name)
        self.c = state

    @property
    def label(self) -> str:
        return f"emu:{self.c.name}"

    def size(self) -> int | None:
        return len(self.c.nodes)

    full: emu_mod.EmuCluster | None = None  # a pair view: the whole cluster

    def cannot_launch(self, impl: MpiImpl) -> str | None:
        if impl.family not in ("openmpi", "mpich"):
            return f"emulated clusters launch Open MPI and MPICH; not {impl.family}"
        return None

    def check(self, impl: MpiImpl, place: Placement) -> None:
        super().check(impl, place)
        emu_mod.require_root("running on an emulated cluster")

    def oversubscribed(self, place: Placement, cores: int) -> bool:
        return place.np > cores  # every node shares this machine's cores

    def launch(self, impl: MpiImpl, place: Placement, exe: str, args: list[str],
               workdir: Path, cores: int, root: bool, bind: str = "core") -> Launch:
        """The launcher runs inside the first node, reaches the others through
        the cluster's agent, talks TCP only on the emulated subnet, and binds
        nothing itself: each rank pins itself to its own core of this machine
        (COMMSCOPE_PIN=machine), so that ranks of different nodes do not all
        sit on core 0."""
        local_only(bind, self.label)
        c = self.c
        used = [n.address for n in c.nodes[:place.nodes]]
        hf = workdir / "hostfile"
        env = {"COMMSCOPE_PIN": "machine"}
        if impl.family == "openmpi":
            inner = [*_head(impl, place, root), "--hostfile", str(hf),
                     "--map-by", f"ppr:{place.ppn}:node",
                     "--bind-to", "none", "--mca", "plm_rsh_agent", c.agent,
                     "--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp",
                     "--mca", "btl_tcp_if_include", c.subnet,
                     "--mca", "oob_tcp_if_include", c.subnet, "-x", "COMMSCOPE_PIN"]
            if place.np > cores:
                inner += ["--mca", "mpi_yield_when_idle", "1"]
        else:
            env["UCX_NET_DEVICES"] = "eth0"
            inner = [*_head(impl, place, root), "-f", str(hf), "-ppn", str(place.ppn),
                     "-launcher", "ssh", "-launcher-exec", c.agent, "-iface", "eth0",
                     "-genv", "COMMSCOPE_PIN", "machine", "-genv", "UCX_NET_DEVICES", "eth0"]
        argv = [*c.nodes[0].nsenter(), *inner, exe, *args]
        return Launch(argv, env=env, files={"hostfile": hostfile_text(impl.family, used,
                                                                      place.ppn)})

    def describe(self) -> dict[str, object]:
        p = emu_mod.PROFILES[self.c.link]
        d: dict[str, object] = {
            "kind": self.kind, "name": self.c.name, "link": p.name, "rate_bps": p.rate_bps,
            "nodes": len(self.c.nodes), "subnet": self.c.subnet,
            "tbf": p.tbf_args() if p.rate_bps else None}
        if slow := {n.hostname: n.link or f"cpu {emu_mod.CPU_SHARE}%"
                    for n in (self.full or self.c).nodes if n.link or n.cgroup}:
            d["degraded"] = slow  # nodes given another link (cluster up --degrade)
        if self.between:
            d["pair"] = list(self.between)
        return d

    between: tuple[str, str] | None = None  # a pair view: its two nodes
    mode = ""  # ... how: Cluster.pair

    def node_names(self) -> list[str]:
        return [n.hostname for n in self.c.nodes]

    def pair(self, i: int, j: int, mode: str = "") -> Cluster:
        view = Emulated(state=replace(self.c, nodes=(self.c.nodes[i], self.c.nodes[j])))
        view.full = self.c
        view.between = (self.c.nodes[i].hostname, self.c.nodes[j].hostname)
        view.mode = mode
        return view

    def config_extra(self) -> tuple[tuple[str, object], ...]:
        return pair_extra(self.between, self.mode)

    def link_bytes(self, place: Placement) -> dict[str, int] | None:
        return self.c.link_bytes(place.nodes)


def parse(spec: str) -> Cluster:
    """A --cluster value."""
    kind, _, arg = spec.partition(":")
    if kind == "local" and not arg:
        return Local()
    if kind == "hostfile" and arg:
        return Hostfile(arg)
    if kind == "slurm":
        return Slurm(arg or "srun")
    if kind == "emu" and arg:
        return Emulated(arg)
    raise CommscopeError(f"bad --cluster '{spec}': local, hostfile:PATH, slurm, slurm:mpirun "
                         "or emu:NAME")


def transport_check(place: Placement, before: dict[str, int] | None,
                    after: dict[str, int] | None, payload_bytes: int) -> dict[str, object] | None:
    """What the node links carried during a job, against what the benchmark
    moved.  One node: its link should stay quiet (shared memory).  Several:
    the links must carry at least the payload (TCP between nodes)."""
    if before is None or after is None:
        return None
    delta = {h: after[h] - before.get(h, 0) for h in after}
    total = sum(delta.values())
    if place.nodes == 1:
        quiet = total <= max(64 * 1024, payload_bytes // 100)
        verdict = "shared memory" if quiet else "network inside one node"
        ok = quiet
    else:
        ok = total >= payload_bytes and total > 0
        verdict = "network between nodes" if ok else "too little on the links for the payload"
    return {"link_bytes": delta, "payload_bytes": payload_bytes, "verdict": verdict, "ok": ok}
