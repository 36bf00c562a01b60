"""Runtime settings a user (or the tuning advisor) hands to an MPI: the
environment variables of its control variables, read from a file, applied
to a job, and read back from inside the job through MPI_T, so that a
misspelled name or a value the implementation turned into another is
refused instead of measured as if it had been taken."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import CommscopeError
from ..store.outputs import read_user_text
from ..store.records import Header
from ..store.sizes import parse_size
from .mpi import BIND
from .provenance import SETTING_PREFIXES


def parse_file(path: str | Path) -> tuple[tuple[str, str], ...]:
    """KEY=VALUE lines (`export ` allowed, # comments); only the variables
    of MPI implementations and their transports."""
    p = Path(path)
    return parse_text(read_user_text(p, "settings file"), p)


def parse_text(text: str, p: str | Path = "settings") -> tuple[tuple[str, str], ...]:
    """parse_file's reading of a text (p names it in messages)."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        key, eq, value = line.partition("=")
        key, value = key.strip(), value.strip().strip("'\"")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise CommscopeError(f"{p}:{n}: expected NAME=VALUE, got '{raw.strip()[:60]}'")
        if not key.startswith(SETTING_PREFIXES):
            raise CommscopeError(f"{p}:{n}: {key} is not an MPI setting (names start with "
                                 + ", ".join(SETTING_PREFIXES) + ")")
        if not value or any(c in value for c in "\n\r\0"):
            raise CommscopeError(f"{p}:{n}: {key} has no value")
        if key.startswith("COMMSCOPE_") and (key != "COMMSCOPE_BIND" or value not in BIND):
            raise CommscopeError(f"{p}:{n}: commscope's own setting is COMMSCOPE_BIND="
                                 f"{'|'.join(BIND)}, not {key}={value}")
        out[key] = value
    if not out:
        raise CommscopeError(f"settings file {p} sets nothing")
    why = mv2_ranges_unsafe(out)
    if why:
        raise CommscopeError(f"{p}: {why}")
    return tuple(sorted(out.items()))


# MVAPICH2 2.3.7's indexed tuning tables (on by default) take one algorithm a
# collective; a user's MV2_<...>_TUNING of "algorithm:from-to" ranges is read
# into them half-filled (<op>_tuning.c fills the indexed table only for one
# element), and the job crashed (exit 11, alltoall, 2026-12-07).  Ranges are
# read with MV2_USE_INDEXED_TUNING=0 and the collective's own flag 0.
_MV2_TUNING = re.compile(r"MV2_(?:INTER_|INTRA_)?([A-Z]+)_TUNING")
MV2_INDEXED_OPS = ("BCAST", "SCATTER", "GATHER", "REDUCE", "ALLREDUCE", "ALLGATHER",
                   "ALLTOALL", "ALLTOALLV")


def mv2_ranges_unsafe(settings: Mapping[str, str]) -> str:
    """Why MVAPICH2 would not read these settings' ranges safely ('' if it would)."""
    for key, value in sorted(settings.items()):
        m = _MV2_TUNING.fullmatch(key)
        # one range ("3:0-+") is read as one number; a call without an indexed
        # table (allgatherv, red_scat) reads its ranges whatever the flags
        if not m or "," not in value or m.group(1) not in MV2_INDEXED_OPS:
            continue
        op = m.group(1)
        need = ["MV2_USE_INDEXED_TUNING", f"MV2_USE_INDEXED_{op}_TUNING"]
        off = [k for k in need if settings.get(k) != "0"]
        if off:
            return (f"{key}={value}: MVAPICH2 reads ranges only with "
                    + " and ".join(f"{k}=0" for k in off)
                    + " (with its indexed tables on, a job given ranges crashed)")
    return ""


def cvar_name(key: str) -> str | None:
    """The MPI_T name of a setting's variable: Open MPI's MCA parameter
    without its OMPI_MCA_ prefix, MPICH's MPIR_CVAR_ as it is; None for
    variables outside MPI_T (UCX, Intel MPI, libfabric, NCCL)."""
    if key.startswith("OMPI_MCA_"):
        return key[len("OMPI_MCA_"):]
    if key.startswith("MPIR_CVAR_"):
        return key
    return None


_FLAG = {"true": 1.0, "yes": 1.0, "on": 1.0, "false": 0.0, "no": 0.0, "off": 0.0}


def _num(v: str) -> float | None:
    """A number, or a flag as Open MPI spells one (true/false, yes/no)."""
    try:
        return float(v)
    except ValueError:
        return _FLAG.get(v.strip().lower())


def refused(settings: Mapping[str, str], cvars: Mapping[str, object] | None) -> list[str]:
    """What the job's own read-back says against the settings: a name the
    implementation does not have, or a value it holds differently.  An
    enumeration MPICH reads back as a number (its items have no MPI_T names)
    is accepted as taken; so is an MPICH string variable the implementation
    has, whose value MPI_T cannot confirm (MPICH 4.0 and 5.0 read a string
    variable back as its compiled default, whatever the environment set)."""
    out = []
    for key, want in settings.items():
        name = cvar_name(key)
        if name is None:
            continue
        if cvars is None:
            out.append(f"{key}: the job did not read its control variables back")
            continue
        got = cvars.get(name)
        if got is None:
            out.append(f"{key}: {name} is not a control variable of this implementation "
                       f"(misspelled, or of a component not in use)")
            continue
        got = str(got)
        a, b = _num(want), _num(got)
        if got == want or (a is not None and b is not None and a == b):
            continue
        if a is None and key.startswith("MPIR_CVAR_"):
            continue  # an enumeration read as its number, or a string read as its default
        out.append(f"{key}={want} was not taken: the implementation holds {name}={got}")
    return out


def _cpu_set(text: str) -> set[int] | None:
    """"0-3,6" as {0, 1, 2, 3, 6}; None for a list the core could not give."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        out.update(range(int(lo), int(hi or lo) + 1))
    return out or None


def binding_refused(bind: str, cpus: Sequence[str], cores: int, oversubscribed: bool
                    ) -> list[str]:
    """COMMSCOPE_BIND read back from the CPUs each rank was allowed, as the
    core reported them after MPI_Init: unbound ranks may each run on every
    one of this machine's cores; bound ones each on fewer, none shared."""
    sets = [_cpu_set(c) for c in cpus]
    if not sets or any(s is None for s in sets):
        return [f"COMMSCOPE_BIND={bind}: the job did not report each rank's CPUs"]
    if bind == "none" or oversubscribed:  # an oversubscribed job is never bound
        return [f"COMMSCOPE_BIND={bind} was not taken: rank {i} may run only on CPUs {c}"
                for i, (s, c) in enumerate(zip(sets, cpus, strict=True))
                if len(s or ()) < cores][:1]
    for i, (s, c) in enumerate(zip(sets, cpus, strict=True)):
        if len(s or ()) >= cores:
            return [f"COMMSCOPE_BIND={bind} was not taken: rank {i} may run on every CPU ({c})"]
        for j in range(i):
            if s & (sets[j] or set()):
                return [f"COMMSCOPE_BIND={bind} was not taken: ranks {j} and {i} share CPUs "
                        f"({cpus[j]}; {c})"]
    return []


# Intel MPI checks its I_MPI_ADJUST_<OP> variables at startup and says so on
# stderr ("MPI startup(): Incorrect algorithm: BCAST=99, will be ignored")
_IMPI_IGNORED = re.compile(r"Incorrect (algorithm|adjust value): (\w+)=(\S+?),? will be ignored")


def intel_ignored(said: str) -> dict[str, str]:
    """I_MPI_ADJUST_<OP> -> what Intel MPI found wrong with it ("algorithm",
    "adjust value"), for each one it said it ignores."""
    return {f"I_MPI_ADJUST_{op}": kind for kind, op, _ in _IMPI_IGNORED.findall(said)}


# MVAPICH2 (MV2_SHOW_ENV_INFO=2) prints every parameter of its channel at
# start-up, one "\tMV2_SMP_EAGERSIZE              : 8193" a line, on rank 0's
# stderr (ibv_param.c, mv2_show_all_params): its variables are no MPI_T ones
_MV2_PARAM = re.compile(r"^\s*(MV2_[A-Z0-9_]+)\s+:\s+(.*?)\s*$", re.M)


def mv2_params(said: str) -> dict[str, str]:
    """Each MVAPICH2 parameter it printed with its value (the first time)."""
    out: dict[str, str] = {}
    for name, value in _MV2_PARAM.findall(said):
        out.setdefault(name, value)
    return out


def _bytes(v: str) -> int | None:
    """A number as MVAPICH2 takes one (8192, 8K, 1M), read as --sizes reads one."""
    try:
        return parse_size(v.strip())
    except CommscopeError:
        return None


# what MVAPICH2 2.3.7 prints for a value given by name (MRAILI_Protocol_t)
_MV2_PROTOCOLS = {"R3": "2", "RPUT": "3", "RGET": "4"}


def _mv2_same(key: str, want: str, got: str) -> bool:
    """Whether MVAPICH2 holds what was set: sizes in any unit, a protocol by
    its name, and its shared-memory eager size one above what was set (it
    adds 1 after reading it: ch3_smp_progress.c)."""
    if got == want or _MV2_PROTOCOLS.get(want.upper()) == got:
        return True
    a, b = _bytes(want), _bytes(got)
    if a is None or b is None:
        return False
    return a == b or (key == "MV2_SMP_EAGERSIZE" and b == a + 1)


def mv2_refused(settings: Mapping[str, str], said: str) -> list[str]:
    """MVAPICH2's variables against what it printed it runs with (a job
    started with MV2_SHOW_ENV_INFO=2): a value it holds otherwise was not
    taken.  A name it did not print is not judged (mv2_unread): MVAPICH2
    2.3.7 reads some 500 of its variables with getenv alone, MV2_SMP_USE_CMA
    among them, and prints only those of its parameter table."""
    mine = {k: v for k, v in settings.items() if k.startswith("MV2_")}
    if not mine:
        return []
    got = mv2_params(said)
    if not got:
        return [f"{k}: MVAPICH2 printed no parameters (MV2_SHOW_ENV_INFO=2): not read back"
                for k in mine]
    return [f"{key}={want} was not taken: MVAPICH2 holds {key}={got[key]}"
            for key, want in mine.items() if key in got and not _mv2_same(key, want, got[key])]


def mv2_unread(settings: Mapping[str, str], said: str) -> list[str]:
    """The MV2_ settings MVAPICH2 printed nothing of, where it printed its
    parameters: taken or misspelled, it does not say."""
    got = mv2_params(said)
    return [k for k in settings if k.startswith("MV2_") and got and k not in got]


def ignored_by_intel(settings: Mapping[str, str], said: str) -> list[str]:
    """The I_MPI_ADJUST settings Intel MPI said it ignores."""
    return [f"{key}={settings[key]} was not taken: Intel MPI says 'Incorrect {kind}' and "
            "ignores it" for key, kind in intel_ignored(said).items() if key in settings]


# UCX at log level info names, for each endpoint it makes, the transports
# of its lanes: "ep_cfg[1]: tag(sysv/memory cma/memory) rma(...) am(...)"
_EP_CFG = re.compile(r"ep_cfg\[\d+\]: (.*)$", re.M)
_LANES = re.compile(r"\b(tag|am|rma|rma_am)\(([^)]*)\)")
# UCX_TLS words that name groups or negations rather than one transport
_UCX_GROUPS = {"all", "sm", "shm", "mm", "ib", "rc", "ud", "dc", "rc_x", "ud_x", "dc_x",
               "cuda", "rocm", "ugni"}


_UCX_READ = re.compile(r"UCX_\* env variables?: ")
_UCX_UNUSED = re.compile(r"unused env variable: (UCX_\w+)")


def ucx_unread(settings: Mapping[str, str], said: str) -> list[str]:
    """UCX variables read back from UCX's own words at log level info: it
    lists the UCX_* variables it read (so it was loaded at all: Debian's
    Open MPI 4.1 never loads it here) and warns of each it does not have."""
    keys = [k for k in settings if k.startswith("UCX_") and k != "UCX_LOG_LEVEL"]
    if not keys:
        return []
    if not _UCX_READ.search(said):
        return [f"{', '.join(keys)}: UCX never read its variables (is this implementation "
                "on UCX?)"]
    unused = set(_UCX_UNUSED.findall(said))
    return [f"{k}={settings[k]} was not taken: UCX says it has no such variable"
            for k in keys if k in unused]


# UCX_PROTO_INFO=y (UCX's protocol selection, v2): a table per endpoint
# configuration and operation, rows of "LO..HI | protocol | transport"
_UCX_LINE = re.compile(r"^\[[^\]]*\] \[[^:\]]*:(\d+):\d+\]\s+\|(.*)\|\s*$", re.M)
_UCX_TITLE = re.compile(r"^\s*ucp_context_\d+ (\S+) cfg#\d+\s*$")
_UCX_ROW = re.compile(r"^\s*(\d+[KMG]?)\.\.(\d+[KMG]?|inf)\s*$")


def ucx_protocols(said: str) -> list[str]:
    """What UCX chose to send a tagged message with (MPI's sends) to other
    processes, per range of sizes, as its protocol information prints it:
    one line per peer kind and memory type, e.g. "intra-node, from host
    memory: 0..92 eager short (sysv/memory); 93..5028 eager copy-in
    copy-out (sysv/memory); 5029..inf (?) rendezvous zero-copy read from
    remote (cma/memory)".  Each process prints its own tables, interleaved
    with the others' lines; tables alike are said once."""
    current: dict[str, tuple[str, str] | None] = {}
    tables: dict[tuple[str, str], list[str]] = {}
    for pid, body in _UCX_LINE.findall(said):
        cells = [c.strip() for c in body.split("|")]
        if len(cells) == 2 and (t := _UCX_TITLE.match(cells[0])):
            op = cells[1]
            keep = t.group(1) != "self" and op.startswith("tagged message by ucp_tag_send* from")
            current[pid] = (t.group(1), op.split(" from ", 1)[1]) if keep else None
            if keep and current[pid] not in tables:
                tables[current[pid]] = []  # type: ignore[index]
            continue
        key = current.get(pid)
        if key is None or len(cells) != 3 or not (r := _UCX_ROW.match(cells[0])):
            continue
        row = f"{r.group(1)}..{r.group(2)} {cells[1]} ({cells[2]})"
        if row not in tables[key]:
            tables[key].append(row)
    return [f"{peer}, from {memory}: " + "; ".join(rows)
            for (peer, memory), rows in tables.items() if rows]


def ucx_lanes(said: str) -> list[str]:
    """The transports UCX used to reach other processes (endpoints to self
    left out), as transport/device, in the order UCX named them."""
    out: list[str] = []
    for line in _EP_CFG.findall(said):
        tag = dict(_LANES.findall(line)).get("tag", "")
        if "self/" in tag:
            continue  # the endpoint to the process itself
        for lane in _LANES.findall(line):
            for tl in lane[1].split():
                if tl not in out:
                    out.append(tl)
    return out


def ucx_refused(settings: Mapping[str, str], lanes: list[str]) -> list[str]:
    """UCX_TLS read back from the lanes UCX used: a transport the setting
    did not allow, or no lane reported at all.  Groups (sm, ib, all) and
    negations (^tcp) are not checked: their members depend on the build."""
    want = settings.get("UCX_TLS")
    if not want:
        return []
    if not lanes:
        return ["UCX_TLS: UCX named no endpoint's transports (is this implementation on UCX?)"]
    words = [w.strip() for w in want.split(",") if w.strip()]
    if any(w.startswith("^") or w in _UCX_GROUPS for w in words):
        return []
    allowed = set(words)
    bad = [tl for tl in lanes if tl.split("/")[0] not in allowed]
    return [f"UCX_TLS={want} was not taken: UCX used {', '.join(bad)}"] if bad else []



# -- one job's settings: what it needs to read them back, and the verdict ------
# The control variables that decide how a message of a given size travels,
# read in every job (not only where a setting names them), so that a
# difference between two configurations can be traced to the limit that
# causes it (analysis/causes.py).  A name the implementation lacks reads null.
PROTOCOL_CVARS: dict[str, tuple[str, ...]] = {
    "openmpi": (
        # Open MPI 4's shared-memory transport is vader, Open MPI 5's sm
        "btl_vader_eager_limit", "btl_vader_max_send_size", "btl_vader_single_copy_mechanism",
        "btl_vader_max_inline_send", "btl_sm_eager_limit", "btl_sm_max_send_size",
        "btl_sm_single_copy_mechanism", "btl_sm_max_inline_send",
        "btl_tcp_eager_limit", "btl_tcp_max_send_size", "pml"),
    "mpich": (
        "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ",
        "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE",
        "MPIR_CVAR_CH4_XPMEM_ENABLE", "MPIR_CVAR_CH4_IPC_XPMEM_P2P_THRESHOLD",
        "MPIR_CVAR_CH4_NETMOD", "MPIR_CVAR_CH4_SHM"),
}
PROTOCOL_CVARS["intel"] = PROTOCOL_CVARS["mpich"]


def readback_env(settings: Mapping[str, str], env: Mapping[str, str],
                 protocols: bool, family: str = "") -> dict[str, str]:
    """The variables a job is started with so that its settings can be read
    back: the MPI_T names the core reads after MPI_Init (the settings' and
    the family's PROTOCOL_CVARS); UCX at log level
    info, where it lists the variables it read, warns of those it lacks and
    names each endpoint's transports (once per endpoint, before any timed
    loop); and, where `protocols` (its UCX has UCX_PROTO_INFO), the
    protocol it chose for each range of sizes, printed once at start-up."""
    out: dict[str, str] = {}
    names = [n for k in settings if (n := cvar_name(k))]
    names += [n for n in PROTOCOL_CVARS.get(family, ()) if n not in names]
    if names:
        out["COMMSCOPE_CVARS"] = ",".join(names)
    if any(k.startswith("UCX_") for k in settings) and "UCX_LOG_LEVEL" not in env:
        out["UCX_LOG_LEVEL"] = "info"
    if any(k.startswith("MV2_") for k in settings):
        out["MV2_SHOW_ENV_INFO"] = "2"  # MVAPICH2 prints what it runs with
    if protocols:
        out["UCX_PROTO_INFO"] = "y"
    return out


@dataclass(frozen=True)
class ReadBack:
    refused: list[str]  # settings the job did not run under
    notes: list[str]  # what the libraries said they chose, for the stored stderr


def read_back(settings: Mapping[str, str], header: Header | None, said: str, *, cores: int,
              oversubscribed: bool, protocols: bool, finished: bool) -> ReadBack:
    """Every setting against what the job reports: MPI_T values (header),
    Intel MPI's ignored values and UCX's own words (`said`: the job's
    stdout and stderr), the CPUs each rank was allowed (binding; judged
    only for a job that finished)."""
    refusals = refused(settings, header.cvars if header else None)
    refusals += ignored_by_intel(settings, said)
    refusals += mv2_refused(settings, said)
    notes: list[str] = []
    if (bind := settings.get("COMMSCOPE_BIND")) and finished:
        refusals += binding_refused(bind, header.cpus if header else (), cores, oversubscribed)
    if any(k.startswith("UCX_") for k in settings):
        unread = ucx_unread(settings, said)
        lanes = ucx_lanes(said)
        refusals += unread or ucx_refused(settings, lanes)
        if "UCX_TLS" in settings:
            notes.append(f"UCX lanes to the other ranks: {' '.join(lanes) or 'none reported'}")
    if protocols:
        notes += [f"UCX protocols, {p}" for p in ucx_protocols(said)]
    notes += [f"{k}: not read back (MVAPICH2 prints only its parameter table; it reads this "
              "one, or a misspelling of another, with getenv alone)"
              for k in mv2_unread(settings, said)]
    return ReadBack(refusals, notes)
