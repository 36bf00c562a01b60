"""Candidate gaps: the screening sweep's findings, as the diagnosis
measures them again (analysis/diagnosis.py).

Only what an application calls is a candidate: commscope's reference
patterns (the hand-written `*_sends` collectives, `sendloop`) are the
measuring stick of a collective, never a gap of their own.  A one-size
benchmark (barrier) is a candidate like any other.  How buffers were
held (hot, cold, evicted) is a fact the user chose, not a gap to explain.

Each gap's sizes are those the screening separated, and one measured
neighbour on each side, so that the confirmation can say where the gap
ends."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..store.core_facts import bench as bench_facts
from ..store.sizes import human_bytes
from .causes import cold_pair
from .diagnosis import Gap, GapPoint
from .findings import Finding
from .series import Config, Series

REFERENCE = ("sendloop",)  # point-to-point patterns commscope times as references


def reference_pattern(bench: str) -> bool:
    """commscope's own measuring sticks: a hand-written collective (the
    coll-sends group), sendloop."""
    return bench_facts(bench).group == "coll-sends" or bench in REFERENCE


def arm_of(c: Config) -> str:
    """A configuration's name in the diagnosis: its key (the same
    configuration has the same key in the next sweep)."""
    return c.key


def _sizes(series: Series, lo: int, hi: int) -> tuple[list[int], list[int]]:
    """The measured sizes from lo to hi, and the neighbours just outside."""
    xs = sorted(series)
    inside = [s for s in xs if lo <= s <= hi]
    out = [s for s in xs if s < lo][-1:] + [s for s in xs if s > hi][:1]
    return inside, out


def _pair(f: Finding, series: Mapping[tuple[Config, str], Series]
          ) -> list[tuple[tuple[object, ...], Gap]]:
    fast, slow = f.parties
    out = []
    for bench in f.benches or (f.bench,):
        if reference_pattern(bench):
            continue
        s = series.get((slow, bench)) or {}
        lo, hi = f.span or (0, 0)
        inside, edge = _sizes(s, lo, hi)
        pts = [GapPoint(x, ((arm_of(slow), bench, x, 1.0),), ((arm_of(fast), bench, x, 1.0),),
                        x in inside) for x in sorted(inside + edge)
               if x in (series.get((fast, bench)) or {})]
        key = ("implementation", bench, arm_of(slow), arm_of(fast))
        out.append((key, Gap(
            f"implementation:{bench}:{arm_of(slow)}>{arm_of(fast)}", "implementation", bench,
            arm_of(slow), arm_of(fast), tuple(pts),
            f"{bench}: {slow.mpi} slower than {fast.mpi}", f.ratio, np=slow.np)))
    return out


def _reference(f: Finding) -> list[tuple[tuple[object, ...], Gap]]:
    x = f.xrow
    if x is None or not x.advises:
        return []
    c, arm = x.config, arm_of(x.config)
    sizes = sorted(s for s in x.coll if s in x.ref)
    held = {s for m, lo, hi in x.verdict.runs() if m == "H" for s in sizes if lo <= s <= hi}
    if not held:
        return []
    inside, edge = _sizes({s: x.coll[s] for s in sizes}, min(held), max(held))
    pts = tuple(GapPoint(s, ((arm, x.collective, s, 1.0),), ((arm, x.reference, s, 1.0),),
                         s in held) for s in sorted(inside + edge))
    return [(("reference", x.collective, arm), Gap(
        f"reference:{x.collective}:{arm}", "reference", x.collective, arm, arm, pts,
        f"{x.collective} under {c.mpi} slower than its hand-written equivalent "
        f"({x.reference})", f.ratio, np=c.np))]


def _guideline(f: Finding) -> list[tuple[tuple[object, ...], Gap]]:
    v = f.violation
    if v is None:
        return []
    arm = arm_of(v.config)
    pts = tuple(GapPoint(c.size, ((arm, v.lhs, c.size, 1.0),),
                         tuple((arm, b, s, 1.0) for b, s in c.parts)) for c in v.checks)
    return [(("guideline", v.guideline, arm), Gap(
        f"guideline:{v.lhs}:{v.guideline}:{arm}", "guideline", v.lhs, arm, arm, pts,
        f"under {v.config.mpi}, {v.guideline} does not hold", f.ratio, np=v.config.np))]


def _drop(f: Finding) -> list[tuple[tuple[object, ...], Gap]]:
    (c,) = f.parties
    if f.span is None or reference_pattern(f.bench):
        return []
    a, b = f.span
    arm = arm_of(c)
    # time per byte at b against time per byte at a: bandwidth at a over bandwidth at b
    pt = GapPoint(b, ((arm, f.bench, b, 1.0),), ((arm, f.bench, a, b / a),))
    return [(("drop", f.bench, arm, a, b), Gap(
        f"drop:{f.bench}:{a}:{b}:{arm}", "drop", f.bench, arm, arm, (pt,),
        f"{f.bench} under {c.mpi} loses bandwidth from {human_bytes(a)} to {human_bytes(b)}",
        f.ratio, np=c.np))]


def candidates(found: Sequence[Finding], series: Mapping[tuple[Config, str], Series]
               ) -> tuple[list[Gap], dict[str, Config]]:
    """The gaps to measure again, the largest screened first, and the
    configuration behind each arm.  Findings that are the same gap at
    several ranges of sizes (bcast from 1 B to 4 B and from 16 B to 32 B)
    are one gap over both."""
    gaps: dict[tuple[object, ...], Gap] = {}
    configs: dict[str, Config] = {}
    # a drop at the same step under two libraries is the machine's (the cache,
    # the memory), not a library's: no candidate
    steps: dict[tuple[object, ...], set[str]] = {}
    for f in found:
        if f.kind == "drop" and f.span and len(f.parties) == 1:
            steps.setdefault((f.bench, f.parties[0].np, *f.span), set()).add(
                f.parties[0].implementation)
    for f in found:
        if f.cause is not None and not f.cause.claims:
            continue  # a drop at a cache boundary or at the sweep's first size: no claim
        if f.kind == "drop" and f.span and len(steps.get(
                (f.bench, f.parties[0].np, *f.span), ())) > 1:
            continue
        if f.kind == "faster" and len(f.parties) == 2 and not cold_pair(*f.parties):
            made = _pair(f, series)
        elif f.kind == "collective-slower":
            made = _reference(f)
        elif f.kind == "guideline":
            made = _guideline(f)
        elif f.kind == "drop" and len(f.parties) == 1:
            made = _drop(f)
        else:
            continue
        for c in f.parties or ():
            configs.setdefault(arm_of(c), c)
        if f.xrow is not None:
            configs.setdefault(arm_of(f.xrow.config), f.xrow.config)
        if f.violation is not None:
            configs.setdefault(arm_of(f.violation.config), f.violation.config)
        for key, g in made:
            if not g.points:
                continue
            if key in gaps:  # another range of the same gap
                old = gaps[key]
                have = {p.size: p for p in old.points}
                for p in g.points:
                    if p.size not in have or (p.screened and not have[p.size].screened):
                        have[p.size] = p
                g = Gap(old.id, old.kind, old.call, old.slow_arm, old.fast_arm,
                        tuple(have[s] for s in sorted(have)), old.text,
                        max(old.screen_ratio, g.screen_ratio), old.family, old.np)
            gaps[key] = g
    out = sorted(gaps.values(), key=lambda g: (-math.log(max(g.screen_ratio, 1.0)), g.id))
    return out, configs


def terms_by_arm(gaps: Sequence[Gap]) -> dict[str, dict[str, set[int]]]:
    """What each arm must measure for these gaps: bench -> sizes."""
    out: dict[str, dict[str, set[int]]] = {}
    for g in gaps:
        for p in g.points:
            for arm, bench, size, _ in (*p.slow, *p.fast):
                out.setdefault(arm, {}).setdefault(bench, set()).add(size)
    return out


def side_terms(gaps: Sequence[Gap], arm: str, side: str) -> dict[str, set[int]]:
    """What one side (slow or fast) of these gaps measures under `arm`:
    bench -> sizes."""
    out: dict[str, set[int]] = {}
    for g in gaps:
        for p in g.points:
            for a, bench, size, _ in (p.slow if side == "slow" else p.fast):
                if a == arm:
                    out.setdefault(bench, set()).add(size)
    return out
