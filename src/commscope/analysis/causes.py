"""Causes before comparisons: which known mechanism explains a difference
the statistics separated, from what the run itself recorded.

A finding says "A is slower than B from 4 KiB to 8 KiB" or "bw loses 71%
of its bandwidth from 2 KiB to 4 KiB".  Before that reaches a user as
advice, this module asks what the libraries and the machine reported:

- a protocol limit: each job reads its implementation's eager limits
  through MPI_T (settings.PROTOCOL_CVARS).  A gap that begins at the first
  size one side sends by rendezvous, while the other still sends it
  eagerly, is that side's eager limit, and the limit is a setting;
- the caches: the probe's copy bandwidth from memory and its cache sizes.
  A bandwidth above what this machine copies from memory means the message
  sat in cache; a drop where the message outgrows a cache level is a cache
  boundary, not a protocol loss;
- the sweep's edges: the first size swept also pays the warm-up, and a
  claim resting on it alone is not made.

A difference that none explains says so.  Conclusions that share a cause
are one conclusion (summary.py), and a cause that is a setting can be
measured before it is advised (advise.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..store.db import Store
from ..store.sizes import human_bytes
from .algorithms import CHOSEN, MV2_ALGORITHMS, variable
from .series import Config, Series

# A message of s bytes goes eagerly while s plus the library's header fits
# the limit: Open MPI's ob1 counts its header union (56 B on x86-64:
# pml_ob1_sendreq.h:380), so a 4 KiB payload under a 4096 B limit already
# goes by rendezvous.
HEADER_SLACK = 56


@dataclass(frozen=True)
class Limit:
    """A size limit between two protocols, as the job read it back."""

    variable: str  # its MPI_T name
    setting: str  # the environment variable that sets it
    bytes: int
    what: str  # in words: "Open MPI's shared-memory eager limit"
    # variables that must rise with it (Open MPI refuses an eager limit
    # above the largest send), with their values as read
    companions: tuple[tuple[str, str, int], ...] = ()
    after: str = "by rendezvous"  # how a message above it travels
    slack: int = HEADER_SLACK  # what the library adds to the payload before comparing

    def first_rendezvous(self, sizes: Sequence[int]) -> int | None:
        """The smallest swept size beyond the limit (sent by rendezvous, for
        an eager limit)."""
        return next((s for s in sorted(sizes) if s + self.slack > self.bytes), None)


@dataclass(frozen=True)
class Facts:
    """What one configuration's jobs recorded about themselves."""

    family: str = ""
    cvars: Mapping[str, object] = field(default_factory=dict, compare=False)
    variant: str = ""  # a library of the family known by its own name: "mvapich2"


@dataclass(frozen=True)
class Machine:
    """The probe's figures a cause is checked against."""

    mem_copy_gbs: float | None = None  # copy from memory (64 MiB), GB/s
    caches: tuple[tuple[str, int], ...] = ()  # ("L2", bytes), ...


@dataclass(frozen=True)
class Cause:
    """The mechanism behind a finding.  kind: limit (a protocol limit, a
    setting) | algorithm (a collective's, a setting) | break (a protocol
    switch measured where no variable read explains it) | cache | edge |
    buffers (hot against cold buffers: what the cache gives) | unexplained.
    A cause with a setting can be measured (advise.py)."""

    kind: str
    text: str  # the mechanism in words, with the figures that show it
    config: Config | None = None  # whose setting it is
    limit: Limit | None = None
    sizes: tuple[int, int] | None = None  # the sizes the mechanism concerns
    # what to try: each candidate a set of settings
    candidates: tuple[tuple[tuple[str, str], ...], ...] = ()
    boundary: int | None = None  # limit: the first swept size beyond it
    coll: str = ""  # algorithm: the collective whose algorithm the library chose

    @property
    def key(self) -> tuple[object, ...]:
        """Findings with equal keys have one cause and make one conclusion."""
        if self.kind == "limit" and self.limit is not None and self.config is not None:
            return (self.kind, self.config, self.limit.variable)
        if self.kind == "algorithm" and self.config is not None:
            return (self.kind, self.config, self.coll)
        return ()

    @property
    def claims(self) -> bool:
        """Whether a conclusion may rest on it: a cache boundary or the edge
        of the sweep alone carry no claim."""
        return self.kind in ("limit", "algorithm", "break", "buffers", "unexplained")


def _int(v: object) -> int | None:
    try:
        n = int(str(v))
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def limits(facts: Facts, cluster: str) -> list[Limit]:
    """The eager limits that decide a point-to-point message's protocol
    between the ranks of this configuration, from the values read back."""
    cv, out = facts.cvars, []
    # under pml ucx the BTLs carry nothing: UCX decides the protocol, and
    # their limits, read all the same, would name a wrong cause ("^ucx", the
    # value Debian's Open MPI carries, excludes it)
    pml = str(cv.get("pml") or "")
    ucx = not pml.startswith("^") and "ucx" in pml.split(",")
    if facts.family == "openmpi" and not ucx:
        # the shared-memory transport on one machine (vader in Open MPI 4, sm
        # in 5), TCP between nodes
        btls = ("vader", "sm") if cluster == "local" else ("tcp",)
        for btl in btls:
            name = f"btl_{btl}_eager_limit"
            if (n := _int(cv.get(name))) is not None:
                comp = f"btl_{btl}_max_send_size"
                m = _int(cv.get(comp))
                copy = cv.get(f"btl_{btl}_single_copy_mechanism")
                how = (f"; there a handshake, then one "
                       f"{'process_vm_readv' if copy == 'cma' else str(copy)} copy "
                       f"(btl_{btl}_single_copy_mechanism = {copy})"
                       if copy and copy not in ("none", "emulated") else "")
                out.append(Limit(name, f"OMPI_MCA_{name}", n,
                                 f"Open MPI's {'TCP' if btl == 'tcp' else 'shared-memory'} "
                                 "eager limit" + how,
                                 ((comp, f"OMPI_MCA_{comp}", m),) if m else ()))
                # only with XPMEM does vader send above its inline limit by
                # single copy; without it the limit picks a free list, and the
                # step after 256 B is ob1's own, fixed (pml_ob1_isend.c:95)
                inline = f"btl_{btl}_max_inline_send"
                if copy == "xpmem" and (k := _int(cv.get(inline))) is not None and k < n:
                    out.append(Limit(inline, f"OMPI_MCA_{inline}", k,
                                     "Open MPI's inline-send limit",
                                     after="without inlining (one more copy)", slack=0))
                break
    # MPICH's protocol limits are not read: in ch4 the switch depends on the
    # device (ch4:ucx leaves it to UCX), and a value read that does not decide
    # the switch would name a wrong cause.  A measured break says where it is.
    return out


def _next_pow2_above(n: int) -> int:
    k = 1
    while k <= n:
        k <<= 1
    return k


def _raise_to(limit: Limit, hi: int) -> tuple[tuple[str, str], ...]:
    """Settings that send every size up to `hi` eagerly: the limit at the
    power of two above hi plus its header, and its companions with it."""
    want = _next_pow2_above(hi + limit.slack - 1)
    out = [(limit.setting, str(want))]
    out += [(env, str(want)) for _, env, cur in limit.companions if cur < want]
    return tuple(sorted(out))




def _break(cfg: Config, a: int, b: int) -> Cause:
    return Cause("break", f"{cfg.mpi} changes protocol between {human_bytes(a)} and "
                 f"{human_bytes(b)} (the step in its latency; the variable that sets it is not "
                 "among those commscope reads)", cfg, sizes=(a, b))


def buffers_of(c: Config) -> str:
    """How a configuration's buffers were held (--buffers): hot (one buffer,
    reused), cold (pools beyond the last-level cache) or evicted (every rank
    streams over twice the last-level cache before each operation: state
    other than the message data out of cache too)."""
    return next((t.split("=", 1)[1] for t in c.mpi.split() if t.startswith("buffers=")), "hot")


def cold_pair(a: Config, b: Config) -> bool:
    """Whether two configurations differ only in their buffers (hot, cold
    or evicted)."""
    def bare(c: Config) -> str:
        return " ".join(t for t in c.mpi.split() if not t.startswith("buffers="))
    return buffers_of(a) != buffers_of(b) and bare(a) == bare(b) and (
        a.np, a.cluster) == (b.np, b.cluster)


_HELD = {"hot": "one buffer the cache keeps",
         "cold": "data the cache does not hold (pools twice the last-level cache, one slot per "
                 "message)",
         "evicted": "each operation alone after every rank has streamed over twice the "
                    "last-level cache (state other than the message data out of cache too: "
                    "code, TLB entries, the library's data), as after an application's compute "
                    "sweep"}


def of_faster(winner: Config, loser: Config, span: tuple[int, int], sizes: Sequence[int],
              facts: Mapping[Config, Facts], benches: Sequence[str] = (),
              breaks: Mapping[Config, tuple[int, int]] | None = None) -> Cause:
    """Why `loser` is slower than `winner` over `span` (in `benches`);
    `breaks`: the protocol switches measured in each configuration's latency."""
    lo, hi = span
    if cold_pair(winner, loser):
        lo_b, w_b = buffers_of(loser), buffers_of(winner)
        if "hot" not in (lo_b, w_b):  # two ways out of cache: neither is expected faster
            return Cause("buffers", f"the {lo_b} runs time {_HELD[lo_b]}, the {w_b} runs "
                         f"{_HELD[w_b]}: two ways data can be out of cache, neither a setting",
                         loser, sizes=span)
        if w_b == "hot":  # out of cache slower than in it: what the cache gives
            return Cause("buffers", f"the {lo_b} runs time {_HELD[lo_b]}, the {w_b} runs "
                         f"{_HELD[w_b]}: the difference is what the cache gives this library, "
                         "not a setting", loser, sizes=span)
        return Cause("unexplained", f"{w_b} buffers measured faster than {lo_b} ones: no cache "
                     "mechanism explains that (the host's modes may differ between the runs)")
    ordered = sorted(sizes)
    nxt = {a: b for a, b in zip(ordered, ordered[1:], strict=False)}
    for lim in limits(facts.get(loser, Facts()), loser.cluster):
        b = lim.first_rendezvous(ordered)
        if b is None or lo not in (b, nxt.get(b)):
            continue  # the gap does not begin where this side turns to rendezvous
        theirs = [w.first_rendezvous(ordered) for w in limits(facts.get(winner, Facts()),
                                                               winner.cluster)]
        if any(t is not None and t <= lo for t in theirs):
            continue  # both send it by rendezvous: the limit does not tell them apart
        return Cause(
            "limit",
            f"{loser.mpi} sends {human_bytes(b)} and more {lim.after} "
            f"({lim.variable} = {lim.bytes} B, {lim.what})",
            loser, lim, (lo, hi), (_raise_to(lim, hi),), b)
    if (br := (breaks or {}).get(loser)) is not None and br[1] == lo:
        return _break(loser, *br)
    family = facts.get(loser, Facts()).family
    if len(benches) == 1 and benches[0] in CHOSEN and facts.get(loser, Facts()).variant:
        # MVAPICH2 chooses from its own MV2_ tuning tables, not MPICH's variables
        coll = benches[0]
        said = (f"{loser.mpi}'s own choice of {coll} algorithm (from MVAPICH2's tuning "
                f"tables; {MV2_ALGORITHMS[coll][0]} unset), a candidate" if coll in
                MV2_ALGORITHMS else f"{loser.mpi}'s shared-memory {coll} (MV2_USE_SHMEM_COLL "
                "on: on one node its table does not decide), a candidate")
        return Cause("algorithm", said, loser, None, (lo, hi), coll=coll)
    if len(benches) == 1 and benches[0] in CHOSEN and (var := variable(family, benches[0])):
        # no protocol limit sits there: one collective slower than another
        # library's is first the algorithm this library chose for it
        coll = benches[0]
        return Cause("algorithm", f"{loser.mpi}'s own choice of {coll} algorithm ({var} "
                     "unset), a candidate", loser, None, (lo, hi), coll=coll)
    return Cause("unexplained", "no recorded mechanism (eager limits read through MPI_T, "
                 "the probe's cache sizes) explains the difference")


def of_drop(cfg: Config, bench: str, a: int, b: int, bw_a_mbs: float, series: Series,
            facts: Mapping[Config, Facts], machine: Machine,
            breaks: Mapping[Config, tuple[int, int]] | None = None,
            streams: float = 1.0) -> Cause:
    """Why a bandwidth benchmark loses bandwidth from size a to size b."""
    sizes = sorted(series)
    if sizes and a == sizes[0]:
        return Cause("edge", f"{human_bytes(a)} is the first size swept: it also pays the "
                     "warm-up, and a drop from it alone is no claim", cfg, sizes=(a, b))
    for lim in limits(facts.get(cfg, Facts()), cfg.cluster):
        if lim.first_rendezvous(sizes) == b:
            # where bandwidth comes back to the size before the drop: the
            # sizes a larger eager limit would carry
            def rate(s: int) -> float:
                return s / series[s].median

            back = next((s for s in sizes if s > b and rate(s) >= rate(a)), None)
            top = max((s for s in sizes if b <= s < back), default=b) if back else b
            return Cause(
                "limit",
                f"from {human_bytes(b)} {cfg.mpi} sends {lim.after} ({lim.variable} = "
                f"{lim.bytes} B, {lim.what})", cfg, lim, (b, top), (_raise_to(lim, top),), b)
    if (breaks or {}).get(cfg) == (a, b):
        return _break(cfg, a, b)
    mem = machine.mem_copy_gbs
    # bibw moves both ways at once: two copies, each held to one core's rate
    if mem and bw_a_mbs / 1e3 > mem * streams:
        return Cause("cache", f"at {human_bytes(a)} {bench} reads {bw_a_mbs / 1e3:.1f} GB/s, "
                     f"above this machine's {mem:.1f} GB/s copy from memory (the probe): the "
                     "message lives in cache, and the drop marks where it leaves it, not a "
                     "protocol loss", cfg, sizes=(a, b))
    for name, c in machine.caches:
        if a <= c < b:
            return Cause("cache", f"the message outgrows this machine's {name} "
                         f"({human_bytes(c)}) between {human_bytes(a)} and {human_bytes(b)}: a "
                         "cache boundary, not a protocol loss", cfg, sizes=(a, b))
    return Cause("unexplained", "no recorded eager limit or cache boundary sits there", cfg,
                 sizes=(a, b))


# -- what the store holds about each configuration ---------------------------
def machine_of(probe: Mapping[str, object] | None) -> Machine:
    if not probe:
        return Machine()
    mem = next((c.get("gbs") for c in probe.get("copy", []) or []  # type: ignore[union-attr]
                if isinstance(c, dict) and c.get("where") == "memory"), None)
    caches = tuple((n, int(probe[k])) for n, k in (("L2", "l2_bytes"), ("L3", "l3_bytes"))
                   if isinstance(probe.get(k), int | float) and probe[k])  # type: ignore[arg-type]
    return Machine(float(mem) if isinstance(mem, int | float) else None, caches)


def facts_of(store: Store, series: Mapping[tuple[Config, str], Series]
             ) -> dict[Config, Facts]:
    """Each configuration's family and control variables, from the header of
    a run that measured it (every job reads the same variables)."""
    rid_of: dict[Config, int] = {}
    for (cfg, _), s in series.items():
        if cfg not in rid_of:
            rid = next((p.result_id for p in s.values() if p.result_id is not None), None)
            if rid is not None:
                rid_of[cfg] = rid
    out: dict[Config, Facts] = {}
    for cfg, rid in rid_of.items():
        row = store.library_of(rid)
        if row is None:
            continue
        try:
            cv = json.loads(row[1] or "{}").get("cvars") or {}
        except (ValueError, AttributeError):
            cv = {}
        variant = "mvapich2" if "MVAPICH2" in str(row[2] or "") else ""
        out[cfg] = Facts(str(row[0]), cv if isinstance(cv, dict) else {}, variant)
    return out


# -- a fix measured against the default ----------------------------------------
@dataclass(frozen=True)
class Fix:
    """A cause's setting measured against the default (advise.py), as
    stored: what was tried, over which benchmark and sizes, and the verdict.
    verdict: verified (faster where the cause is, slower nowhere) | mixed
    (faster there, slower elsewhere) | no-gain | broken | skipped."""

    cause_key: str
    settings: tuple[tuple[str, str], ...]
    verdict: str
    bench: str = ""
    sizes: tuple[int, int] | None = None  # where it was faster
    ratio: float = 1.0  # default time / fixed time, median over those sizes
    lo: float = 1.0
    hi: float = 1.0
    rounds: int = 0
    slower: str = ""  # where it was slower, in words
    reason: str = ""  # broken, skipped: why
    tried: int = 0  # how many candidates were measured
    mode_ns: float | None = None  # the machine mode (floor) its rounds were paired in
    # the sweep's range it was also checked across (every 8x), slower nowhere
    checked: tuple[int, int] | None = None
    file: str = ""  # the settings file written
    # per size measured: (size, ratio, lo, hi), default time / fixed time
    effects: tuple[tuple[int, float, float, float], ...] = ()

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.settings)

    def to_json(self) -> str:
        d = dict(self.__dict__)
        d["settings"] = [list(kv) for kv in self.settings]
        d["sizes"] = list(self.sizes) if self.sizes else None
        d["effects"] = [list(e) for e in self.effects]
        d["checked"] = list(self.checked) if self.checked else None
        return json.dumps(d)

    @staticmethod
    def from_json(text: str) -> Fix:
        d = json.loads(text)
        d["settings"] = tuple(tuple(kv) for kv in d["settings"])
        d["sizes"] = tuple(d["sizes"]) if d.get("sizes") else None
        d["effects"] = tuple(tuple(e) for e in d.get("effects") or ())
        d["checked"] = tuple(d["checked"]) if d.get("checked") else None
        return Fix(**d)


def cause_key(c: Cause) -> str:
    """The cause's identity as stored with its measured fix."""
    if c.config is None:
        return ""
    what = ((c.limit.variable, str(c.limit.bytes)) if c.limit is not None else
            (c.coll,) if c.kind == "algorithm" else ())
    if not what:
        return ""
    return "|".join((c.kind, c.config.key, str(c.config.np), c.config.cluster,
                     *what))
