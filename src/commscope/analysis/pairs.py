"""Every pair of nodes: the schedule that measures them, and which node or
link is slow (issue 40; mpiGraph's matrix, with a verdict and statistics).

The schedule is a 1-factorisation of the complete graph on the nodes (the
circle method): n - 1 rounds for n nodes (n rounds for odd n, one node idle
in each), every round a set of disjoint pairs that can be measured at once,
every pair in exactly one round.

The verdict sets each pair's time against the cluster's typical pair: the
median over nodes of each node's median pair, so that one bad node (every
pair with it slow: half the pairs of a 4-node cluster) does not move the
centre, as a median over pairs would.  A pair is slow where its between-run
interval's lower end is SLOW times the typical time or more.  A node is
named where every one of its pairs is slow and the pairs without it are
not; a link where its pair is slow while both its nodes have a pair that
is not."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

SLOW = 1.2  # a pair surely this many times the typical time (its interval's lower end)
# A stall (a pair's longest sample) counts where it is surely this many times
# the typical pair's and at least STALL_US long: a healthy pair's longest
# sample over 0.3 s read 230-1,360 us (6x apart) on emulated nodes of this VM, a node held
# to a quarter of one CPU 37,700 us (its scheduler's period is 100 ms).
STALL = 10.0
STALL_US = 10_000.0
# a latency record sampled this long at least (matrix --stall-time) has a longest
# sample worth judging; a default one samples a few milliseconds (2.0-2.4 ms seen)
STALL_WALL_S = 0.1


def schedule(n: int) -> list[list[tuple[int, int]]]:
    """Rounds of disjoint pairs (i < j) of nodes 0..n-1 covering every pair
    once: the circle method, node 0 fixed and the others turning."""
    if n < 2:
        raise ValueError(f"{n} node(s): a pair needs 2")
    m = n + n % 2  # odd: a dummy node, whose partner sits the round out
    ring = list(range(m))
    out = []
    for _ in range(m - 1):
        pairs = [(min(a, b), max(a, b)) for i in range(m // 2)
                 if (a := ring[i]) < n and (b := ring[m - 1 - i]) < n]
        out.append(sorted(pairs))
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


@dataclass(frozen=True)
class Pair:
    """One pair's time (lower is better) over repeated runs: the median and
    its between-run interval."""

    a: str
    b: str
    median: float
    lo: float
    hi: float

    def has(self, node: str) -> bool:
        return node in (self.a, self.b)


@dataclass(frozen=True)
class Verdict:
    typical: float
    ratios: dict[tuple[str, str], tuple[float, float, float]]  # median, lo, hi over typical
    nodes: tuple[str, ...]  # every pair with it slow, the others not
    links: tuple[str, ...]  # "a/b": slow, both nodes fine with another
    lines: tuple[str, ...]  # what is said, one line each
    silent: tuple[str, ...] = ()  # nodes of the cluster in no pair that was measured


def _x(r: float) -> str:
    if r < 0.095:  # two figures: a pair alone at 0.003x its typical read "0.00x"
        return f"{r:.2g}x"
    r = round(r, 2)  # 9.996 reads 10.0x, never 10.00x
    return f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


def verdict(pairs: Sequence[Pair], what: str = "time",
            nodes: Sequence[str] = (), word: str = "node", slow_at: float = SLOW,
            least_us: float = 0.0) -> Verdict:
    """Which node or link is slow, with the evidence, or that none stands
    out; `what` names the figure ("time at 4 MiB"); `nodes`: the cluster's
    nodes, so that one in no measured pair (every pair with it failed) is
    named as such rather than left out of the verdict.  A pair is slow where
    its interval's lower end is `slow_at` times the typical pair's and
    `least_us` or more (stalls: STALL, STALL_US)."""
    names = sorted({p.a for p in pairs} | {p.b for p in pairs})
    silent = tuple(n for n in nodes if n not in names)
    if silent:
        v = verdict(pairs, what, word=word, slow_at=slow_at, least_us=least_us)
        gone = [f"{n}: no pair with {n} was measured (each failed or timed out)"
                for n in silent]
        keep = [x for x in v.lines if not x.startswith(f"no {word} stands out")]
        return replace(v, lines=(*gone, *keep), silent=silent)
    if len(names) < 3:
        only = "; ".join(f"{p.a}-{p.b} {p.median:.3g} us" for p in pairs)
        return Verdict(0.0, {}, (), (), (f"{len(names)} {word}s, one pair ({only}): nothing to "
                                        f"set it against; a slow {word} needs 3 {word}s to be "
                                        "named",))
    whose = "the cluster's" if word == "node" else "this machine's"
    mine = {n: statistics.median(p.median for p in pairs if p.has(n)) for n in names}
    typical = statistics.median(mine.values())
    ratios = {(p.a, p.b): (p.median / typical, p.lo / typical, p.hi / typical) for p in pairs}
    slow = {(p.a, p.b) for p in pairs if p.lo / typical >= slow_at and p.lo >= least_us}
    # slow by its median: a node whose every pair is so, one of them surely, is named
    # (every one of its pairs on one side of the cut: beside other work two rounds left
    # some of a degraded node's pairs at 3.7x with intervals reaching under 1.2x)
    over = {(p.a, p.b) for p in pairs if p.median / typical >= slow_at and p.median >= least_us}
    fine = {(p.a, p.b) for p in pairs if p.hi / typical < slow_at}  # surely not slow
    bad = [n for n in names
           if all((p.a, p.b) in over for p in pairs if p.has(n))
           and any((p.a, p.b) in slow for p in pairs if p.has(n))
           and not all((p.a, p.b) in over for p in pairs if not p.has(n))]
    # a link is slow alone where both its nodes are surely not slow with another
    odd = [(a, b) for a, b in sorted(slow) if a not in bad and b not in bad
           and any((p.a, p.b) in fine for p in pairs if p.has(a))
           and any((p.a, p.b) in fine for p in pairs if p.has(b))]
    links = [f"{a}/{b}" for a, b in odd]
    lines = []
    for n in bad:
        rs = [ratios[(p.a, p.b)] for p in pairs if p.has(n)]
        others = [ratios[(p.a, p.b)][0] for p in pairs if not p.has(n)]
        lines.append(f"{n}: every pair with {n} takes {_x(statistics.median(r[0] for r in rs))} "
                     f"[{_x(min(r[1] for r in rs))}, {_x(max(r[2] for r in rs))}] {whose} "
                     f"typical {what}; the other pairs {_x(min(others))}-{_x(max(others))}")
    for (a, b), link in zip(odd, links, strict=True):
        m, lo, hi = ratios[(a, b)]
        lines.append(f"{link}: this pair takes {_x(m)} [{_x(lo)}, {_x(hi)}] the typical {what}, "
                     f"while {a} and {b} are not slow with the others")
    # slow pairs that are neither: more than one node's worth, said as such
    rest = sorted(slow - {(p.a, p.b) for p in pairs if any(p.has(n) for n in bad)}
                  - set(odd))
    if rest:
        lines.append(f"{len(rest)} more slow pair(s) ({', '.join('/'.join(r) for r in rest)}) "
                     f"that no single {word} or link explains")
    if not lines:
        spread = [r[0] for r in ratios.values()]
        lines.append(f"no {word} stands out: every pair within {_x(min(spread))}-{_x(max(spread))}"
                     f" of the typical {what} (a pair is slow at {slow_at:g}x, surely"
                     + (f", and {least_us / 1000:g} ms or more)" if least_us else ")"))
    return Verdict(typical, ratios, tuple(bad), tuple(links), tuple(lines))


def pair_of(row: Mapping[str, object]) -> tuple[str, str] | None:
    """The two nodes a record's configuration names (commscope matrix's
    jobs: extra pair=a/b), or None."""
    try:
        extra = dict(json.loads(str(row["config"])).get("extra") or {})
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    got = extra.get("pair")
    if not isinstance(got, str) or "/" not in got:
        return None
    a, _, b = got.partition("/")  # host names hold '-', never '/'
    return (a, b) if a and b else None


AT_ONCE, ALONE = "at once", "alone after at once"  # how a pair was measured (Cluster.pair)


def _carried(row: Mapping[str, object]) -> str | None:
    """What the run's transport check read of the node links (the network
    between nodes, too little on them for the payload, shared memory...)."""
    try:
        got = json.loads(str(row["transport_check"] or "null"))
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return str(got["verdict"]) if isinstance(got, dict) and got.get("verdict") else None


def transports(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """A pair whose bytes went another way than the other pairs' (each
    run's transport check: what the node links carried against the
    payload), named with what its check read: a transport of its own (TCP
    where the others used shared memory or the fabric), which its figures
    then measure.  Nothing where every pair read alike or none was checked."""
    by: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        p, said = pair_of(r), _carried(r)
        if p is not None and said is not None:
            by.setdefault((min(p), max(p)), set()).add(said)
    counts = Counter(v for vs in by.values() for v in vs)
    if len(counts) < 2:
        return []
    typical = max(sorted(counts), key=lambda v: counts[v])
    return [f"{a}/{b}: its links read '{', '.join(sorted(vs - {typical}))}' where the other "
            f"pairs' read '{typical}': a transport of its own"
            for (a, b), vs in sorted(by.items()) if vs - {typical}]


def mode(row: Mapping[str, object]) -> str:
    """How a pair's record was taken: "" one pair at a time, AT_ONCE beside
    the other pairs of its round (commscope matrix --at-once), ALONE again
    after a matrix at once (its slow pairs and a few reference pairs)."""
    try:
        return str(dict(json.loads(str(row["config"])).get("extra") or {}).get("pairs") or "")
    except (KeyError, IndexError, TypeError, ValueError):
        return ""


def per_pair(rows: Sequence[Mapping[str, object]], bench: str, size: int,
             figure: str = "median") -> dict[tuple[str, str], list[float]]:
    """Each pair's time at `size` in `bench`, one value a repetition: the
    record's median_us (latency: half a round trip; bw: one message; bibw:
    one message each way at once), at the narrowest window the pair was
    measured at (where the sweep measured every pair again at a common
    window, that one).  figure "stall": its longest sample instead (the
    slowest time an operation took, times the operations a sample)."""
    best: dict[tuple[tuple[str, str], int, int], Mapping[str, object]] = {}
    for r in rows:
        pair = pair_of(r)
        if pair is None or r["bench"] != bench or int(r["size_bytes"]) != size:  # type: ignore[call-overload]
            continue
        if not r["valid"]:
            continue
        # a repetition of its sweep: two sweeps' first repetitions are two values
        sweep = int(r["sweep_id"] or 0)  # type: ignore[call-overload]
        k = (pair, sweep, int(r["repetition"] or 1))  # type: ignore[call-overload]
        if k not in best or int(r["window"] or 0) < int(best[k]["window"] or 0):  # type: ignore[call-overload]
            best[k] = r
    out: dict[tuple[str, str], list[float]] = {}
    for (pair, _, _), r in sorted(best.items()):
        if figure == "stall" and r["max_us"]:
            out.setdefault(pair, []).append(float(r["max_us"]) * int(r["batch"] or 1))  # type: ignore[arg-type, call-overload]
        elif figure != "stall" and r["median_us"]:
            out.setdefault(pair, []).append(float(r["median_us"]))  # type: ignore[arg-type]
    return out


def pairs_from(times: Mapping[tuple[str, str], Sequence[float]]) -> list[Pair]:
    """Each pair's median over its repetitions, with the between-run
    interval; a pair as stored (for bandwidth: sender, receiver)."""
    from .repeats import between

    out = []
    for (a, b), xs in sorted(times.items()):
        if xs:
            bt = between(xs)
            out.append(Pair(a, b, bt.median, bt.lo, bt.hi))
    return out


def unordered(found: Sequence[Pair]) -> list[Pair]:
    """One pair for each two nodes (a < b), the slower of its two
    directions where both were measured: what the verdict judges."""
    best: dict[tuple[str, str], Pair] = {}
    for p in found:
        a, b = sorted((p.a, p.b))
        if (a, b) not in best or p.median > best[(a, b)].median:
            best[(a, b)] = Pair(a, b, p.median, p.lo, p.hi)
    return [best[k] for k in sorted(best)]


def slow_pairs(v: Verdict) -> list[tuple[str, str]]:
    """The two nodes (a < b) of every pair the verdict found surely slow."""
    return sorted(k for k, (_, lo, _) in v.ratios.items() if v.typical > 0 and lo >= SLOW)


def references(v: Verdict, k: int = 2) -> list[tuple[str, str]]:
    """Up to k pairs that are not slow, nearest the typical pair: measured
    alone beside the slow ones, they give the typical pair alone."""
    ok = [(abs(math.log(m)), key) for key, (m, lo, _) in v.ratios.items()
          if v.typical > 0 and lo < SLOW and m > 0]
    return [key for _, key in sorted(ok)[:k]]


def alone(v: Verdict, found_alone: Sequence[Pair], refs: Sequence[tuple[str, str]],
          what: str, slow_at: float = SLOW, least_us: float = 0.0) -> list[str]:
    """What measuring the slow pairs of a matrix taken a round at a time
    (--at-once) again, one pair at a time, says of each: slow alone too (the
    link or its nodes), or only beside the other pairs of its round (they
    share something: a switch, an uplink, the cores under emulated nodes).
    Each slow pair alone is set against the reference pairs (`refs`) alone:
    the typical pair at once carries what the pairs shared, and its window
    may have been narrowed, so it is no yardstick for a pair alone.  Slow
    alone as the verdict's slow: `slow_at` times the references and
    `least_us` or more at its interval's lower end (stalls: STALL,
    STALL_US)."""
    mine = {(p.a, p.b): p for p in unordered(found_alone)}
    base = [mine[r].median for r in refs if r in mine]
    if not base:
        return [f"{a}/{b}: slow beside its round's pairs ({_x(v.ratios[(a, b)][0])}); no pair "
                "fine at once was measured alone to set it against"
                for a, b in slow_pairs(v)]
    typical = statistics.median(base)
    out = [f"alone, the typical pair ({', '.join('/'.join(r) for r in refs if r in mine)}) "
           f"takes {typical:.4g} us"]
    for a, b in slow_pairs(v):
        m0, lo0, _ = v.ratios[(a, b)]
        # slow at once by this cut too: for stalls the pairs measured alone are those
        # the matrix's 1.2x cut found, and one under the stall's cut at once as alone
        # had no stall to set down to what its round shared
        stalled = lo0 >= slow_at and lo0 * v.typical >= least_us
        p = mine.get((a, b))
        if p is None:
            out.append(f"{a}/{b} alone: not measured (its jobs failed): slow beside its "
                       f"round's pairs ({_x(m0)}), alone unknown")
            continue
        m, lo, hi = (x / typical for x in (p.median, p.lo, p.hi))
        said = (f"{a}/{b} alone: {_x(m)} [{_x(lo)}, {_x(hi)}] the typical {what} alone "
                f"({_x(m0)} beside its round's pairs): ")
        if lo >= slow_at and p.lo >= least_us:
            out.append(said + "slow alone too, the link or its nodes")
        elif (hi < slow_at or p.hi < least_us) and not stalled:
            out.append(said + "under the cut alone, and not surely over it beside its round's "
                              f"pairs either ({_x(slow_at)}"
                              + (f" and {least_us / 1000:.4g} ms" if least_us else "")
                              + "): nothing to set down to what the round shared")
        elif hi < slow_at or p.hi < least_us:
            out.append(said + "slow only beside the other pairs of its round: they share "
                              "something (a switch, an uplink, or the cores under emulated "
                              "nodes), not a slow link")
        else:
            out.append(said + "alone neither surely slow nor surely not")
    return out


def directions(found: Sequence[Pair], v: Verdict) -> list[str]:
    """For each node named, whether its pairs are slow when it sends, when
    it receives, or both (messages one way: bw from a to b)."""
    out = []
    for n in v.nodes:
        sends = [p.lo / v.typical for p in found if p.a == n]
        gets = [p.lo / v.typical for p in found if p.b == n]
        if not sends or not gets:
            continue
        slow_s, slow_g = min(sends) >= SLOW, min(gets) >= SLOW
        how = ("both when it sends and when it receives" if slow_s and slow_g
               else "when it sends, not when it receives" if slow_s
               else "when it receives, not when it sends" if slow_g
               else "in neither direction alone, surely")
        out.append(f"{n}: slow {how}")
    return out


def short_names(names: Sequence[str]) -> list[str]:
    """The names less the words they all begin with, up to a '-', '.' or
    '_' (emu-n0, emu-n1: n0, n1), where that leaves them apart; else the
    names."""
    head = os.path.commonprefix(list(names)) if len(names) > 1 else ""
    cut = max(head.rfind(c) for c in "-._") + 1
    short = [n[cut:] or n for n in names]
    return short if len(set(short)) == len(short) else list(names)


def grid(names: Sequence[str], typical: float, found: Sequence[Pair]
         ) -> list[list[float | None]]:
    """Each pair's median over the typical pair, row i sending to column j
    (a pair measured one way only fills both cells); None on the diagonal
    and where no pair was measured."""
    got = {(p.a, p.b): p.median for p in found}
    out: list[list[float | None]] = []
    for i, a in enumerate(names):
        row: list[float | None] = []
        for j, b in enumerate(names):
            m = got.get((a, b), got.get((b, a)))
            row.append(None if i == j or m is None or typical <= 0 else m / typical)
        out.append(row)
    return out


def matrix_text(names: Sequence[str], typical: float, found: Sequence[Pair]) -> str:
    """The matrix as text: each pair's median over the typical pair (row:
    the sender, column: the receiver, where the pairs were measured one way
    each; a pair measured one way only fills both cells), '-' the diagonal,
    '?' a pair not measured."""
    short = short_names(names)
    w = max(6, *(len(s) for s in short))
    lines = [" " * w + "".join(f"{s:>{w + 1}}" for s in short)]
    for i, row in enumerate(grid(names, typical, found)):
        cells = ["-" if i == j else "?" if r is None else _x(r) for j, r in enumerate(row)]
        lines.append(f"{short[i]:<{w}}" + "".join(f"{c:>{w + 1}}" for c in cells))
    return "\n".join(lines) + "\n"


def classes(sockets: Mapping[str, int]) -> list[tuple[str, Callable[[Pair], bool] | None]]:
    """The classes of pairs judged apart: the CPUs of one machine within a
    socket and across sockets, where it has several (across them a pair
    crosses the link between the sockets: with two sockets, each CPU's
    median pair is one across, and a verdict over all pairs would take that
    for the typical pair and call the pairs within a socket fast); one class
    otherwise."""
    if len(set(sockets.values())) < 2:
        return [("", None)]
    return [("within a socket", lambda p: sockets.get(p.a) == sockets.get(p.b)),
            ("across sockets", lambda p: sockets.get(p.a) != sockets.get(p.b))]


def judge(rows: Sequence[Mapping[str, object]], bench: str, size: int, what: str,
          nodes: Sequence[str] = (), word: str = "node",
          keep: Callable[[Pair], bool] | None = None,
          figure: str = "median") -> tuple[list[Pair], Verdict] | None:
    """The pairs of `bench` at `size` as measured (each direction its own)
    and the verdict on them (each two nodes by their slower direction, with
    which direction a named node is slow in); None where no pair was.
    `keep`: the pairs judged together (one class of pairs: within a socket)."""
    found = [p for p in pairs_from(per_pair(rows, bench, size, figure))
             if keep is None or keep(p)]
    if not found:
        return None
    v = verdict(unordered(found), what, nodes, word,
                *((STALL, STALL_US) if figure == "stall" else ()))
    # which way a node is slow: bandwidth's, measured each way (latency and its
    # stalls are round trips, one measurement a pair)
    if v.typical > 0 and bench == "bw" and figure == "median" and (more := directions(found, v)):
        v = replace(v, lines=(*v.lines, *more))
    return found, v
