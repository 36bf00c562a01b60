"""Emulated clusters: several "nodes" on this one machine.

A node is a network namespace with its own hostname (UTS namespace) and its
own System V IPC (IPC namespace), so that an MPI implementation sees
separate machines and has to talk TCP between them.  Each node's `eth0`
is one end of a veth pair whose other end is a port of a bridge that lives
in a namespace of its own; nothing is created in the host's namespaces.
Links are shaped with tbf in both directions (see docs/clusters.md for the
burst and overhead choices).

Names: every namespace is `commscope-u<UID>-<NAME>-...`, its state lives in
/run/commscope/emu/<that prefix>/, so two clusters, or two users, never
collide, and `down` only touches what `up` created."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ...errors import CommscopeError

STATE_ROOT = Path(os.environ.get("COMMSCOPE_EMU_STATE", "/run/commscope/emu"))
NETNS_DIR = Path("/run/netns")
SUBNET = "10.77.0.0/24"
MAX_NODES = 64
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")

# Ethernet framing that tbf should count on top of each frame's bytes
# (the 14-byte MAC header is already in the packet): preamble and start
# delimiter 8, frame check sequence 4, inter-frame gap 12.  A minimum frame
# occupies 64 + 20 bytes of wire time.
ETH_OVERHEAD = 24
ETH_MPU = 84


@dataclass(frozen=True)
class LinkProfile:
    name: str
    rate_bps: int | None  # None: not shaped
    what: str

    def tbf_args(self) -> list[str]:
        """Token bucket for this rate.  The burst is 1 ms of the rate (at
        least two full frames): much less and TCP cannot keep the bucket
        busy (1gbit with a 3 KB burst delivers half its rate), much more and
        an idle link sends a message far faster than the rate.  The queue
        holds 20 ms (at least 256 KiB) so that a window of TCP segments is
        delayed, not dropped."""
        assert self.rate_bps
        byte_rate = self.rate_bps // 8
        burst = max(byte_rate // 1000, 2 * 1514)
        limit = max(byte_rate // 50, 256 * 1024)
        return ["tbf", "rate", f"{self.rate_bps}bit", "burst", str(burst), "limit", str(limit),
                "overhead", str(ETH_OVERHEAD), "mpu", str(ETH_MPU)]


PROFILES = {p.name: p for p in (
    LinkProfile("unshaped", None, "veth at memory speed, no shaping"),
    LinkProfile("10gbit", 10_000_000_000, "10 Gigabit Ethernet"),
    LinkProfile("1gbit", 1_000_000_000, "Gigabit Ethernet"),
    LinkProfile("100mbit", 100_000_000, "100Base-T Fast Ethernet"),
)}


def owner_uid() -> int:
    """The user a cluster belongs to: the one behind sudo, if any."""
    sudo = os.environ.get("SUDO_UID", "")
    return int(sudo) if sudo.isdigit() else os.getuid()


def prefix(name: str, uid: int | None = None) -> str:
    return f"commscope-u{owner_uid() if uid is None else uid}-{name}"


@dataclass(frozen=True)
class Node:
    index: int
    hostname: str
    address: str
    netns: str
    uts: str
    ipc: str
    link: str = ""  # its own link profile where degraded (--degrade), else the cluster's
    # where degraded to a share of one CPU (--degrade NODE:cpu): its cgroup, which every
    # process started in it joins (the agent, the launcher on it)
    cgroup: str = ""

    def nsenter(self) -> list[str]:
        """The argv prefix that runs a command inside this node (in its CPU
        group first, where it has one)."""
        join = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', f"{self.cgroup}/cgroup.procs"
                ] if self.cgroup else []
        return [*join, *self.namespaces()]

    def namespaces(self) -> list[str]:
        """nsenter into this node's namespaces (not its CPU group)."""
        return ["nsenter", f"--net={NETNS_DIR / self.netns}", f"--uts={self.uts}",
                f"--ipc={self.ipc}", "--"]


@dataclass(frozen=True)
class EmuCluster:
    name: str
    prefix: str
    link: str
    subnet: str
    bridge_netns: str
    nodes: tuple[Node, ...]
    agent: str
    created_at: float

    @property
    def state_dir(self) -> Path:
        return STATE_ROOT / self.prefix

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["nodes"] = [asdict(n) for n in self.nodes]
        return d

    @classmethod
    def from_json(cls, d: dict) -> EmuCluster:
        return cls(**{**d, "nodes": tuple(Node(**n) for n in d["nodes"])})

    def link_bytes(self, count: int | None = None) -> dict[str, int]:
        """Bytes sent plus received on each node's eth0, read in the node's
        namespace."""
        out: dict[str, int] = {}
        for node in self.nodes[:count]:
            data = json.loads(_ip(["-n", node.netns, "-j", "-s", "link", "show", "dev", "eth0"]))
            st = data[0]["stats64"]
            out[node.hostname] = int(st["rx"]["bytes"]) + int(st["tx"]["bytes"])
        return out


# -- small helpers ---------------------------------------------------------

def _cmd(argv: list[str], what: str) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommscopeError(f"{what}: {argv[0]} failed: {exc}") from exc
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise CommscopeError(f"{what}: {' '.join(argv[:4])}... failed: "
                             f"{msg[-1] if msg else 'exit ' + str(p.returncode)}")
    return p.stdout


def _ip(args: list[str], what: str = "ip") -> str:
    return _cmd(["ip", *args], what)


def _umount(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(path.encode(), 2)  # MNT_DETACH; an unmounted path is fine


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise CommscopeError(f"{what} needs root (network namespaces and links); "
                             "run it as root or with sudo")


def validate_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise CommscopeError(f"bad cluster name '{name}': a lower-case letter, then up to 11 "
                             "lower-case letters or digits")
    return name


def _state_file(name: str) -> Path:
    return STATE_ROOT / prefix(name) / "state.json"


def load(name: str) -> EmuCluster:
    validate_name(name)
    path = _state_file(name)
    if not path.exists():
        have = ", ".join(c.name for c in list_clusters()) or "none"
        raise CommscopeError(f"no emulated cluster named '{name}' (existing: {have}); "
                             f"create it with `commscope cluster up --name {name} --nodes N`")
    try:
        return EmuCluster.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as exc:
        raise CommscopeError(f"{path} is damaged ({exc}); run `commscope cluster down "
                             f"{name}`") from exc


def list_clusters() -> list[EmuCluster]:
    out: list[EmuCluster] = []
    for st in sorted(STATE_ROOT.glob(f"{prefix('*')}/state.json")):
        try:
            out.append(EmuCluster.from_json(json.loads(st.read_text())))
        except (ValueError, TypeError, KeyError):
            continue
    return out


def stray_namespaces() -> list[str]:
    """Namespaces with our prefix that no cluster's state accounts for (an
    `up` killed half-way): `down` of that name removes them."""
    if not NETNS_DIR.is_dir():
        return []
    known = {n for c in list_clusters() for n in [c.bridge_netns, *(x.netns for x in c.nodes)]}
    mine = prefix("")
    return sorted(p.name for p in NETNS_DIR.iterdir()
                  if p.name.startswith(mine) and p.name not in known)


# -- the agent -------------------------------------------------------------

AGENT_HEAD = """#!/bin/sh
# ssh-like agent of the emulated cluster {name} (written by commscope):
#   agent [ssh options] HOST COMMAND...
# runs COMMAND in HOST's namespaces through /bin/sh, as ssh would run it
# through the remote user's shell.  MPI launchers call it in place of ssh.
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-l|-p|-i|-F) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || {{ echo "commscope agent: usage: agent HOST COMMAND..." >&2; exit 255; }}
host=$1; shift
case "$host" in
"""


def agent_script(c: EmuCluster) -> str:
    """Only names and addresses commscope generated go into the script."""
    lines = [AGENT_HEAD.format(name=c.name)]
    for n in c.nodes:
        ns = " ".join(n.namespaces())
        join = (f"echo $$ > {shlex.quote(n.cgroup + '/cgroup.procs')} && " if n.cgroup
                else "")  # a CPU-held node
        lines.append(f"  {n.hostname}|{n.address}) {join}exec {ns} /bin/sh -c \"$*\" ;;\n")
    lines.append('  *) echo "commscope agent: no node $host in cluster '
                 f'{c.name}" >&2; exit 255 ;;\nesac\n')
    return "".join(lines)


# -- up and down -----------------------------------------------------------

def _persist_ns(node: Node) -> None:
    """A network namespace from `ip netns add`, and UTS and IPC namespaces
    kept alive by bind mounts, with the hostname set inside."""
    _ip(["netns", "add", node.netns], "creating a node")
    for f in (node.uts, node.ipc):
        Path(f).touch()
    _cmd(["nsenter", f"--net={NETNS_DIR / node.netns}", "unshare", f"--uts={node.uts}",
          f"--ipc={node.ipc}", "hostname", node.hostname], "creating a node")


def _shape(netns: str, dev: str, profile: LinkProfile) -> None:
    # One frame per packet, so tbf counts the framing overhead of each.
    _cmd(["ip", "netns", "exec", netns, "ethtool", "-K", dev, "tso", "off", "gso", "off",
          "gro", "off"], "shaping a link")
    if profile.rate_bps:
        _cmd(["tc", "-n", netns, "qdisc", "replace", "dev", dev, "root", *profile.tbf_args()],
             "shaping a link")


CPU_SHARE = 25  # --degrade NODE:cpu: the node's processes get this % of one CPU together
CGROUP_V1 = Path("/sys/fs/cgroup/cpu")  # the cpu controller: v1 here, or the unified v2 tree
CGROUP_V2 = Path("/sys/fs/cgroup")


def parse_degrade(specs: list[str], nodes: int, link: str) -> dict[int, str]:
    """--degrade n3:100mbit or n3:cpu (repeatable): node index -> its link
    profile, or "cpu" (its processes held to a share of one CPU).  A node
    that does not exist, a profile that is unknown or a node named twice
    is refused, before anything is made."""
    out: dict[int, str] = {}
    for spec in specs:
        node, sep, profile = spec.partition(":")
        m = re.fullmatch(r"n(0|[1-9][0-9]{0,2})", node)
        if not sep or not m:
            raise CommscopeError(f"bad --degrade '{spec}' (NODE:PROFILE, e.g. n3:100mbit or "
                                 "n3:cpu)")
        i = int(m.group(1))
        if i >= nodes:
            raise CommscopeError(f"--degrade {spec}: no node n{i} (the nodes are n0-n{nodes - 1})")
        if profile != "cpu" and profile not in PROFILES:
            raise CommscopeError(f"--degrade {spec}: unknown link profile '{profile}' (choose "
                                 f"from {', '.join(PROFILES)}, or cpu)")
        if i in out:
            raise CommscopeError(f"--degrade names n{i} twice")
        if profile != "cpu":
            own, base = PROFILES[profile].rate_bps, PROFILES[link].rate_bps
            if own is None or (base is not None and own >= base):
                raise CommscopeError(f"--degrade {spec}: {profile} is no slower than the "
                                     f"cluster's {link}")
        out[i] = profile
    if "cpu" in out.values() and cpu_controller() is None:
        raise CommscopeError("--degrade NODE:cpu needs the cgroup cpu controller (neither "
                             f"{CGROUP_V1} nor a cpu.max under {CGROUP_V2} is here)")
    return out


def cpu_controller() -> tuple[int, Path] | None:
    """(cgroup version, the folder a node's group is made in), or None
    where there is none this process may make a group in."""
    if (CGROUP_V1 / "cpu.cfs_quota_us").exists() and os.access(CGROUP_V1, os.W_OK):
        return 1, CGROUP_V1
    ctl = CGROUP_V2 / "cgroup.subtree_control"
    try:
        if "cpu" in ctl.read_text().split() and os.access(CGROUP_V2, os.W_OK):
            return 2, CGROUP_V2
    except OSError:
        pass
    return None


def _cpu_group(netns: str) -> str:
    """A cgroup held to CPU_SHARE % of one CPU, for one node's processes."""
    version, root = cpu_controller() or (0, Path())
    if not version:
        raise CommscopeError("the cgroup cpu controller went away")
    d = root / f"commscope-{netns}"
    period = 100_000
    try:
        d.mkdir(exist_ok=True)
        if version == 1:
            (d / "cpu.cfs_period_us").write_text(str(period))
            (d / "cpu.cfs_quota_us").write_text(str(period * CPU_SHARE // 100))
        else:
            (d / "cpu.max").write_text(f"{period * CPU_SHARE // 100} {period}")
    except OSError as exc:  # a read-only cgroup tree (a container): said, nothing left
        raise CommscopeError(f"--degrade NODE:cpu: cannot hold a node to a share of a CPU "
                             f"({d}: {exc.strerror or exc})") from exc
    return str(d)


def _remove_groups(pre: str) -> list[str]:
    """Remove the cluster's CPU groups (a group empties a moment after its
    last process is killed); those that stay are returned."""
    left = []
    for root in (CGROUP_V1, CGROUP_V2):
        if not root.is_dir():
            continue
        for d in sorted(root.glob(f"commscope-{pre}-*")):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            if d.exists():
                left.append(str(d))
    return left


def up(name: str, nodes: int, link: str, degrade: list[str] | None = None) -> EmuCluster:
    require_root("cluster up")
    validate_name(name)
    if not 1 <= nodes <= MAX_NODES:
        raise CommscopeError(f"--nodes must be between 1 and {MAX_NODES}, got {nodes}")
    if link not in PROFILES:
        raise CommscopeError(f"unknown link profile '{link}' (choose from "
                             f"{', '.join(PROFILES)})")
    slow = parse_degrade(degrade or [], nodes, link)
    pre = prefix(name)
    if _state_file(name).exists() or any(
            p.name.startswith(pre + "-") for p in NETNS_DIR.glob("*")):
        raise CommscopeError(f"an emulated cluster named '{name}' exists already "
                             f"(`commscope cluster down {name}` removes it)")
    state = STATE_ROOT / pre
    state.mkdir(parents=True, exist_ok=True)
    node_list = tuple(
        Node(index=i, hostname=f"{name}-n{i}", address=f"10.77.0.{i + 1}",
             netns=f"{pre}-n{i}", uts=str(state / f"n{i}.uts"), ipc=str(state / f"n{i}.ipc"),
             link=slow.get(i, "") if slow.get(i) != "cpu" else "")
        for i in range(nodes))
    c = EmuCluster(name=name, prefix=pre, link=link, subnet=SUBNET, bridge_netns=f"{pre}-br",
                   nodes=node_list, agent=str(state / "agent"), created_at=time.time())
    profile = PROFILES[link]
    try:
        if any(v == "cpu" for v in slow.values()):
            node_list = tuple(replace(n, cgroup=_cpu_group(n.netns)) if slow.get(n.index) == "cpu"
                              else n for n in node_list)
            c = replace(c, nodes=node_list)
        _ip(["netns", "add", c.bridge_netns], "creating the switch")
        _ip(["-n", c.bridge_netns, "link", "add", "br0", "type", "bridge"], "creating the switch")
        _ip(["-n", c.bridge_netns, "link", "set", "br0", "up"], "creating the switch")
        for n in node_list:
            _persist_ns(n)
            port = f"p{n.index}"
            _ip(["link", "add", "eth0", "netns", n.netns, "type", "veth", "peer", "name", port,
                 "netns", c.bridge_netns], "wiring a node")
            _ip(["-n", c.bridge_netns, "link", "set", port, "master", "br0", "up"],
                "wiring a node")
            _ip(["-n", n.netns, "addr", "add", f"{n.address}/24", "dev", "eth0"], "wiring a node")
            _ip(["-n", n.netns, "link", "set", "eth0", "up"], "wiring a node")
            _ip(["-n", n.netns, "link", "set", "lo", "up"], "wiring a node")
            own = PROFILES[n.link] if n.link else profile  # a degraded node: both directions
            _shape(n.netns, "eth0", own)
            _shape(c.bridge_netns, port, own)
        Path(c.agent).write_text(agent_script(c))
        os.chmod(c.agent, 0o755)
        (state / "state.json").write_text(json.dumps(c.to_json(), indent=1) + "\n")
    except BaseException:
        _teardown(pre)
        raise
    return c


def _ns_inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def processes_in(netns_paths: list[Path]) -> set[int]:
    """Processes whose network namespace is one of these."""
    want = {i for i in (_ns_inode(p) for p in netns_paths) if i}
    found: set[int] = set()
    if not want:
        return found
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _ns_inode(Path("/proc", entry, "ns", "net")) in want:
            found.add(int(entry))
    found.discard(os.getpid())
    return found


def _kill_inside(paths: list[Path]) -> int:
    killed: set[int] = set()
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        pids = processes_in(paths)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, sig)
                killed.add(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and processes_in(paths):
            try:
                os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
    return len(killed)


def _teardown(pre: str) -> int:
    names = sorted(p.name for p in NETNS_DIR.glob(f"{pre}-*")) if NETNS_DIR.is_dir() else []
    killed = _kill_inside([NETNS_DIR / n for n in names])
    state = STATE_ROOT / pre
    for f in sorted(state.glob("*.uts")) + sorted(state.glob("*.ipc")):
        _umount(str(f))
    _remove_groups(pre)  # said by down() where one stays
    for n in names:  # deleting a node's namespace deletes its veth pair too
        subprocess.run(["ip", "netns", "del", n], capture_output=True, timeout=30, check=False)
    if state.is_dir():
        for f in state.iterdir():
            f.unlink()
        state.rmdir()
    return killed


def down(name: str) -> int:
    """Kill what runs inside, then delete namespaces, links and state.
    Returns the number of processes killed."""
    require_root("cluster down")
    validate_name(name)
    pre = prefix(name)
    has_ns = NETNS_DIR.is_dir() and any(NETNS_DIR.glob(f"{pre}-*"))
    if not (STATE_ROOT / pre).exists() and not has_ns:
        raise CommscopeError(f"no emulated cluster named '{name}'")
    killed = _teardown(pre)
    left = sorted(p.name for p in NETNS_DIR.glob(f"{pre}-*")) if NETNS_DIR.is_dir() else []
    if left:
        raise CommscopeError(f"could not delete namespaces {', '.join(left)}")
    if groups := _remove_groups(pre):
        raise CommscopeError(f"could not remove CPU groups {', '.join(groups)} (a process "
                             "still in them)")
    return killed
