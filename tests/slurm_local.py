"""A real Slurm for the test suite, private to one directory.

munged and the two Slurm daemons run from Debian's packages with their
own key, socket, configuration, state and logs under a scratch directory,
so nothing of the machine's own set-up is read or changed; clients find
the configuration through SLURM_CONF.  The daemons are started directly
and stopped by PID.

On this machine alone it is one node.  Given an emulated cluster
(`commscope cluster up`), it is that many: a slurmd in each node's
namespaces (its hostname, its address, its link), the controller on the
first node, which is also where clients run (`inside`), as on a login
node.  The nodes share this machine's file system; each gets private
mounts of the slurmd spool folder and the base of the folders Slurm's PMIx
plugin makes per job step, whose sockets and folders are named alike on
every node of a step (real nodes each have their own local disk)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

BINARIES = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "sinfo")


def missing() -> str | None:
    lost = [b for b in BINARIES if not shutil.which(b)]
    return f"Slurm or munge not installed ({', '.join(lost)} missing)" if lost else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalSlurm:
    def __init__(self, root: Path, cpus: int, cluster=None) -> None:
        self.root = root
        self.cpus = cpus
        self.host = socket.gethostname()
        self.cluster = cluster  # an emulated cluster (measure.cluster.emu.EmuCluster), or None
        self.procs: list[subprocess.Popen] = []
        self.conf = root / "slurm.conf"
        self.sock = root / "munge.sock"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def _write(self) -> None:
        r = self.root
        for d in ("state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        key = r / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
        self.conf.write_text(f"""\
ClusterName=cstest
SlurmctldHost={self._controller()}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.sock}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd-%n.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd-%n.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
KillWait=5
InactiveLimit=0
FirstJobId={self._first_job_id()}
{self._nodes(mem)}""")
        # Slurm's PMIx plugin makes a folder per job step under this base, and its servers'
        # sockets in the spool folder, named alike on every node: each node mounts folders
        # of its own over both (start)
        for d in ("pmix", "spool"):
            (r / d).mkdir(exist_ok=True)
        (r / "mpi.conf").write_text(f"PMIxCliTmpDirBase={r / 'pmix'}\n")

    _made = itertools.count()

    def _first_job_id(self) -> int:
        """Where this Slurm's job numbers start: apart from any other test
        Slurm's on this machine.  Two pytest workers each started the Slurm
        tests' module Slurm, both numbered their jobs from 1, and Open MPI
        under srun names its shared-memory segments by the host and the step
        (PMIx's namespace, slurm.pmix.JOB.STEP): the second job unlinked the
        first's vader segments and it crashed (tried: two Slurms, one job
        each).  An emulated cluster's nodes have names of their own, and its
        PMIx sockets' paths, which hold the job number, are near the 107
        characters a socket path may have: it numbers from 1."""
        if self.cluster is not None:
            return 1
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        k = int(worker[2:]) if worker[2:].isdigit() else os.getpid() % 10
        return 1 + 100 * (10 * (k % 10) + next(self._made) % 10)

    def _nodes(self, mem: int) -> str:
        if self.cluster is None:
            return (f"NodeName={self.host} CPUs={self.cpus} RealMemory={mem} State=UNKNOWN\n"
                    f"PartitionName=test Nodes={self.host} Default=YES MaxTime=INFINITE "
                    "State=UP OverSubscribe=YES\n")
        nodes = self.cluster.nodes
        per = max(256, mem // len(nodes))
        return ("".join(f"NodeName={n.hostname} NodeAddr={n.address} CPUs={self.cpus} "
                        f"RealMemory={per} State=UNKNOWN\n" for n in nodes)
                + f"PartitionName=test Nodes={','.join(n.hostname for n in nodes)} Default=YES "
                "MaxTime=INFINITE State=UP OverSubscribe=YES\n")

    def _controller(self) -> str:
        if self.cluster is None:
            return self.host
        first = self.cluster.nodes[0]
        return f"{first.hostname}({first.address})"

    def inside(self, argv: list[str]) -> list[str]:
        """argv run where clients run: this machine, or the first node."""
        return argv if self.cluster is None else [*self.cluster.nodes[0].namespaces(), *argv]

    def _start(self, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{Path(argv[0]).name}.out", "ab")
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=log, env={
            **os.environ, **self.env}, start_new_session=True))

    def start(self, timeout_s: float = 60) -> None:
        self._write()
        r = self.root
        self._start(["munged", "--foreground", "--force", f"--socket={self.sock}",
                     f"--key-file={r / 'munge.key'}", f"--pid-file={r / 'munged.pid'}",
                     f"--log-file={r / 'log' / 'munged.log'}", f"--seed-file={r / 'munge.seed'}"])
        self._wait(lambda: self.sock.exists(), timeout_s, "munged")
        self._start(self.inside(["slurmctld", "-D", "-i", "-f", str(self.conf)]))
        if self.cluster is None:
            self._start(["slurmd", "-D", "-f", str(self.conf)])
        for n in self.cluster.nodes if self.cluster is not None else ():
            own = r / f"node-{n.hostname}"
            for d in ("pmix", "spool"):
                (own / d).mkdir(parents=True, exist_ok=True)
            # its own mount namespace: its spool and PMIx folders private to it, as a
            # node's local disk is
            self._start([*n.nsenter(), "unshare", "--mount", "--propagation", "private", "sh",
                         "-c", 'mount --bind "$0/pmix" "$1/pmix" && mount --bind "$0/spool" '
                         '"$1/spool" && shift && exec "$@"', str(own), str(r), "slurmd", "-D",
                         "-f", str(self.conf)])
        self._wait(self._idle, timeout_s, "the Slurm node(s)")

    def _idle(self) -> bool:
        p = subprocess.run(self.inside(["sinfo", "-h", "-N", "-o", "%t"]), capture_output=True,
                           text=True, env={**os.environ, **self.env}, timeout=10, check=False)
        states = p.stdout.split()
        want = len(self.cluster.nodes) if self.cluster is not None else 1
        return p.returncode == 0 and len(states) == want and all(
            x in ("idle", "mix", "alloc") for x in states)

    def _wait(self, ready, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.3)
        logs = "".join(f.read_text(errors="replace")[-1500:]
                       for f in sorted((self.root / "log").glob("*")))
        self.stop()
        raise RuntimeError(f"{what} did not come up:\n{logs}")

    def stop(self) -> None:
        """SIGTERM each daemon by PID (newest first), then SIGKILL what stays."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()
        while True:  # step daemons this process adopted as a subreaper
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
