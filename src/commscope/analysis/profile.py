"""Where a profiled program's MPI time goes: the ranks' files
(measure/profile.py) summed per call, communicator size and message-size
bucket, the hottest first, with each rank's share of its time in MPI."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..store.config import place
from ..store.sizes import human_bytes


def printable(text: str) -> str:
    """What a program or its user wrote, fit for a terminal, a page and a
    store: bytes that are no UTF-8 as \\xNN, control characters escaped."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def named(row: Mapping[str, object]) -> str:
    """A stored profile's program and its arguments, as a shell would take
    them, printable (the terminal, show --profile list, the report)."""
    argv = json.loads(str(row["argv"] or "[]"))
    return printable(shlex.join([Path(str(row["program"])).name, *argv]))


@dataclass(frozen=True)
class Hot:
    call: str
    comm_size: int  # 0: no communicator (MPI_Wait and its kind)
    bucket: int  # 0: no bytes; k: [2^(k-1), 2^k) bytes a call
    calls: int  # over every rank
    ranks: int  # ranks that made it
    total_s: float  # over every rank
    min_s: float
    max_s: float
    bytes: int
    per_rank: tuple[tuple[int, float], ...] = ()  # (rank, its total seconds in this call)

    @property
    def apart(self) -> float | None:
        """How many times one rank's time in this call is another's (the
        most over the least): ranks that arrive at a call apart spend
        their difference waiting in it."""
        ts = [t for _, t in self.per_rank]
        if len(ts) < 2 or min(ts) <= 0:
            return None
        return max(ts) / min(ts)

    @property
    def sizes(self) -> str:
        """The mean message a call (each power-of-two range its own row)."""
        if self.call in NO_BYTES:
            return "-"
        return human_bytes(round(self.bytes / self.calls)) if self.calls else "-"

    @property
    def mean_us(self) -> float:
        return 1e6 * self.total_s / self.calls if self.calls else 0.0


NO_BYTES = {"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test",
            "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Barrier", "MPI_Ibarrier",
            "MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe",
            # one-sided synchronisation: the epochs' fences, locks and flushes
            "MPI_Win_fence", "MPI_Win_lock", "MPI_Win_unlock", "MPI_Win_lock_all",
            "MPI_Win_unlock_all", "MPI_Win_flush", "MPI_Win_flush_all", "MPI_Win_post",
            "MPI_Win_start", "MPI_Win_complete", "MPI_Win_wait"}
# one-sided calls: a put's or get's transfer completes at its epoch's end
ONE_SIDED = {"MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op",
             "MPI_Compare_and_swap", "MPI_Rput", "MPI_Rget"}
SETUP = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"}


@dataclass(frozen=True)
class Summary:
    hot: tuple[Hot, ...]  # the hottest first (MPI_Init and Finalize apart: setup)
    setup: tuple[Hot, ...]
    ranks: int  # ranks that wrote a file
    unfinished: tuple[int, ...]  # ranks that ended without MPI_Finalize
    wall_s: tuple[float, ...]  # per rank, MPI_Init to MPI_Finalize
    mpi_s: tuple[float, ...]  # per rank, inside MPI in that span
    hosts: tuple[str, ...] = ()  # per rank, the node it ran on ("" where not recorded)

    @property
    def mpi_share(self) -> float | None:
        wall = sum(self.wall_s)
        return sum(self.mpi_s) / wall if wall > 0 else None

    @property
    def total_s(self) -> float:
        return sum(h.total_s for h in self.hot)


def summarize(ranks: Sequence[Mapping[str, object]]) -> Summary:
    cells: dict[tuple[str, int, int], list] = {}
    for r in ranks:
        for c in r.get("calls") or []:  # type: ignore[union-attr]
            key = (str(c["call"]), int(c["comm_size"]), int(c["bucket"]))
            got = cells.setdefault(key, [0, 0, 0.0, float("inf"), 0.0, 0, {}])
            got[0] += int(c["n"])
            got[1] += 1
            got[2] += float(c["total_s"])
            got[3] = min(got[3], float(c["min_s"]))
            got[4] = max(got[4], float(c["max_s"]))
            got[5] += int(c["bytes"])
            rk = int(r.get("rank", -1))  # type: ignore[call-overload]
            got[6][rk] = got[6].get(rk, 0.0) + float(c["total_s"])
    every = [Hot(k[0], k[1], k[2], v[0], v[1], v[2], v[3], v[4], v[5],
                 tuple(sorted(v[6].items()))) for k, v in cells.items()]
    every.sort(key=lambda h: (-h.total_s, h.call, h.comm_size, h.bucket))
    good = [r for r in ranks if "rank" in r]
    return Summary(tuple(h for h in every if h.call not in SETUP),
                   tuple(h for h in every if h.call in SETUP), len(good),
                   tuple(sorted(int(r["rank"]) for r in good  # type: ignore[call-overload]
                                if not r.get("finalized"))),
                   tuple(float(r.get("wall_s") or 0.0) for r in good),  # type: ignore[arg-type]
                   tuple(float(r.get("mpi_s") or 0.0) for r in good),  # type: ignore[arg-type]
                   tuple(str(r.get("host") or "") for r in good))


def nodes_text(s: Summary) -> str:
    """Each node's share of its ranks' time spent inside MPI: a node whose
    ranks wait longer than the others' is where to look (its link, or the
    others' work arriving late: the profile does not tell which)."""
    by: dict[str, list[float]] = {}
    for host, w, m in zip(s.hosts, s.wall_s, s.mpi_s, strict=True):
        got = by.setdefault(host or "?", [0.0, 0.0, 0.0])
        got[0], got[1], got[2] = got[0] + w, got[1] + m, got[2] + 1
    return ", ".join(f"{h} {100 * m / w:.0f}% ({int(n)} rank{'s' if n > 1 else ''})"
                     for h, (w, m, n) in sorted(by.items()) if w > 0)


def text(s: Summary, top: int = 10) -> str:
    """The hottest calls as a table, and the share of time in MPI."""
    lines = []
    share = s.mpi_share
    if share is not None:
        per = ", ".join(f"{100 * m / w:.0f}%" for w, m in zip(s.wall_s, s.mpi_s, strict=True)
                        if w > 0)
        lines.append(f"{s.ranks} rank(s); time inside MPI between MPI_Init and MPI_Finalize: "
                     f"{100 * share:.1f}% (per rank {per})")
    if len(set(s.hosts) - {""}) > 1:
        lines.append("per node, time inside MPI: " + nodes_text(s))
    if s.unfinished:
        lines.append(f"ended without MPI_Finalize: rank(s) {', '.join(map(str, s.unfinished))} "
                     "(what they recorded until then is kept)")
    if not s.hot:
        lines.append("no MPI call besides MPI_Init and MPI_Finalize was seen")
        return "\n".join(lines) + "\n"
    total = s.total_s
    lines.append(f"{'call':<22} {'ranks':>5} {'comm':>4} {'message':>10} {'calls':>9} "
                 f"{'total ms':>10} {'mean us':>10} {'max us':>10} {'of MPI':>7}")
    for h in s.hot[:top]:
        lines.append(f"{h.call:<22} {h.ranks:>5} {h.comm_size or '-':>4} {h.sizes:>10} "
                     f"{h.calls:>9} {1e3 * h.total_s:>10.3f} {h.mean_us:>10.2f} "
                     f"{1e6 * h.max_s:>10.1f} {100 * h.total_s / total if total else 0:>6.1f}%")
    if len(s.hot) > top:
        lines.append(f"... and {len(s.hot) - top} more (--top 0 lists them all)")
    lines.append("(times summed over every rank; message: the mean bytes a call of this rank's "
                 "own message, each power of two a row of its own; comm: the communicator's "
                 "size)")
    return "\n".join(lines) + "\n"


# The benchmark that times what one call of the program does, at the same
# message and communicator size: a collective by its own benchmark, a
# blocking send or receive by the one-way latency (half a ping-pong).
BENCH_OF = {"MPI_Send": "latency", "MPI_Recv": "latency",
            "MPI_Barrier": "barrier", "MPI_Bcast": "bcast",
            "MPI_Reduce": "reduce", "MPI_Allreduce": "allreduce", "MPI_Gather": "gather",
            "MPI_Scatter": "scatter", "MPI_Allgather": "allgather", "MPI_Alltoall": "alltoall",
            "MPI_Reduce_scatter_block": "reduce_scatter"}
# Why a call is set against no benchmark
NO_BENCH = {"MPI_Sendrecv": "an exchange both ways at once: no benchmark here times it (IMB's "
                            "Sendrecv does; the one-way latency is not it)",
            "MPI_Sendrecv_replace": "an exchange both ways at once: no benchmark here times it",
            "MPI_Ssend": "a synchronous send (it waits for the receive to start): the latency "
                         "benchmark's sends are standard ones",
            "": "no benchmark times it alone (a wait, or a call whose transfer is another "
                "call's)"}


def no_bench(call: str) -> str:
    """Why a call is set against no benchmark, in words."""
    if call in NO_BENCH:
        return NO_BENCH[call]
    if call in ONE_SIDED or call.startswith("MPI_Win_"):
        return ("one-sided: no benchmark here times it (OSU's osu_put_latency and "
                "osu_get_latency do); a transfer completes at its epoch's fence, unlock or flush")
    if (call.startswith("MPI_I") and call not in ("MPI_Iprobe", "MPI_Improbe")
            or call in ("MPI_Start", "MPI_Startall")):
        return ("a non-blocking start: its time here is the call's own, the transfer is the "
                "wait's or test's that completes it")
    if call.endswith("_init"):
        return "a persistent request set up: its transfers are its starts' and waits'"
    if call in COLL_CALLS:
        return "no benchmark here times this collective (a v, w or scan variant)"
    return NO_BENCH[""]


SLOWER = 1.5  # beyond this times the benchmark's interval's upper end: slower than benchmarked
APART = 3.0  # one rank's time in a call this many times another's: they arrive apart


@dataclass(frozen=True)
class Against:
    hot: Hot
    bench: str  # '' where no benchmark times the call alone
    message: int  # the mean bytes a call
    per_rank: float  # calls a rank (of the ranks that made it)
    measured_us: float  # the program's mean a call
    bench_us: float | None  # the benchmark's at that message, same implementation and np
    config: str = ""  # the benchmark's configuration, as show names it
    missing: str = ""  # why there is no benchmark figure
    bench_lo: float | None = None  # the benchmark's interval between runs there
    bench_hi: float | None = None
    busy: bool = False  # the benchmark's figure only from records taken beside other work

    @property
    def ratio(self) -> float | None:
        return self.measured_us / self.bench_us if self.bench_us else None

    @property
    def verdict(self) -> str:
        """slower than benchmarked: beyond SLOWER times the benchmark's
        interval's upper end; faster: below its lower end over SLOWER; else
        as benchmarked.  Slower is a figure, not a cause: where the ranks'
        times in the call differ APART-fold or more, that is said beside it
        (ranks arriving apart wait there), and the call's fastest time
        against the benchmark's."""
        if not self.bench_us:
            return ""
        if self.measured_us > SLOWER * (self.bench_hi or self.bench_us):
            return "slower than benchmarked"
        if self.measured_us * SLOWER < (self.bench_lo or self.bench_us):
            return "faster than benchmarked"
        return "as benchmarked"

    @property
    def evidence(self) -> str:
        """What the profile itself says of a slower call: the ranks' split,
        and its fastest call against the benchmark."""
        if self.verdict != "slower than benchmarked":
            return ""
        said = []
        a = self.hot.apart
        if a is not None and a >= APART:
            (r0, t0), (r1, t1) = (max(self.hot.per_rank, key=lambda x: x[1]),
                                  min(self.hot.per_rank, key=lambda x: x[1]))
            said.append(f"rank {r0} spent {1e3 * t0:.2f} ms in it, rank {r1} "
                        f"{1e3 * t1:.2f} ms: the ranks arrive at it apart")
        if self.bench_us and 1e6 * self.hot.min_s <= SLOWER * (self.bench_hi or self.bench_us):
            said.append(f"its fastest call took {1e6 * self.hot.min_s:.2f} us (the benchmark's "
                        f"median {self.bench_us:.2f})")
        return "; ".join(said)


def ratio_text(r: float) -> str:
    """A ratio from one profiled run: two significant figures beyond 10
    (hpcc's 4 B broadcast read 495 on one run and 1065 on the next, busy)."""
    return f"{r:.2f}" if r < 10 else f"{r:.3g}" if r < 100 else f"{r:.0f}"


def _at(series, size: int) -> tuple[float, float, float, bool] | None:
    """The series' median time at `size`, its interval, and whether only
    records taken beside other work stand behind it: measured there, or
    interpolated linearly between the two measured sizes around it; None
    outside."""
    if size in series:
        p = series[size]
        return float(p.median), float(p.lo), float(p.hi), bool(p.flagged)
    below = [s for s in series if s < size]
    above = [s for s in series if s > size]
    if not below or not above:
        return None
    a, b = series[max(below)], series[min(above)]
    w = (size - max(below)) / (min(above) - max(below))
    m, lo, hi = (float(x) + (float(y) - float(x)) * w
                 for x, y in ((a.median, b.median), (a.lo, b.lo), (a.hi, b.hi)))
    return m, lo, hi, bool(a.flagged or b.flagged)


@dataclass(frozen=True)
class Where:
    """Where a program ran: this machine, or a cluster (its label, as
    --cluster takes it) with its nodes and processes a node."""

    cluster: str = "local"
    nodes: int = 1
    ppn: int = 0  # 0: on this machine, every rank

    @staticmethod
    def of(data: Mapping[str, object]) -> Where:
        """From a stored profile's data (commscope profile --cluster)."""
        if not data.get("cluster"):
            return Where()
        return Where(str(data["cluster"]), int(data.get("nodes") or 1),  # type: ignore[call-overload]
                     int(data.get("ppn") or 0))  # type: ignore[call-overload]

    @property
    def place(self) -> str:
        """As a record's place reads (store.config.place)."""
        return place({"cluster": self.cluster, "nodes": self.nodes})

    def np(self) -> int:
        return self.nodes * self.ppn


def against(s: Summary, mpi: str, series: Mapping, where: Where = Where()) -> list[Against]:
    """Each hot call set against the benchmark of the same implementation
    (its defaults), communicator size and message, where one was stored, on
    the nodes the program ran on.  On a cluster, a call on a communicator
    smaller than the program's is set against nothing: how its ranks were
    spread over the nodes is the program's, not known here."""
    out = []
    for h in s.hot:
        bench = BENCH_OF.get(h.call, "")
        msg = round(h.bytes / h.calls) if h.calls else 0
        per_rank = h.calls / h.ranks if h.ranks else 0.0
        if not bench:
            out.append(Against(h, "", msg, per_rank, h.mean_us, None, missing=no_bench(h.call)))
            continue
        if where.cluster != "local" and h.comm_size != where.np():
            out.append(Against(h, bench, msg, per_rank, h.mean_us, None,
                               missing=f"a communicator of {h.comm_size} of the program's "
                                       f"{where.np()} ranks on {where.place}: how its ranks "
                                       "lie on the nodes is not known here"))
            continue
        found = [(cfg, ser) for (cfg, b), ser in series.items()
                 if b == bench and cfg.np == h.comm_size and cfg.cluster == where.place
                 and (cfg.impl or cfg.mpi) == mpi and not cfg.settings
                 and cfg.buffer == "host"]
        found.sort(key=lambda cs: (cs[0].mpi != mpi, cs[0].mpi))
        if not found:
            on = "" if where.cluster == "local" else f" on {where.place}"
            out.append(Against(h, bench, msg, per_rank, h.mean_us, None,
                               missing=f"no {bench} stored for {mpi} at {h.comm_size} "
                                       f"processes{on}"))
            continue
        cfg, ser = found[0]
        t = _at(ser, 0 if bench == "barrier" else msg)
        out.append(Against(h, bench, msg, per_rank, h.mean_us, t[0] if t else None, cfg.mpi,
                           missing="" if t is not None else
                           f"{bench} not measured around {human_bytes(msg)}",
                           bench_lo=t[1] if t else None, bench_hi=t[2] if t else None,
                           busy=bool(t and t[3])))
    return out


def measure_command(rows: Sequence[Against], mpi: str, db: str,
                    where: Where = Where()) -> str | None:
    """The one `commscope run` that measures every benchmark the rows miss."""
    import shlex

    argv = measure_argv(rows, mpi, db, where)
    return shlex.join(argv) if argv else None


def measure_argv(rows: Sequence[Against], mpi: str, db: str,
                 where: Where = Where()) -> list[str] | None:
    """That command as a list (commscope, run, its options), or None; on a
    cluster, on the program's nodes with its processes a node."""
    need = [a for a in rows if a.bench and a.bench_us is None
            and (where.cluster == "local" or a.hot.comm_size == where.np())]
    if not need:
        return None
    nps = sorted({a.hot.comm_size for a in need})
    placed = (["--np", ",".join(map(str, nps))] if where.cluster == "local" else
              ["--cluster", where.cluster, "--nodes", str(where.nodes), "--ppn",
               str(where.ppn)])
    sized = [a.message for a in need if a.bench != "barrier"]
    sizes = []
    if sized:  # the powers of two around every message (a barrier has none)
        lo = 0 if min(sized) == 0 else 1 << max(0, min(sized).bit_length() - 1)
        hi = 1 << max(1, (max(sized) - 1).bit_length())
        sizes = ["--sizes", f"{lo}:{hi}"]
    return ["commscope", "run", "--db", db, "--mpi", mpi, *placed,
            "--bench", ",".join(sorted({a.bench for a in need})), *sizes, "--repeat", "3",
            "--no-advise"]


def against_text(rows: Sequence[Against], top: int = 10) -> str:
    lines = [f"{'call':<16} {'comm':>4} {'message':>10} {'calls/rank':>10} {'program us':>11} "
             f"{'bench us':>9} {'ratio':>6}  verdict (benchmark)"]
    for a in rows[:top]:
        h = a.hot
        bench = (f"{a.bench_us:>9.2f} {ratio_text(a.ratio):>6}  {a.verdict} ({a.bench}, "
                 f"{a.config}"
                 + (", measured beside other work" if a.busy else "") + ")"
                 + (f": {a.evidence}" if a.evidence else "")
                 if a.bench_us else f"{'-':>9} {'-':>6}  {a.missing}")
        lines.append(f"{h.call:<16} {h.comm_size or '-':>4} {h.sizes:>10} {a.per_rank:>10.0f} "
                     f"{a.measured_us:>11.2f} {bench}")
    lines.append(f"(ratio: the program's mean time a call over the benchmark's median at the "
                 f"same message; slower: above {SLOWER:g} times the upper end of the "
                 "benchmark's interval between runs, a figure, not a cause; the ranks' split "
                 "and the fastest call are what the profile itself says of it)")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Verified:
    """A settings file run on the program against its defaults, in rounds:
    each round's ratio (with the setting / without), the program's wall time
    and its time inside MPI."""

    settings: str  # the file, as given
    wall: tuple[float, ...]
    mpi: tuple[float, ...]
    failed: int = 0  # runs with the setting that did not end well
    broke_check: int = 0  # runs with the setting the user's --check refused
    launch: tuple[float, ...] = ()  # the launch's wall time, start to end, for reference

    def interval(self, which: str) -> tuple[float, float, float] | None:
        from .repeats import between

        xs = {"wall": self.wall, "mpi": self.mpi, "launch": self.launch}[which]
        if len(xs) < 2:
            return None
        b = between(list(xs))
        return b.median, b.lo, b.hi

    @property
    def verdict(self) -> str:
        if self.failed or self.broke_check:
            return ("breaks the program: " + (f"{self.failed} run(s) failed" if self.failed else
                                              f"its check failed on {self.broke_check} run(s)")
                    + "; not advice")
        w = self.interval("wall")
        if w is None:
            return "too few rounds to tell"
        if w[2] < 1:
            return "faster for this program"
        if w[1] > 1:
            return "slower for this program"
        return "not told apart from the defaults"


def span_s(ranks: Sequence[Mapping[str, object]]) -> float:
    """The program's own time: its slowest rank's, MPI_Init to MPI_Finalize."""
    return max((float(r.get("wall_s") or 0.0) for r in ranks), default=0.0)  # type: ignore[arg-type]


def mpi_total_s(ranks: Sequence[Mapping[str, object]]) -> float:
    return sum(float(r.get("mpi_s") or 0.0) for r in ranks)  # type: ignore[arg-type]


# One run of a --verify batch: its status, whether the user's check passed
# (None: none given), its ranks' files, the launch's wall time
Run = tuple[str, "bool | None", Sequence[Mapping[str, object]], float]


def verified(settings: str, pairs: Sequence[tuple[Run, Run]]) -> Verified:
    """A settings file's rounds, each (the run with it, the defaults' of the
    same round), paired: rounds whose defaults did not run cleanly are left
    out; a run with the setting that failed, or whose check failed, counts
    against it."""
    wall, mpi, launch, failed, broke = [], [], [], 0, 0
    for (st, checked, ranks, w), (dst, dchecked, dranks, dw) in pairs:
        if dst != "ok" or dchecked is False:
            continue
        if st != "ok":
            failed += 1
            continue
        broke += checked is False
        if span_s(ranks) > 0 and span_s(dranks) > 0:
            wall.append(span_s(ranks) / span_s(dranks))
        if mpi_total_s(ranks) > 0 and mpi_total_s(dranks) > 0:
            mpi.append(mpi_total_s(ranks) / mpi_total_s(dranks))
        if w > 0 and dw > 0:
            launch.append(w / dw)
    return Verified(settings, tuple(wall), tuple(mpi), failed, broke, tuple(launch))


def verify_text(vs: Sequence[Verified], rounds: int) -> str:
    lines = [f"each settings file against the defaults, {rounds} interleaved round(s) "
             "(with / without: the median ratio and its 95% interval between rounds; the "
             "program's time is its slowest rank's from MPI_Init to MPI_Finalize):"]
    for v in vs:
        w, m, la = v.interval("wall"), v.interval("mpi"), v.interval("launch")

        def fig(x):
            return f"{x[0]:.3f} ({x[1]:.3f}-{x[2]:.3f})" if x else "-"

        lines.append(f"  {v.settings}: the program's time {fig(w)}, time in MPI {fig(m)}: "
                     f"{v.verdict}" + (f" (the launch, start to end: {fig(la)})" if la else ""))
    return "\n".join(lines) + "\n"


P2P_BENCHES = ("latency", "bw", "bibw", "sendloop", "roundtrip")
# every send and receive the profiler counts (core/profile/cs_profile.c): what a
# point-to-point setting acts on
P2P_CALLS = ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Sendrecv",
             "MPI_Sendrecv_replace", "MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend",
             "MPI_Irecv", "MPI_Mrecv", "MPI_Imrecv", "MPI_Send_init", "MPI_Ssend_init",
             "MPI_Bsend_init", "MPI_Rsend_init", "MPI_Recv_init", "MPI_Start",
             "MPI_Startall")


@dataclass(frozen=True)
class Established:
    """A setting the diagnosis established (it closed or narrowed a gap,
    verified in its rounds) for an implementation, on a benchmark, at sizes."""

    mpi: str
    bench: str
    sizes: tuple[int, ...]
    settings: tuple[tuple[str, str], ...]
    said: str  # what it did, in the diagnosis's words ("bw 1.9x faster from 4 to 8 KiB")


COLL_CALLS = ("MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Scatter",
              "MPI_Allgather", "MPI_Alltoall", "MPI_Reduce_scatter_block", "MPI_Ibcast",
              "MPI_Ireduce", "MPI_Iallreduce", "MPI_Iallgather", "MPI_Ialltoall",
              "MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv", "MPI_Alltoallv",
              "MPI_Alltoallw", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan", "MPI_Igather",
              "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv", "MPI_Iallgatherv",
              "MPI_Ialltoallv", "MPI_Ialltoallw", "MPI_Ireduce_scatter",
              "MPI_Ireduce_scatter_block", "MPI_Iscan", "MPI_Iexscan")


def _calls_of(bench: str) -> tuple[str, ...]:
    """The calls a setting established on `bench` acts on: a point-to-point
    one on every send and receive, and on the collectives (built on the same
    point-to-point messages in Open MPI and MPICH alike: 'may act', its
    sizes there being the collective's own messages only roughly)."""
    if bench in P2P_BENCHES:
        return P2P_CALLS + COLL_CALLS
    return tuple(c for c, b in BENCH_OF.items() if b == bench and c.startswith("MPI_")
                 and c not in P2P_CALLS)


def share(hits: Sequence[Hot], s: Summary) -> tuple[float, float] | None:
    """The calls' share of the program's time inside MPI and of its time
    between MPI_Init and MPI_Finalize (over every rank): the most a setting
    that acts on them alone could save."""
    t = sum(h.total_s for h in {(h.call, h.comm_size, h.bucket): h for h in hits}.values())
    mpi, wall = sum(s.mpi_s), sum(s.wall_s)
    return (t / mpi, t / wall) if mpi > 0 and wall > 0 else None


def touching(hot: Sequence[Hot], mpi: str, found: Sequence[Established]
             ) -> list[tuple[Hot, Established]]:
    """The program's hot calls a setting established for its implementation
    acts on: the same call, a message within the sizes it was established
    at (the powers of two around the message)."""
    out = []
    for e in found:
        if e.mpi != mpi or not e.sizes:
            continue
        lo, hi = min(e.sizes), max(e.sizes)
        for h in hot:
            if h.call not in _calls_of(e.bench):
                continue
            m = round(h.bytes / h.calls) if h.calls else 0
            below = 1 << max(0, m.bit_length() - 1) if m else 0
            above = 1 << max(0, (m - 1).bit_length()) if m else 0
            if lo <= below <= hi or lo <= above <= hi or (e.bench == "barrier" and not m):
                out.append((h, e))
    return out


# -- call sites: where in the program the time was spent (mpiP's call sites) -----------
@dataclass(frozen=True)
class Site:
    call: str
    object: str  # the file the call was made from (the program, or a library of it)
    offset: int  # the return address's offset in that file
    calls: int
    ranks: int
    total_s: float
    bytes: int
    # the callers above it, innermost first (profile --stack N: N-1 of them; an
    # object of "" where the caller's code was in no file mapped at the end)
    callers: tuple[tuple[str, int], ...] = ()

    def frames(self) -> list[tuple[str, int]]:
        return [(self.object, self.offset), *self.callers]


def sites(ranks: Sequence[Mapping[str, object]],
          places: Mapping[tuple[str, int], str] | None = None) -> list[Site]:
    """Every call site the ranks recorded, summed over ranks, the most time
    first (a rank's file holds them from the profiler of 2026-11-27 on; an
    older one has none).  With callers (--stack), a site is its line and
    its callers: one line reached from two places is two sites.  Given
    `places` (resolve_sites of every frame), sites whose frames read alike
    are one (a loop the compiler unrolled calls from several addresses of
    one line)."""
    got: dict[tuple[object, ...], list] = {}
    for r in ranks:
        for x in r.get("sites") or []:  # type: ignore[union-attr]
            up = tuple((str(c["object"]), int(c["offset"])) for c in x.get("callers") or ())
            one = Site(str(x["call"]), str(x["object"]), int(x["offset"]), 0, 0, 0.0, 0, up)
            key = ((one.call, site_where(one, places)) if places is not None else
                   (one.call, one.object, one.offset, up))
            v = got.setdefault(key, [one, 0, set(), 0.0, 0])
            v[1] += int(x["n"])
            v[2].add(int(r.get("rank", -1)))  # type: ignore[call-overload]
            v[3] += float(x["total_s"])
            v[4] += int(x["bytes"])
    out = [Site(o.call, o.object, o.offset, n, len(rs), t, b, o.callers)
           for o, n, rs, t, b in got.values()]
    out.sort(key=lambda s: (-s.total_s, s.call, s.object, s.offset, s.callers))
    return out


def all_frames(ranks: Sequence[Mapping[str, object]]) -> list[tuple[str, int]]:
    """Every frame of every site the ranks recorded (what to resolve)."""
    return sorted({f for s in sites(ranks) for f in s.frames() if f[0]})


def frame_text(frame: tuple[str, int], places: Mapping[tuple[str, int], str]) -> str:
    """One frame of a call site: its function and file:line where `places`
    has it, else its object's name and the return address's offset."""
    obj, off = frame
    if not obj:
        return "?"  # code in no file mapped when the profile was written
    name = Path(obj.removesuffix(" (deleted)")).name + (
        " (replaced since)" if obj.endswith(" (deleted)") else "")
    return places.get(frame) or f"{name}+{off:#x}"


def site_where(s: Site, places: Mapping[tuple[str, int], str]) -> str:
    """A call site in one line: its frame, then each caller (" < ")."""
    return " < ".join(frame_text(f, places) for f in s.frames())


def sites_text(found: Sequence[Site], places: Mapping[tuple[str, int], str],
               mpi_total_s: float, top: int = 10, lost: int = 0, unmapped: int = 0) -> str:
    """The hottest call sites as a table: the call, where it was made (the
    function and file:line `places` gives, else the object and the return
    address's offset in it: addr2line wants one less)."""
    if not found:
        return ""
    lines = [f"{'call site':<44} {'call':<16} {'ranks':>5} {'calls':>9} {'total ms':>10} "
             f"{'of MPI':>7}"]
    for s in found[:top]:
        where = frame_text((s.object, s.offset), places)
        lines.append(f"{printable(where)[:44]:<44} {s.call:<16} {s.ranks:>5} {s.calls:>9} "
                     f"{1e3 * s.total_s:>10.3f} "
                     f"{100 * s.total_s / mpi_total_s if mpi_total_s else 0:>6.1f}%")
        lines += [f"  < {printable(frame_text(f, places))}" for f in s.callers]
    if len(found) > top:
        lines.append(f"... and {len(found) - top} more site(s)")
    if lost:
        lines.append(f"({lost} call(s) found no room in the profiler's table of sites: "
                     "counted above, not here)")
    if unmapped:
        lines.append(f"({unmapped} call(s) made from code in no file the process had mapped "
                     "when the profile was written: counted above, not here)")
    return "\n".join(lines) + "\n"
