"""The diagnosis after a sweep: experiments, in order, within a budget.

1. confirm: every candidate gap of the screening sweep (analysis/gaps.py)
   is measured again, its two sides interleaved in rounds, until each is
   decided or the rounds run out (analysis/diagnosis.confirm);
2. explain: on each confirmed gap, every hypothesis its library offers
   (analysis/mechanisms.py) runs as an arm beside the gap's two sides in
   the same rounds; arms that are decided stop, the others run on;
3. check: the settings that closed or narrowed a gap, for one
   implementation, together in one file, against its defaults on every
   benchmark of the sweep that they change, at every size the sweep
   measured; only a file that is slower nowhere is written.

What it measured is stored as it goes (the runs at once, the diagnosis
after each step): Ctrl-C or a killed job leaves what was established.
The first screen reads the stored diagnosis (analysis/conclude.py)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from ..analysis import diagnosis as dg
from ..analysis import gaps as gaps_mod
from ..analysis import mechanisms
from ..analysis.conclude import in_file
from ..analysis.findings import Finding
from ..analysis.series import Config, Series
from ..errors import CommscopeError
from ..measure.build import Core
from ..measure.cluster import Placement
from ..measure.plan import CoreOptions
from ..store.db import Store
from ..store.sizes import expand_sizes, human_bytes
from . import experiment as ex
from . import search, tune_text

CONFIRM_ROUNDS = (5, 8)  # at least, at most: 5-8 alternating rounds
EXPLAIN_ROUNDS = (4, 6)
CHECK_ROUNDS = (dg.CHECK_LO, 4)
CHECK_MAX = 8  # rounds, where rounds taken across two host modes left fewer than 4 paired
CONFIRM_SHARE = 0.35  # of the budget, at most, for confirming
CONTINUE_S = 10.0  # left after it, at least, for confirming on where nothing held
RACE = 2  # rounds every hypothesis gets before those that reach 5% nowhere stop
MIN_GAIN = 1.05  # what a hypothesis must reach somewhere to run on (significance.MIN_FACTOR)
CHECK_SLACK_S = 2.0  # kept besides the check's own estimate (it grows as settings are found)
TIME_CAP_S = 0.05  # a size's sampling at most in an experiment (the sweep's 0.25 where less)
TARGET_CI = 0.10  # and the interval it stops at


@dataclass
class Context:
    store: Store
    sweep_id: int | None
    cores: Mapping[str, Core]
    configs: dict[str, Config]
    options: dict[str, CoreOptions]  # arm -> the options its sweep ran with
    policy: object
    progress: object
    clock: ex.Clock
    say: Callable[[str], None]


def _options(store: Store, sweeps: Sequence[int], key: str) -> CoreOptions | None:
    """The options a configuration's runs in these sweeps were planned with."""
    planned = store.planned_options(key, sweeps)
    if planned is None:
        return None
    known = set(CoreOptions.__dataclass_fields__)
    try:
        opts = {k: v for k, v in json.loads(planned).items() if k in known}
        return CoreOptions(**opts)
    except (TypeError, ValueError):
        return None


def _grid(opts: CoreOptions) -> list[int]:
    return expand_sizes(opts.sizes, opts.factor)


def _jobs(want: Mapping[str, set[int]], opts: CoreOptions) -> tuple[tuple[str, str, int], ...]:
    """One job for bench -> sizes (a job's start costs more than a size:
    0.15-0.4 s against about 10 ms), each benchmark over the range of the
    sweep's grid its own sizes span (NAME@MIN:MAX, the core's syntax); a
    sizeless benchmark (barrier) runs as the sweep ran it."""
    factor = _factor(_grid(opts))
    parts = []
    for bench, sizes in sorted(want.items()):
        sized = sorted(s for s in sizes if s > 0)
        if not sized:
            parts.append(bench)
            continue
        lo, hi = sized[0], sized[-1]
        parts.append(f"{bench}@{lo}:{hi}" if lo != hi else f"{bench}@{lo}")
    return ((",".join(parts), opts.sizes, factor),)


def _factor(grid: Sequence[int]) -> int:
    steps = [b // a for a, b in zip(grid, grid[1:], strict=False) if a > 0]
    return min(steps) if steps else 2


def _arm(ctx: Context, name: str, base: str, want: Mapping[str, set[int]],
         extra: Sequence[tuple[str, str]] = ()) -> ex.Arm | None:
    cfg = ctx.configs[base]
    core = ctx.cores.get(cfg.implementation)
    opts = ctx.options.get(base)
    if core is None or opts is None:
        return None
    # each round's figure is one run's median: its precision comes from the
    # rounds, not from sampling each size to a tight interval
    o = replace(opts, time_cap_s=min(opts.time_cap_s, TIME_CAP_S),
                target_ci=max(opts.target_ci, TARGET_CI), param="")
    settings = tuple(sorted({**dict(cfg.settings), **dict(extra)}.items()))
    return ex.Arm(name, core, Placement(1, cfg.np), o, settings, _jobs(want, opts),
                  strict=bool(extra))


def _usable(ctx: Context, gap: dg.Gap) -> str:
    """Why a gap cannot be measured here, or ''."""
    for arm in gap.arms():
        cfg = ctx.configs.get(arm)
        if cfg is None:
            return "its configuration is not in this sweep"
        if cfg.cluster != "local":
            return f"measured on {cfg.cluster}: the diagnosis runs on this machine only"
        if cfg.buffer != "host" or " chan" in f" {cfg.mpi}":
            return "not a host MPI configuration"
        if cfg.implementation not in ctx.cores:
            return f"{cfg.implementation}'s core is not in this run"
        if arm not in ctx.options:
            return "its options were not stored"
    return ""


def _save(ctx: Context, diag_id: int, d: dg.Diagnosis) -> None:
    ctx.store.save_diagnosis(diag_id, d.status, d.to_json())


# -- 1. confirm -------------------------------------------------------------------------
def _confirm_arms(ctx: Context, gaps: Sequence[dg.Gap]) -> list[ex.Arm]:
    want = gaps_mod.terms_by_arm(gaps)
    return [a for name, w in want.items() if (a := _arm(ctx, name, name, w)) is not None]


def fitting(ctx: Context, gaps: Sequence[dg.Gap], budget_s: float, clock: ex.Clock
            ) -> list[dg.Gap]:
    """The gaps the confirmation's budget reaches: all of them where the
    estimate of one round of all fits it (the rounds then go on while the
    budget lasts); else the widest screened first (then by id, the same on
    every run), each added while two rounds of them fit.  With three
    libraries a sweep offered 58 candidates, one round of them all outran the
    24 s of confirmation, and the diagnosis ran nothing.  (Asking five
    rounds of the estimate cut two libraries' 21-24 candidates to 8-9: the
    estimate, made before a job of the diagnosis ran, is cautious.)"""
    if ex.round_s(_confirm_arms(ctx, gaps), clock) <= budget_s:
        return list(gaps)
    kept: list[dg.Gap] = []
    for g in sorted(gaps, key=lambda g: (-g.screen_ratio, g.id)):
        if not kept or 2 * ex.round_s(_confirm_arms(ctx, [*kept, g]), clock) <= budget_s:
            kept.append(g)
    return kept


def confirm(ctx: Context, d: dg.Diagnosis, gaps: Sequence[dg.Gap], budget_s: float,
            again: bool = False) -> None:
    """Measure the gaps again in interleaved rounds until each is decided
    or budget_s is spent.  again: a second pass over the gaps the first
    left undecided, its rounds added to the first's (numbered on from them),
    each judged over all of them."""
    clock = ex.Clock(min(ctx.clock.deadline, time.monotonic() + budget_s), ctx.clock.seen)
    reached = fitting(ctx, gaps, budget_s, clock)
    if len(reached) < len(gaps) and not again:
        d.notes.append(f"{len(gaps) - len(reached)} of {len(gaps)} candidate(s) were not "
                       f"measured again: a round of them all did not fit the confirmation's "
                       f"{budget_s:.0f} s (the widest were taken first)")
    arms = _confirm_arms(ctx, reached)
    t0 = time.monotonic()
    lo, hi = CONFIRM_ROUNDS
    before = d.rounds if again else dg.Rounds()
    first = d.rounds.last_round + 1

    def active(rounds: dg.Rounds, r: int) -> list[str] | None:
        if r - first + 1 < lo:  # this pass's first rounds: every arm, no look yet
            return [a.name for a in arms]
        seen = dg.Rounds()
        seen.merge(before)
        seen.merge(rounds)
        judged = [dg.confirm(g, seen) for g in reached]
        open_ = [g for g, c in zip(reached, judged, strict=True) if not c.settled]
        if not open_ or time.monotonic() - t0 > budget_s:
            return None
        if again and any(c.confirmed for c in judged):
            return None  # one holds: the rest of the budget explains it
        return sorted(gaps_mod.terms_by_arm(open_))

    got = ex.run(arms, ctx.store, sweep_id=ctx.sweep_id, trial="confirm", clock=clock,
                 rounds=hi, policy=ctx.policy, progress=ctx.progress, seed=11 + again,
                 active=active, first_round=first)
    d.rounds.merge(got)
    d.rounds.stopped = got.stopped
    # every gap measured, judged over all its rounds in one family (Benjamini-Hochberg)
    confs = dg.confirm_all([o.gap for o in d.outcomes if o.conf is not None] if again
                           else reached, d.rounds)
    if again:
        d.outcomes = [dg.Outcome(o.gap, confs.get(o.gap.id, o.conf)) for o in d.outcomes]
    else:
        d.outcomes = [dg.Outcome(g, confs.get(g.id)) for g in gaps]
    held = sum(c.confirmed for c in confs.values())
    ran = len({r for by in got.figures.values() for r in by})
    ctx.say(f"diagnosis: {len(reached)} gap(s) {'still undecided ' if again else ''}from the "
            f"sweep measured again, {len(arms)} configuration(s) in {ran} interleaved "
            f"rounds: {held} held ({got.seconds:.0f} s)")


def confirm_on(ctx: Context, d: dg.Diagnosis) -> bool:
    """Where the confirmation ended with gaps undecided and nothing held
    (its share ran out, or its rounds did), nothing is left to explain or
    check: the rest of the budget measures again what it left undecided,
    until one gap holds (the time left then explains it) or the budget is
    spent.  A host flipping between its states dropped 4 of 7 rounds a gap
    as taken across a jump, and a diagnosis ended at 23 s of its 70 with no
    gap decided.  The second pass looks again after each round from its
    fifth, as the first does: its looks are not spent against the false
    discovery rate (docs/diagnosis.md).  Whether it ran."""
    open_ = undecided(d)
    if (not open_ or ctx.clock.left() <= CONTINUE_S or d.rounds.stopped == "interrupted"
            or any(o.conf is not None and o.conf.confirmed for o in d.outcomes)):
        return False
    confirm(ctx, d, open_, ctx.clock.left() - CHECK_SLACK_S, again=True)
    return True


def undecided(d: dg.Diagnosis) -> list[dg.Gap]:
    """The gaps the confirmation measured and left open (neither held nor
    refuted): what more rounds may decide."""
    return [o.gap for o in d.outcomes if o.conf is not None and not o.conf.settled]


# -- 2. explain --------------------------------------------------------------------------
def _cvars(ctx: Context, arm: str, cache: dict[str, dict]) -> dict:
    """The control variables of a configuration, as it runs (its settings given)."""
    if arm not in cache:
        cfg = ctx.configs[arm]
        try:
            cache[arm] = search.read_cvars(ctx.cores[cfg.implementation], settings=cfg.settings)
        except CommscopeError as exc:
            ctx.say(f"diagnosis: {cfg.mpi}'s settings could not be read: {str(exc)[:160]}")
            cache[arm] = {}
    return cache[arm]


def _algorithms(ctx: Context, impl: str, cache: dict[str, dict]) -> dict:
    key = "algorithms:" + impl
    if key not in cache:
        core = ctx.cores[impl]
        cache[key] = {}
        if core.impl.family == "mpich":
            from . import selection

            try:
                cache[key] = dict(selection.mpich_library(core.exe, core.impl.env).algorithms)
            except CommscopeError:
                pass
    return cache[key]


def hypotheses_for(ctx: Context, gap: dg.Gap, cache: dict[str, dict]) -> list[dg.Hypothesis]:
    slow, fast = ctx.configs[gap.slow_arm], ctx.configs[gap.fast_arm]
    fam = ctx.cores[slow.implementation].impl.family
    fam_fast = ctx.cores[fast.implementation].impl.family
    return mechanisms.hypotheses(
        gap, fam, _cvars(ctx, gap.slow_arm, cache),
        _algorithms(ctx, slow.implementation, cache), fam_fast if fast is not slow else "",
        _cvars(ctx, gap.fast_arm, cache) if fast is not slow else {},
        ctx.cores[slow.implementation].mpi_version, ctx.cores[slow.implementation].impl.variant)


def _decided(t: dg.Trial, conf: dg.Confirmation, r: int) -> bool:
    """A hypothesis needs no more rounds: it closed or narrowed the gap
    surely by 5% (or over EXPLAIN_ROUNDS' least, a win that may be handed
    over runs on until its interval says so; one whose median closes the
    gap and whose interval does not yet, to the last round), it was slower, or it cannot
    reach the 5% a claim needs at any size of it (after RACE rounds, one
    whose median reaches 5% nowhere stops: racing, so that the rounds go to
    the settings that may matter)."""
    if t.verdict in ("slower", "broken", "untestable"):
        return True
    if t.verdict == "helps" and t.closed >= dg.CLOSES:
        # its median closes the gap, its interval not yet: the cause or not is
        # what the last rounds decide (stopped at 5% sure, it stayed "helps"
        # with 0.87 of the gap closed and the reason unsaid)
        return r >= EXPLAIN_ROUNDS[1]
    if t.verdict in ("closes", "helps"):
        return t.speed()[1] >= MIN_GAIN or r >= EXPLAIN_ROUNDS[0]
    sizes = set(conf.sizes)
    sp = [x for x in t.speedup if x.size in sizes]
    if not sp:
        return r >= RACE
    if r >= RACE and all(x.median < MIN_GAIN for x in sp):
        return True
    return all(x.n >= dg.MIN_ROUNDS and x.hi < MIN_GAIN for x in sp)


Want = dict[str, tuple[str, dict[str, set[int]], tuple[tuple[str, str], ...]]]


def _add(into: Want, name: str, base: str, terms: Mapping[str, set[int]],
         extra: tuple[tuple[str, str], ...] = ()) -> None:
    _, have, _ = into.setdefault(name, (base, {}, extra))
    for b, s in terms.items():
        have.setdefault(b, set()).update(s)


def _plan_arms(o: dg.Outcome, hs: Sequence[dg.Hypothesis]) -> Want:
    """A confirmed gap's two sides at its confirmed sizes, and each
    hypothesis's side with its setting."""
    confirmed = set(o.conf.sizes) if o.conf else set()
    g = replace(o.gap, points=tuple(p for p in o.gap.points if p.size in confirmed))
    mine: Want = {}
    for arm, terms in gaps_mod.terms_by_arm([g]).items():
        _add(mine, arm, arm, terms)
    for h in hs:
        if not h.untestable:
            base = g.fast_arm if h.side == "fast" else g.slow_arm
            _add(mine, dg.hyp_arm(g, h), base, gaps_mod.side_terms([g], base, h.side),
                 h.settings + h.probe)
    return mine


def _arms(ctx: Context, want: Want) -> list[ex.Arm]:
    return [a for name, (base, terms, extra) in want.items()
            if (a := _arm(ctx, name, base, terms, extra)) is not None]


def explain(ctx: Context, d: dg.Diagnosis, budget_s: float, cache: dict[str, dict],
            reserve: Callable[[], float] = lambda: 0.0,
            first: frozenset[str] = frozenset(),
            new_file: Callable[[dg.Outcome, Sequence[dg.Hypothesis]], float] = (
                lambda o, hs: 0.0)) -> None:
    """Every hypothesis on the confirmed gaps, the largest gaps first, in
    waves as long as the budget lasts: each wave as many gaps as it holds,
    every hypothesis of them for RACE rounds, then those still open for up
    to EXPLAIN_ROUNDS.  `reserve()`: what the check of the settings found so
    far will take (asked before each wave, as settings are found).
    `new_file(o, hs)`: what checking a file would take that a setting of hs
    found on o's gap would start (a configuration with no file yet; 0 otherwise): a
    wave is planned, and stops, leaving that too, so that a setting it finds
    is not left unchecked (two default runs each found MPICH's, then had 0 s
    left for its file).  `first`:
    gaps whose cause the last diagnosis in the store established, explained
    before the rest, so that the budget does not leave out this run what
    the last one found (their every hypothesis still races: a cause that
    no longer closes the gap is retracted as any other)."""
    t_end = time.monotonic() + budget_s
    # a library's call against another's first (a setting there is the first
    # screen's lead), then a collective against its sends, then the rest;
    # the larger gap first within each
    # within each, the most gap for the fewest arms first: a point-to-point gap
    # with its three settings before a collective with nine algorithms
    order = {"implementation": 0, "reference": 1}
    confirmed = [o for o in d.outcomes if o.confirmed]
    hyps = {o.gap.id: hypotheses_for(ctx, o.gap, cache) for o in confirmed}

    def worth(o: dg.Outcome) -> float:
        arms = 2 + sum(1 for h in hyps[o.gap.id] if not h.untestable)
        return math.log(o.conf.median if o.conf else 1.0) / arms

    todo = sorted(confirmed, key=lambda o: (o.gap.id not in first, order.get(o.gap.kind, 2),
                                            -worth(o), o.gap.id))
    plans: dict[str, list[dg.Hypothesis]] = {}
    lo, hi = EXPLAIN_ROUNDS
    tried = 0
    while todo and d.rounds.stopped != "interrupted":
        _judged(d, plans, {o.gap.id for o in todo})
        left = t_end - time.monotonic() - reserve()
        wave: list[dg.Outcome] = []
        want: Want = {}
        files: dict[str, float] = {}  # the files the wave's settings would start
        for o in list(todo):
            hs = hyps[o.gap.id]
            if not any(not h.untestable for h in hs):  # nothing to run: said as it is
                plans[o.gap.id] = hs
                todo.remove(o)
                continue
            trial: Want = {k: (b, {x: set(v) for x, v in t.items()}, e)
                           for k, (b, t, e) in want.items()}
            for name, (base, terms, extra) in _plan_arms(o, hs).items():
                _add(trial, name, base, terms, extra)
            # RACE rounds of every arm, then the rest for the gaps' two sides and
            # the few hypotheses still open (racing stops most after RACE)
            arms = _arms(ctx, trial)
            sides = [a for a in arms if a.name in ctx.configs]
            every, two = ex.round_s(arms, ctx.clock), ex.round_s(sides, ctx.clock)
            cost = every * RACE + (two + (every - two) / 4) * (hi - RACE)
            more = {**files, o.gap.slow_arm: max(files.get(o.gap.slow_arm, 0.0),
                                                  new_file(o, hs))}
            if cost + sum(more.values()) > left:
                continue  # a smaller gap, or one of a configuration with a file, may fit
            want, files = trial, more
            wave.append(o)
            todo.remove(o)
        if not wave:
            break
        for o in wave:
            plans[o.gap.id] = hyps[o.gap.id]
        _wave(ctx, d, wave, plans, _arms(ctx, want), t_end - reserve() - sum(files.values()))
        tried += len(wave)
    n_h = sum(1 for hs in plans.values() for h in hs if not h.untestable)
    cut = d.rounds.stopped == "interrupted"
    ctx.say(f"diagnosis: {n_h} setting(s) "
            + ("being tried when it was interrupted, " if cut else "tried ")
            + f"on {tried} confirmed gap(s), beside their two sides "
            f"({time.monotonic() - t_end + budget_s:.0f} s)"
            + (f"; {len(todo)} gap(s) left unexplained: "
               + ("interrupted first" if cut else "the budget held no more") if todo else ""))
    _judged(d, plans, {o.gap.id for o in todo})


def _judged(d: dg.Diagnosis, plans: Mapping[str, Sequence[dg.Hypothesis]],
            late: set[str]) -> None:
    """Every gap judged on the rounds so far, with the hypotheses planned for
    it, and those planned for another gap of the same call under the same
    configuration (their arms measured that call: the alltoall algorithms
    tried against Open MPI are tried against alltoall_sends too); `late`: the
    gaps the budget has not reached (yet)."""
    confs = dg.confirm_all([o.gap for o in d.outcomes if o.conf is not None], d.rounds)
    # a setting measured again: both runs' rounds, for its speed-up and for the gap
    # whose share it closed alike (this run's gap over pooled speed-ups mixed two runs)
    pooled = d.trial_rounds()
    pconfs = confs if pooled is d.rounds else dg.confirm_all(
        [o.gap for o in d.outcomes if o.conf is not None], pooled)
    by_call: dict[tuple[str, str], list[dg.Hypothesis]] = {}
    for o in d.outcomes:
        for h in plans.get(o.gap.id) or ():
            if h.side == "slow" and h not in by_call.setdefault((o.gap.slow_arm, o.gap.call), []):
                by_call[(o.gap.slow_arm, o.gap.call)].append(h)
    out = []
    for o in d.outcomes:
        if o.conf is None:
            out.append(o)
            continue
        mine = list(plans.get(o.gap.id) or ())
        mine += [h for h in by_call.get((o.gap.slow_arm, o.gap.call), ()) if h not in mine]
        trials = tuple(dg.judge(o.gap, pconfs[o.gap.id], h, pooled) for h in mine)
        ran = any(t.verdict not in ("not-reached", "untestable") for t in trials)
        why = ("" if ran else "budget" if o.gap.id in late else
               "none" if o.gap.id in plans else "late")
        out.append(dg.Outcome(o.gap, confs[o.gap.id], trials, why))
    d.outcomes = out


def _wave(ctx: Context, d: dg.Diagnosis, wave: Sequence[dg.Outcome],
          plans: Mapping[str, Sequence[dg.Hypothesis]], arms: Sequence[ex.Arm],
          t_end: float) -> None:
    """One wave of hypotheses, raced: an arm stops once its hypothesis is
    decided on every gap it serves."""
    first = d.rounds.last_round + 1
    lo, hi = EXPLAIN_ROUNDS
    names = {a.name for a in arms}

    def active(rounds: dg.Rounds, r: int) -> list[str] | None:
        k = r - first + 1
        merged = dg.Rounds()
        merged.merge(d.rounds)
        merged.merge(rounds)
        pooled = merged.with_earlier(d.earlier)
        need: set[str] = set()
        for o in wave:
            conf = dg.confirm(o.gap, pooled)
            for h in plans[o.gap.id]:
                if h.untestable:
                    continue
                # a setting the earlier rounds hold too races on this run's MIN_ROUNDS
                # first: the earlier ones alone never stop it
                again = dg.hyp_arm(o.gap, h) in d.earlier.figures and k < dg.MIN_ROUNDS
                if k < lo - 1 and k < RACE or again or not _decided(
                        dg.judge(o.gap, conf, h, pooled), conf, k):
                    need |= {dg.hyp_arm(o.gap, h), o.gap.slow_arm, o.gap.fast_arm}
        if not need or time.monotonic() > t_end:
            return None
        return sorted(need & names)

    clock = ex.Clock(min(ctx.clock.deadline, t_end), ctx.clock.seen)
    got = ex.run(arms, ctx.store, sweep_id=ctx.sweep_id, trial="explain", clock=clock,
                 rounds=hi, policy=ctx.policy, progress=ctx.progress, seed=23 + first,
                 active=active, first_round=first)
    d.rounds.merge(got)
    d.rounds.stopped = got.stopped or d.rounds.stopped


# -- 3. check the file as a whole ------------------------------------------------------------
def _merge_settings(trials: Sequence[dg.Trial]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """Every setting to hand over, in one set, a trial's settings whole:
    where the settings of several gaps' trials name one variable with other
    values, those whose gaps together saved more go in (the share of a
    call's time each gap's trial saved, summed; ties to the larger number),
    and the others are said, once each.  By the gaps together, not the one
    best gap: an eager limit raised to 8 KiB saved most on bw at 4 KiB while
    16 KiB closed six gaps at 4-8 KiB, and the 8 KiB one went into the file.
    A threshold raised (Hypothesis.raises) is one value, its largest: every
    size the smaller values sent eagerly goes eagerly under it, so it takes
    their gaps' savings as its own (by the sum alone, 8 KiB still won again
    on 2026-11-29, and the file left roundtrip's 8 KiB gap in rendezvous);
    the file's check then measures whether it serves them.  Whole, not
    variable by variable: the eager limit's trial above 32 KiB carries the
    largest send size with it, which means nothing without it."""
    top: dict[str, tuple[tuple[str, str], ...]] = {}  # a raised threshold: its largest trial
    for t in trials:
        h = t.hypothesis
        v = dict(h.settings).get(h.raises, "")
        if h.raises and v.isdigit() and (
                h.raises not in top or int(v) > int(dict(top[h.raises])[h.raises])):
            top[h.raises] = tuple(h.settings)
    by: dict[tuple[tuple[str, str], ...], list[float]] = {}
    served: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
    for t in trials:
        k = tuple(t.hypothesis.settings)
        if t.hypothesis.raises in top and top[t.hypothesis.raises] != k:
            served[k] = top[t.hypothesis.raises]
            k = served[k]
        by.setdefault(k, []).append(t.gain)

    def key(k: tuple[tuple[str, str], ...]) -> tuple[float, tuple[tuple[int, float, str], ...]]:
        def one(v: str) -> tuple[int, float, str]:
            try:
                return (0, -float(v), v)
            except ValueError:
                return (1, 0.0, v)
        return (-sum(by[k]), tuple(one(v) for _, v in k))

    def said(k: tuple[tuple[str, str], ...]) -> str:
        return (f"{' '.join(f'{x}={v}' for x, v in k)} ({sum(by[k]):.2f} over "
                f"{len(by[k])} gap(s))")

    chosen: list[tuple[tuple[str, str], ...]] = []
    notes = [f"{' '.join(f'{x}={v}' for x, v in k)} left out: "
             f"{' '.join(f'{x}={v}' for x, v in big)}, a larger value of the same threshold, "
             "sends eagerly every size it did, and goes in for its gaps too"
             for k, big in sorted(served.items())]
    for k in sorted(by, key=key):
        clash = next((c for c in chosen if any(dict(c).get(x, v) != v for x, v in k)), None)
        if clash is not None:
            notes.append(f"{' '.join(f'{x}={v}' for x, v in k)} left out: "
                         f"{' '.join(f'{x}={v}' for x, v in clash)} saved more over its gaps "
                         f"together (the share of a call's time saved, summed: {said(clash)}, "
                         f"against {said(k)})")
            continue
        chosen.append(k)
    return tuple(sorted({kv for k in chosen for kv in k})), notes


def file_scope(trials: Sequence[dg.Trial], measured: Mapping[str, object]) -> tuple[str, ...]:
    """Every benchmark of the sweep that one of these settings changes: its
    call and, for a switch of a whole path, each call that takes the path."""
    changes = {b for t in trials for b in (t.hypothesis.changes or ())}
    return tuple(sorted(b for b in measured if b in changes))


@dataclass
class FilePlan:
    """One settings file to check: its configuration, the trials behind it,
    the check as it will be stored, and its two arms (None: nothing to run)."""

    arm: str
    trials: list[dg.Trial]
    notes: list[str]
    fc: dg.FileCheck
    arms: tuple[ex.Arm, ex.Arm] | None


def file_plans(ctx: Context, d: dg.Diagnosis, swept: Mapping[str, Mapping[str, list[int]]]
               ) -> list[FilePlan]:
    """One file per configuration with a setting to hand over."""
    by_arm: dict[str, list[dg.Trial]] = {}
    for o in d.outcomes:
        t = o.best_setting()
        if t is not None:
            by_arm.setdefault(o.gap.slow_arm, []).append(t)
    out = []
    for arm, trials in by_arm.items():
        cfg = ctx.configs[arm]
        settings, notes = _merge_settings(trials)
        measured = swept.get(arm, {})
        benches = file_scope(trials, measured)
        fc = dg.FileCheck(cfg.implementation, dg.arm_with(arm, settings), settings, benches)
        want = {b: set(measured[b]) for b in benches}
        base = _arm(ctx, arm + "|check", arm, want)
        test = _arm(ctx, fc.arm, arm, want, settings)
        ok = base is not None and test is not None and bool(want)
        out.append(FilePlan(arm, trials, notes, fc,
                            (replace(base, name=arm), test) if ok else None))  # type: ignore[arg-type]
    return out


def check_cost(ctx: Context, d: dg.Diagnosis, swept: Mapping[str, Mapping[str, list[int]]]
               ) -> float:
    """What checking the files of the settings found so far will take: the
    rounds a check wants paired (CHECK_ROUNDS' most), one more than it
    needs, so that one round taken across a jump of the host still leaves
    it its fewest."""
    _, want = CHECK_ROUNDS
    return sum(ex.round_s(p.arms, ctx.clock) * want for p in file_plans(ctx, d, swept)
               if p.arms is not None)


def new_file_cost(ctx: Context, d: dg.Diagnosis, swept: Mapping[str, Mapping[str, list[int]]],
                  o: dg.Outcome, hs: Sequence[dg.Hypothesis]) -> float:
    """What checking a file for o's slow configuration would take, where no
    setting found so far has started one: its rounds (check_cost's) of the
    configuration and of its settings over every benchmark the sweep
    measured that the gap's call or a setting of hs changes (file_scope's,
    for whichever is found: MPICH's device-collective switch holds every
    collective; its gap's call alone fell short, and the file after it had
    1 s); 0 where the configuration has a file already."""
    arm, measured = o.gap.slow_arm, swept.get(o.gap.slow_arm, {})
    if any(p.arm == arm for p in file_plans(ctx, d, swept)):
        return 0.0
    changes = {o.gap.call, *(b for h in hs if h.settings and h.side == "slow"
                             and not h.untestable for b in h.changes)}
    want = {b: set(measured[b]) for b in sorted(changes) if b in measured}
    base = _arm(ctx, arm + "|check", arm, want) if want else None
    return 0.0 if base is None else ex.round_s([base, base], ctx.clock) * CHECK_ROUNDS[1]


def paired_until(fc: dg.FileCheck, default_arm: str, arms: Sequence[ex.Arm],
                 yield_to: Callable[[], bool] = lambda: False
                 ) -> Callable[[dg.Rounds, int], list[str] | None]:
    """The check's rounds go on until CHECK_ROUNDS' most are paired at all
    but dg.UNJUDGED_MAX of its sizes (CHECK_MAX rounds at most): a round
    taken across a jump of the host between its modes pairs nothing at a
    size (a CI host dropped 2 of 4, and the file was not handed over), and
    is taken again.  Once its fewest are paired there (enough to judge it),
    it stops where `yield_to()` says the files after it need the time left."""
    names = [a.name for a in arms]

    def short(now: dg.FileCheck, n: int) -> bool:
        few = sum(1 for _, x in now.effects if x.n < n) + len(now.unpaired)
        return not now.effects or few > dg.UNJUDGED_MAX * now.sizes

    def wants(got: dg.Rounds, _round: int) -> list[str] | None:
        now = dg.check_file(fc, got, default_arm)
        if not short(now, CHECK_ROUNDS[1]):
            return None
        return None if not short(now, CHECK_ROUNDS[0]) and yield_to() else names

    return wants


def check(ctx: Context, d: dg.Diagnosis, budget_s: float, out_dir: Path,
          swept: Mapping[str, Mapping[str, list[int]]]) -> None:
    """One file per implementation configuration with a setting to hand over,
    the file whose settings saved most first: each check runs until its
    rounds are paired (paired_until), and the next takes what is left.
    Tried 2026-11-28 and taken back: stopping each file where the next
    files' fewest rounds would no longer fit.  The rounds' estimates fall
    short of a 271-size file's rounds, and a round taken across a jump of
    the host pairs nothing: in 5 clean default runs with it no file was
    handed over (in 3 of them the first ran short and the next still had no
    time); without it, the first file was in 1 of 2."""
    checks = []
    plans = sorted(file_plans(ctx, d, swept), key=lambda p: -sum(t.gain for t in p.trials))
    lo = CHECK_ROUNDS[0]

    def later_need(i: int, arms: Sequence[ex.Arm]) -> Callable[[], bool]:
        """Whether the file after the i-th needs the time one more of its
        rounds would take: asked after each round, by the clock as it has
        learned this run's jobs (estimated once before the first round, a
        file over 271 sizes took longer than said, and capping it there left
        no file handed over in 5 runs)."""
        def need() -> bool:
            # the next file's rounds as its check wants them (one more than it
            # needs, for a round a jump leaves unpaired: its fewest alone were
            # not enough, docs/diagnosis.md)
            rest = [ex.round_s(p.arms, ctx.clock) * CHECK_ROUNDS[1] for p in plans[i + 1:]
                    if p.arms is not None]
            now = ctx.clock.left()
            # one more round would leave the next file too little, that now has enough
            return bool(rest) and now - ex.round_s(arms, ctx.clock) < rest[0] <= now
        return need

    for i, plan in enumerate(plans):
        arm, trials, fc = plan.arm, plan.trials, plan.fc
        cfg = ctx.configs[arm]
        settings, benches = fc.settings, fc.benches
        d.notes += plan.notes
        if plan.arms is None:
            checks.append(replace(fc, reason="nothing of the sweep to check it on"))
            continue
        base, test = plan.arms
        if ex.round_s([base, test], ctx.clock) * lo > min(budget_s, ctx.clock.left()):
            checks.append(replace(fc, reason=f"the budget left ({max(ctx.clock.left(), 0):.0f} s)"
                                  f" holds no {lo} rounds of it"))
            continue
        t1 = time.monotonic()
        first = d.rounds.last_round + 1
        clock = ex.Clock(min(ctx.clock.deadline, t1 + budget_s), ctx.clock.seen)
        got = ex.run([base, test], ctx.store, sweep_id=ctx.sweep_id, trial="check",
                     clock=clock, rounds=CHECK_MAX, policy=ctx.policy, progress=ctx.progress,
                     seed=37, first_round=first,
                     active=paired_until(fc, arm, (base, test), later_need(i, (base, test))))
        part = dg.Rounds()
        part.merge(got)
        d.rounds.merge(got)
        done = dg.check_file(fc, part, arm)
        if got.stopped == "interrupted" or got.stopped == "budget" and done.rounds < lo:
            d.rounds.stopped = got.stopped  # rounds past the 4th wanted, not needed: not partial
        if done.rounds < lo and not done.reason:
            done = replace(done, reason=f"only {done.rounds} round(s) were paired")
        # a setting that slowed what only it changes leaves the file, the rest stays
        changes = {kv: t.hypothesis.changes for t in trials for kv in t.hypothesis.settings}
        checks.append(dg.without_culprits(done, changes))
        ctx.say(f"diagnosis: {len(settings)} setting(s) for {cfg.mpi} checked together on "
                f"{', '.join(benches)} at every size the sweep measured: "
                + ("slower nowhere" if done.passed else "slower at "
                   + ", ".join(f"{b} {human_bytes(a)}" for b, a, _ in done.slower)
                   if done.slower else done.reason or "not checked")
                + f" ({time.monotonic() - t1:.0f} s)")
    d.checks = checks
    _hand_over(d, out_dir, ctx)


def settings_text(fc: dg.FileCheck, d: dg.Diagnosis, where: str) -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"{HEADER}{fc.impl} ({where}), measured {when}",
             "# read by `commscope run --settings FILE`, or sourced by a shell",
             f"# checked together against the defaults: {', '.join(fc.benches)} at "
             f"{fc.sizes - len(fc.unjudged)} size(s) over {fc.rounds} rounds or more, none slower"
             + (f"; {fc.unjudged_words}" if fc.unjudged else ""),
             f"# measured with {where}: they apply to every communicator of a job that reads "
             "them, and to the collectives the library calls inside other calls (MPICH: the "
             "barriers of MPI_Win_fence and window creation, the allreduce of communicator "
             "creation), which were not measured here"]
    seen: set[str] = set()
    for o in d.outcomes:
        t = o.best_setting()
        if t is None or o.gap.slow_arm != fc.arm.split("|", 1)[0] or t.hypothesis.label in seen:
            continue
        seen.add(t.hypothesis.label)
        med, least, _ = t.speed()
        taken = all(kv in fc.settings for kv in t.hypothesis.settings)
        left = next((why for label, why in fc.left_out if label in t.hypothesis.label), "")
        instead = " ".join(f"{k}={v}" for k, v in fc.instead(t.hypothesis.settings))
        # another gap's value of its variable went in: whether it serves this
        # gap too is what the file's check measured on this call there
        served = bool(instead) and in_file(fc, t, o.gap.call)
        lines.append(("# " if taken else f"# NOT SET, SERVED BY {instead} (this check: faster "
                      "there too): " if served else f"# LEFT OUT for {instead}: " if instead
                      else "# LEFT OUT: ") + f"{t.hypothesis.label}: {o.gap.call} "
                     f"{med:.2f}x faster (at least {least:.3f}x) {dg.span_text(t.sizes)}, "
                     f"closing {min(t.closed, 1.0):.0%} of a gap ({o.gap.text})"
                     + (f"; set for every size it slowed {left}" if left else ""))
    lines += [tune_text.export_line(k, v) for k, v in fc.settings]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Written beside the store, never over one (an SQLite file)."""
    if path.is_dir():
        raise CommscopeError(f"{path} is a folder: the advice is not written over it")
    if path.exists():
        with path.open("rb") as f:
            if f.read(16) == b"SQLite format 3\0":
                raise CommscopeError(f"{path} is a store: the advice is not written over it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


HEADER = "# commscope: settings for "


def withdrawn_text(old: str, fc: dg.FileCheck, when: str) -> str:
    """An earlier diagnosis's file, once this one's check of the same
    implementation's settings found them slower: its exports commented
    out, and why.
    Left as it was, it would hand over what the latest check did not (the
    MVAPICH2 runs of 2026-11-27 left one from the run before)."""
    from ..analysis.conclude import file_text

    said = file_text(fc).removeprefix("not handed over: ")
    lines = [f"# commscope: withdrawn {when}: the latest diagnosis's settings for this "
             "implementation (" + " ".join(f"{k}={v}" for k, v in fc.settings)
             + f"), checked together: {said}; the settings below were not checked again",
             "# what an earlier diagnosis wrote here, its settings commented out:"]
    lines += [x if x.startswith("#") else f"# {x}" for x in old.splitlines()]
    return "\n".join(lines) + "\n"


def _hand_over(d: dg.Diagnosis, out_dir: Path, ctx: Context) -> None:
    taken: set[Path] = set()
    out = []
    for fc in d.checks:
        base = fc.arm.split("|", 1)[0]
        cfg = ctx.configs[base]
        name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in cfg.implementation)
        path, n = out_dir / f"{name}.env", 1
        while path in taken:
            n += 1
            path = out_dir / f"{name}-{n}.env"
        taken.add(path)
        if not fc.passed:
            out.append(fc)
            if not fc.slower:
                continue  # not checked (the budget, too few rounds): the earlier file stays
            try:  # an earlier diagnosis's file for this implementation is withdrawn
                old = path.read_text() if path.is_file() else ""
                if old.startswith(HEADER):
                    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
                    _write(path, withdrawn_text(old, fc, when))
                    ctx.say(f"diagnosis: {path} withdrawn (its settings commented out): "
                            "the latest check found its implementation's settings slower")
            except (CommscopeError, OSError, UnicodeDecodeError):
                pass  # not ours to touch, or not readable: left as it is
            continue
        try:
            _write(path, settings_text(fc, d, f"{cfg.np} processes, {cfg.cluster}"))
        except (CommscopeError, OSError) as exc:
            why = str(exc) if isinstance(exc, CommscopeError) else f"{path}: {exc.strerror}"
            out.append(replace(fc, reason=f"the file could not be written: {why}"))
            continue
        out.append(replace(fc, file=str(path)))
    d.checks = out


# -- the whole diagnosis --------------------------------------------------------------------
def _previous(store: Store, sweep_id: int | None) -> dg.Diagnosis | None:
    """The newest diagnosis of an earlier sweep in this store, or None."""
    if sweep_id is None:
        return None
    return dg.latest(store, store.earlier_sweeps(sweep_id))


def _machine(store: Store, sweep_id: int | None) -> set[tuple]:
    """The hosts a sweep's own runs ran on (name, CPU, kernel)."""
    return set(store.sweep_hosts(sweep_id))


def earlier_rounds(store: Store, sweep_id: int | None) -> tuple[dg.Rounds, int | None]:
    """The last diagnosis's rounds in this store, where its sweep ran on the
    machine this one did (another machine's figures are not this one's):
    a setting it tried and this run tries again is judged on both runs'
    rounds.  One default run's pairwise alltoall closed MPICH's gap at 8-32
    KiB by 87% (the least its interval allowed, 58%); the next, on six
    rounds of its own, by 78% with 37% the least: "the cause" then "narrows",
    one setting, one gap, two first screens."""
    prev = _previous(store, sweep_id)
    if prev is None or prev.sweep_id is None:
        return dg.Rounds(), None
    here, there = _machine(store, sweep_id), _machine(store, prev.sweep_id)
    if not here or here != there:
        return dg.Rounds(), None
    return prev.rounds, prev.sweep_id


def settled_before(store: Store, sweep_id: int | None) -> frozenset[str]:
    """The gaps whose cause the last diagnosis in this store established (a
    setting of the slower side closed the gap)."""
    prev = _previous(store, sweep_id)
    return frozenset() if prev is None else frozenset(
        o.gap.id for o in prev.outcomes if o.cause() is not None)


def prior_gaps(store: Store, sweep_id: int | None,
               series: Mapping[tuple[Config, str], Series], current: Sequence[dg.Gap]
               ) -> tuple[list[dg.Gap], dict[str, Config], int]:
    """This sweep's candidates with what the newest earlier diagnosis in this
    store confirmed added, where this sweep measured every figure of it under
    the same configurations: a gap its screen did not pick, and the confirmed
    sizes of a gap it picked at other sizes (a gap is one call between two
    configurations: its id names no size).  So a conclusion does not come and
    go with one sweep's three repetitions (Open MPI's bw gap at 4-8 KiB,
    confirmed at 1.6x by one default run, was no candidate of the next run's
    screen).  Returns the candidates, the configurations the added ones
    need, and how many gaps were added to or widened."""
    out = list(current)
    prev = _previous(store, sweep_id)
    if prev is None:
        return out, {}, 0
    configs = {gaps_mod.arm_of(c): c for c, _ in series}
    measured = {(gaps_mod.arm_of(c), b, size) for (c, b), ser in series.items() for size in ser}
    at = {g.id: i for i, g in enumerate(out)}
    added: list[dg.Gap] = []
    for o in prev.outcomes:
        g, conf = o.gap, o.conf
        if not o.confirmed or conf is None or not all(
                (t[0], t[1], t[2]) in measured for p in g.points for t in (*p.slow, *p.fast)):
            continue
        if g.id not in at:
            out.append(g)
            added.append(g)
            continue
        mine = out[at[g.id]]
        have, confirmed = {p.size for p in mine.points}, set(conf.sizes)
        more = [replace(p, screened=True) for p in g.points
                if p.size in confirmed and p.size not in have]
        if more:
            out[at[g.id]] = replace(mine, points=tuple(sorted((*mine.points, *more),
                                                              key=lambda p: p.size)))
            added.append(g)
    return out, {a: configs[a] for g in added for a in g.arms()}, len(added)


def diagnose(store: Store, sweeps: Sequence[int], found: Sequence[Finding],
             series: Mapping[tuple[Config, str], Series], cores: Mapping[str, Core], *,
             budget_s: float, out_dir: Path, policy, progress=None,
             say: Callable[[str], None] = print) -> dg.Diagnosis:
    """Confirm, explain, check, within budget_s; stored as it goes, with the
    newest of the sweeps its series come from (several: configurations
    measured in different runs, set side by side)."""
    t0 = time.monotonic()
    sweep_id = max(sweeps) if sweeps else None
    gaps, configs = gaps_mod.candidates(found, series)
    gaps, more, again = prior_gaps(store, sweep_id, series, gaps)
    configs = {**more, **configs}
    options = {a: o for a, c in configs.items() if (o := _options(store, sweeps, c.key))}
    ctx = Context(store, sweep_id, cores, configs, options, policy, progress,
                  ex.Clock(t0 + budget_s), say)
    d = dg.Diagnosis(sweep_id, budget_s,
                     labels={a: c.mpi for a, c in configs.items()},
                     impls={a: c.implementation for a, c in configs.items()})
    if again:
        d.notes.append(f"{again} gap(s) the last diagnosis in this store confirmed were "
                       "measured again where this sweep's screen did not pick them")
    d.earlier, d.pooled_from = earlier_rounds(store, sweep_id)
    usable = []
    for g in gaps:
        why = _usable(ctx, g)
        if why:
            d.skipped.append((g.id, why))
        else:
            usable.append(g)
    diag_id = store.begin_diagnosis(sweep_id, d.to_json())
    swept: dict[str, dict[str, list[int]]] = {}
    for (c, bench), s in series.items():
        swept.setdefault(gaps_mod.arm_of(c), {})[bench] = sorted(s)
    cache: dict[str, dict] = {}
    try:
        if usable:
            confirm(ctx, d, usable, budget_s * CONFIRM_SHARE)
            _save(ctx, diag_id, d)
            if confirm_on(ctx, d):
                _save(ctx, diag_id, d)
            if d.rounds.stopped != "interrupted":
                explain(ctx, d, ctx.clock.left(), cache,
                        reserve=lambda: CHECK_SLACK_S + check_cost(ctx, d, swept),
                        first=settled_before(store, sweep_id),
                        new_file=lambda o, hs: new_file_cost(ctx, d, swept, o, hs))
                _save(ctx, diag_id, d)
            if d.rounds.stopped != "interrupted":
                check(ctx, d, ctx.clock.left(), out_dir, swept)
        d.status = ("interrupted" if d.rounds.stopped == "interrupted" else
                    "partial" if d.rounds.stopped == "budget" or any(
                        o.unsearched == "budget" or any(t.verdict == "not-reached"
                                                        for t in o.trials)
                        for o in d.outcomes) else "complete")
        if d.status == "partial":
            d.notes.append(f"the budget ({budget_s:.0f} s) ran out before every experiment "
                           "ran: raise --advise-budget for the rest")
        if d.rounds.noisy:
            d.notes.append(noise_note(d.rounds, policy))
        again = _measured_again(d)
        if again:
            d.notes.append(f"{again} setting(s) the last diagnosis in this store (sweep "
                           f"{d.pooled_from}) tried were judged on its rounds and this "
                           "run's together")
    except KeyboardInterrupt:
        d.status = "interrupted"
        raise
    finally:
        d.spent_s = time.monotonic() - t0
        _save(ctx, diag_id, d)
    if d.status == "interrupted":
        raise KeyboardInterrupt
    return d


def _measured_again(d: dg.Diagnosis) -> int:
    """The settings tried that this run and the earlier diagnosis both measured."""
    tried = {dg.hyp_arm(o.gap, t.hypothesis) for o in d.outcomes for t in o.trials
             if not t.hypothesis.untestable}
    return len(tried & set(d.rounds.figures) & set(d.earlier.figures))


def noise_note(rounds: dg.Rounds, policy) -> str:
    """What the noise flag left out of the experiments: a round whose figures
    were all flagged pairs nothing, and the reader is told why."""
    cores = getattr(policy, "max_other_cores", None)
    return (f"{rounds.noisy} of {rounds.points} figures the experiments measured were flagged "
            "noisy" + (f" (other processes used more than {cores:g} cores)"
                       if cores is not None else "")
            + " and left out: measure on an idle machine, or allow the load with "
            "--noise-max-cores")


def human_sizes(sizes: Sequence[int]) -> str:
    return ", ".join(human_bytes(s) for s in sizes)
