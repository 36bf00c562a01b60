"""The diagnosis: what the experiments after a sweep established.

A sweep screens: its findings (findings.py) are candidate gaps, drawn from
one pass of a few runs each, and a claim chosen because it stood out in
one pass is larger there than in the next.  So nothing the first screen
states rests on the screening pass alone.  Each candidate gap is measured
again, its two sides interleaved in rounds (advise/experiment.py), and:

1. **confirmed** where the paired ratio of the two sides, round by round,
   has its 95% interval above 1 and its median 5% or more, at two
   neighbouring sizes (or at the one size a sizeless benchmark has); the
   range, the ratio and "at least" come from these rounds, not from the
   screening pass.  A gap that does not confirm is no conclusion;
2. **explained** only by an experiment: each mechanism that could cause it
   is a hypothesis with the setting that would close it, run beside the
   two sides in the same rounds.  A hypothesis whose setting closed half
   the gap or more (in ratio, at the confirmed sizes) is the cause, with
   how much it closed where; one that helped less is a setting that helps,
   not the cause; one that changed nothing is retracted, and said so;
3. the settings handed over are **checked as a whole**: every setting of
   one implementation together, against its defaults, on every benchmark
   the sweep measured that a setting changes, at every size it measured.

This module holds the data (gaps, hypotheses, rounds) and the judgement,
on fixed figures; advise/diagnose.py runs the experiments."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from ..store.sizes import human_bytes
from .repeats import JUMP, between
from .series import lone_is_no_claim, runs
from .significance import MIN_FACTOR, bh_keep, ratio_p

CLOSES = 0.5  # a hypothesis whose setting closes this share of the gap (in log ratio) is its cause
MIN_ROUNDS = 3  # paired rounds before a size can be decided at all

# (bench, size) -> (median time in us, the core-to-core floor in ns or None,
# the messages in flight for bw and bibw or None)
Figures = dict[tuple[str, int], tuple[float, float | None, int | None]]


@dataclass
class Rounds:
    """What experiments measured: per arm (configuration), per round, its
    figures; the arms that broke, with why; the runs stored."""

    figures: dict[str, dict[int, Figures]] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)
    run_ids: list[int] = field(default_factory=list)
    stopped: str = ""  # why it ended early: budget | decided | interrupted | ""
    seconds: float = 0.0
    points: int = 0  # figures the jobs measured
    noisy: int = 0  # of them, flagged noisy (others used cores) and left out

    def merge(self, other: Rounds) -> None:
        for arm, by_round in other.figures.items():
            self.figures.setdefault(arm, {}).update(by_round)
        self.broken.update(other.broken)
        self.run_ids += other.run_ids
        self.seconds += other.seconds
        self.points += other.points
        self.noisy += other.noisy

    @property
    def last_round(self) -> int:
        return max((r for by in self.figures.values() for r in by), default=0)

    def with_earlier(self, earlier: Rounds) -> Rounds:
        """These rounds and an earlier diagnosis's, for each arm measured in
        both and not broken before (its rounds numbered below zero, so that
        none is paired with one of these): the figures a trial is judged on
        where the same setting was measured before."""
        out = Rounds({a: dict(by) for a, by in self.figures.items()}, dict(self.broken))
        shift = -1 - max((abs(r) for by in earlier.figures.values() for r in by), default=0)
        for arm, by in earlier.figures.items():
            if arm in out.figures and arm not in earlier.broken:  # a broken arm's part rounds
                out.figures[arm].update({r + shift: f for r, f in by.items()})
        return out

    def to_json(self) -> dict[str, object]:
        return {"figures": {a: {str(r): [[b, s, m, f, w] for (b, s), (m, f, w) in figs.items()]
                                for r, figs in by.items()} for a, by in self.figures.items()},
                "broken": self.broken, "run_ids": self.run_ids, "stopped": self.stopped,
                "seconds": self.seconds, "points": self.points, "noisy": self.noisy}

    @staticmethod
    def from_json(d: Mapping[str, object]) -> Rounds:
        figs = {a: {int(r): {(str(b), int(s)): (float(m), None if f is None else float(f),
                                                None if w is None else int(w))
                             for b, s, m, f, w in rows} for r, rows in by.items()}
                for a, by in (d.get("figures") or {}).items()}  # type: ignore[union-attr]
        return Rounds(figs, dict(d.get("broken") or {}),  # type: ignore[arg-type]
                      [int(x) for x in d.get("run_ids") or ()],  # type: ignore[union-attr]
                      str(d.get("stopped") or ""), float(d.get("seconds") or 0.0),  # type: ignore[arg-type]
                      int(d.get("points") or 0), int(d.get("noisy") or 0))  # type: ignore[call-overload]


# -- a gap and what it compares --------------------------------------------------------
# (arm, bench, size, weight): one timed figure of a side, weighted
Term = tuple[str, str, int, float]


@dataclass(frozen=True)
class GapPoint:
    """One size of a gap: the slow side and the fast side, each a sum of
    weighted figures (a collective alone; a composition of two; a time per
    byte where bandwidth drops between two sizes)."""

    size: int
    slow: tuple[Term, ...]
    fast: tuple[Term, ...]
    screened: bool = True  # False: a neighbour measured to find where the gap ends


@dataclass(frozen=True)
class Gap:
    """A candidate from the screening sweep: `slow` took longer than `fast`.

    kind: implementation (one call, two libraries or settings) | reference
    (a collective against its hand-written equivalent, measured as such) |
    guideline (a collective against a composition of others) | drop
    (bandwidth lost between two sizes).  `call`: the benchmark whose time
    is the slow side; `slow_arm`: the configuration a hypothesis's setting
    is given to."""

    id: str
    kind: str
    call: str
    slow_arm: str
    fast_arm: str
    points: tuple[GapPoint, ...]
    text: str  # what was screened, in words
    screen_ratio: float  # the screening pass's median ratio (what picked it, never said)
    family: str = ""  # the slow side's implementation family
    np: int = 2

    @property
    def sizes(self) -> list[int]:
        return [p.size for p in self.points if p.screened]

    def arms(self) -> set[str]:
        return {t[0] for p in self.points for t in (*p.slow, *p.fast)}


@dataclass(frozen=True)
class Hypothesis:
    """A mechanism that could make the slow side slow, and the setting that
    would take it away.  `settings` empty: a mechanism no setting moves
    (said as such, never as the cause).  `changes`: the benchmarks the
    setting changes besides the call (every collective, for a switch of the
    library's collective path), for the check of the file as a whole."""

    id: str
    mechanism: str  # in words, with the library's source where it matters
    settings: tuple[tuple[str, str], ...] = ()
    changes: tuple[str, ...] = ()
    untestable: str = ""  # why it cannot be tried here
    # slow: the setting is given to the slow side, to make it faster; fast:
    # to the faster side, to take away what makes it faster (never handed over)
    side: str = "slow"
    # the sizes the mechanism can act at (an eager limit: only those sent by
    # rendezvous under it); None: every size.  A size outside is never its win.
    applies: tuple[int, int] | None = None
    # settings the trial's arm runs with besides, never handed over (MPICH:
    # a forced algorithm that cannot apply fails, rather than silently running
    # the default: MPIR_CVAR_COLLECTIVE_FALLBACK=error)
    probe: tuple[tuple[str, str], ...] = ()
    # a threshold the setting raises (an eager limit): a larger value of it
    # serves every gap a smaller one served, since every size sent eagerly
    # under the smaller goes eagerly under the larger
    raises: str = ""

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.settings)


def arm_with(arm: str, settings: Sequence[tuple[str, str]]) -> str:
    """The name of a configuration's arm with settings added."""
    return arm + "|" + " ".join(f"{k}={v}" for k, v in sorted(settings)) if settings else arm


def with_slow(p: GapPoint, arm: str, to: str) -> GapPoint:
    """The point with the slow side's figures taken from another arm."""
    return replace(p, slow=tuple((to if a == arm else a, b, s, w) for a, b, s, w in p.slow))


def with_fast(p: GapPoint, arm: str, to: str) -> GapPoint:
    """The point with the fast side's figures taken from another arm."""
    return replace(p, fast=tuple((to if a == arm else a, b, s, w) for a, b, s, w in p.fast))


def hyp_arm(gap: Gap, h: Hypothesis) -> str:
    """The arm a hypothesis's setting runs as: the side it is given to, with it."""
    return arm_with(gap.fast_arm if h.side == "fast" else gap.slow_arm, h.settings + h.probe)


# -- paired statistics ------------------------------------------------------------------
@dataclass(frozen=True)
class Ratio:
    """One side over the other at one size, round by round: the median of
    the rounds' ratios and their 95% interval (Student's t on logs)."""

    size: int
    median: float
    lo: float
    hi: float
    n: int  # rounds paired
    dropped: int = 0  # rounds left out: their figures were taken in two machine modes
    p: float = 1.0  # two-sided, that the rounds' ratios centre on 1 (significance.ratio_p)

    @property
    def above(self) -> bool:
        return self.n >= MIN_ROUNDS and self.lo > 1.0 and self.median >= MIN_FACTOR

    @property
    def below(self) -> bool:
        return self.n >= MIN_ROUNDS and self.hi < 1.0 and self.median <= 1.0 / MIN_FACTOR

    @property
    def under_factor(self) -> bool:
        """Surely less than the 5% a claim needs, either way."""
        return self.n >= MIN_ROUNDS and self.hi < MIN_FACTOR and self.lo > 1.0 / MIN_FACTOR

    @property
    def detectable(self) -> float:
        """The smallest ratio these rounds would have told from 1: their
        interval's half-width, in ratio."""
        if self.n < 2 or self.lo <= 0:
            return math.inf
        return max(MIN_FACTOR, math.sqrt(self.hi / self.lo))


def _side(figs: Mapping[str, Mapping[int, Figures]], r: int, terms: Sequence[Term]
          ) -> tuple[float, list[float | None], dict[tuple[str, int], int]] | None:
    total, floors, windows = 0.0, [], {}
    for arm, bench, size, w in terms:
        got = figs.get(arm, {}).get(r, {}).get((bench, size))
        if got is None:
            return None
        total += w * got[0]
        floors.append(got[1])
        if got[2]:
            windows[(bench, size)] = got[2]
    return total, floors, windows


def one_mode(floors: Iterable[float | None]) -> bool:
    """Figures of one round taken in one state of the machine: no two
    floors a jump apart (repeats.JUMP).  A round that straddles a jump
    measures the host, not the arms; within a round, drift (seconds
    apart) is what the pairing takes out."""
    xs = [f for f in floors if f]
    return not xs or max(xs) <= JUMP * min(xs)


def ratio(rounds: Rounds, size: int, num: Sequence[Term], den: Sequence[Term]) -> Ratio | None:
    """num / den at one size over the rounds both were measured in."""
    figs = rounds.figures
    rs = sorted({r for arm, *_ in (*num, *den) for r in figs.get(arm, {})})
    vals, dropped = [], 0
    for r in rs:
        a, b = _side(figs, r, num), _side(figs, r, den)
        if a is None or b is None or a[0] <= 0 or b[0] <= 0:
            continue
        if any(b[2].get(k, w) != w for k, w in a[2].items()):
            continue  # bw at two windows: two measurements, not one twice
        if not one_mode(a[1] + b[1]):
            dropped += 1
            continue
        vals.append(a[0] / b[0])
    if not vals:
        return None
    bt = between(vals)
    return Ratio(size, bt.median, bt.lo, bt.hi, bt.n, dropped, ratio_p(vals))


# -- judgement --------------------------------------------------------------------------
def held(marks: Sequence[tuple[int, str]], lone_ok: bool) -> list[list[int]]:
    """The runs of sizes marked 'Y' that neighbours confirm (a size alone
    among three or more is what chance gives; a gap of one or two sizes is
    judged as it is)."""
    ms = list(marks) if lone_ok else lone_is_no_claim(list(marks))
    return [sizes for m, sizes in runs(ms) if m == "Y"]


def runs_text(runs: Sequence[Sequence[int]], ratios: Sequence[Ratio] = ()) -> str:
    """Each run of sizes on its own ("from 4 B to 4 KiB and from 32 KiB to 4
    MiB"), with its median ratio where given: a range never names a size
    between two runs."""
    by = {r.size: r for r in ratios}

    def one(run: Sequence[int]) -> str:
        rs = sorted(by[s].median for s in run if s in by)
        fig = f" ({_x(rs[len(rs) // 2])})" if rs else ""
        return (span_text(run) if any(run) else "") + fig

    return " and ".join(one(r) for r in runs)


def _x(r: float) -> str:
    return f"{r:.1f}x" if r < 10 else f"{r:.0f}x"


@dataclass(frozen=True)
class Confirmation:
    """A gap measured again: each size's paired ratio (slow / fast), and the
    runs of sizes where it held."""

    ratios: tuple[Ratio, ...]
    held: tuple[tuple[int, ...], ...]  # runs of sizes confirmed
    decided: bool  # every screened size is confirmed, or surely not a gap of 5%

    @property
    def confirmed(self) -> bool:
        return bool(self.held)

    @property
    def settled(self) -> bool:
        """Enough rounds for the gap as a whole: confirmed somewhere, or no
        screened size left that could still be a gap of 5%."""
        return self.confirmed or self.decided

    @property
    def sizes(self) -> list[int]:
        return [s for run in self.held for s in run]

    def at(self, size: int) -> Ratio | None:
        return next((r for r in self.ratios if r.size == size), None)

    @property
    def median(self) -> float:
        """The gap's ratio: the median over the confirmed sizes."""
        rs = sorted(r.median for r in self.ratios if r.size in set(self.sizes))
        return statistics.median(rs) if rs else 1.0

    @property
    def least(self) -> float:
        """What the intervals give at least, at every confirmed size."""
        return min((r.lo for r in self.ratios if r.size in set(self.sizes)), default=1.0)

    @property
    def typical_least(self) -> float:
        """What the intervals give at least at half the confirmed sizes: the
        median of their lower ends.  Across 15 sizes the lowest end (least)
        is the one noisiest size's: on two default runs it read 1.13 and
        1.02 for one gap whose median read 1.65 and 1.68 (docs/diagnosis.md)."""
        los = sorted(r.lo for r in self.ratios if r.size in set(self.sizes))
        return statistics.median_high(los) if los else 1.0  # half the sizes hold it, or more

    @property
    def most(self) -> float:
        return max((r.median for r in self.ratios if r.size in set(self.sizes)), default=1.0)


def _gap_ratios(gap: Gap, rounds: Rounds) -> list[Ratio]:
    return [x for p in gap.points if (x := ratio(rounds, p.size, p.slow, p.fast)) is not None]


def confirm(gap: Gap, rounds: Rounds, keep: set[object] | None = None,
            rs: Sequence[Ratio] | None = None) -> Confirmation:
    """The gap's sizes measured again in rounds: where it holds.  `keep`:
    the (gap, size) tests that survive Benjamini-Hochberg over the family
    they were made in (confirm_all); None, this gap's sizes alone."""
    rs = list(rs) if rs is not None else _gap_ratios(gap, rounds)
    if keep is None:
        keep = {(gap.id, s) for _, s in bh_keep({(gap.id, x.size): x.p for x in rs})}
    marks = [(x.size, "Y" if x.above and (gap.id, x.size) in keep else "=") for x in rs]
    runs_ = held(marks, lone_ok=len(gap.points) <= 2)
    screened = set(gap.sizes)
    decided = all(x.above or x.under_factor or x.below for x in rs if x.size in screened) and \
        screened <= {x.size for x in rs}
    return Confirmation(tuple(rs), tuple(tuple(r) for r in runs_), decided)


@dataclass(frozen=True)
class Trial:
    """A hypothesis's setting measured beside the gap's two sides.

    verdict: closes (the cause: it closed CLOSES of the gap or more at the
    confirmed sizes it made faster) | helps (faster, but closing less: not
    the cause) | nothing (no size faster beyond the between-round
    interval: retracted) | slower | broken | untestable | not-reached."""

    hypothesis: Hypothesis
    verdict: str
    speedup: tuple[Ratio, ...] = ()  # the slow side by default over with the setting
    after: tuple[Ratio, ...] = ()  # the gap with the setting (slow with it / fast)
    sizes: tuple[int, ...] = ()  # where it made the slow side faster (neighbours agreeing)
    closed: float = 0.0  # share of the gap closed there (log ratio), median over those sizes
    reason: str = ""
    # the share closed from the ends of the setting's own interval (median
    # over the sizes): what the rounds allow, not one figure
    closed_lo: float = 0.0
    closed_hi: float = 0.0

    @property
    def gain(self) -> float:
        """The share of time a call saves with the setting, where it was faster."""
        xs = [r.median for r in self.speedup if r.size in set(self.sizes)]
        return 1.0 - 1.0 / statistics.median(xs) if xs else 0.0

    def speed(self) -> tuple[float, float, float]:
        """(median, least, most) speed-up over the sizes it was faster at."""
        xs = [r for r in self.speedup if r.size in set(self.sizes)]
        if not xs:
            return 1.0, 1.0, 1.0
        return (statistics.median(r.median for r in xs), min(r.lo for r in xs),
                max(r.median for r in xs))


def still_open(speedup: Sequence[Ratio], conf: Confirmation, hyp: Hypothesis) -> list[Ratio]:
    """The setting's effects that do not yet rule out closing half the gap:
    at a confirmed size where its mechanism can act, over MIN_ROUNDS rounds
    at least (fewer is a setting dropped by racing, said as such), its
    interval's upper end reaching half the gap there (in log ratio)."""
    lo, hi = hyp.applies or (0, 1 << 62)
    sizes = set(conf.sizes)
    return [x for x in speedup if x.size in sizes and lo <= x.size <= hi
            and x.n >= MIN_ROUNDS and (g := conf.at(x.size)) is not None and g.median > 1
            and x.hi >= g.median ** CLOSES]


def judge(gap: Gap, conf: Confirmation, hyp: Hypothesis, rounds: Rounds) -> Trial:
    """Did the setting close the gap, where the gap was confirmed?"""
    if hyp.untestable:
        return Trial(hyp, "untestable", reason=hyp.untestable)
    arm = hyp_arm(gap, hyp)
    if arm in rounds.broken:
        return Trial(hyp, "broken", reason=rounds.broken[arm])
    if arm not in rounds.figures:
        return Trial(hyp, "not-reached", reason="the budget ran out before it was measured")
    sp, af = [], []
    for p in gap.points:
        if hyp.side == "fast":  # how much slower the fast side is without its mechanism
            q = with_fast(p, gap.fast_arm, arm)
            x, y = ratio(rounds, p.size, q.fast, p.fast), ratio(rounds, p.size, p.slow, q.fast)
        else:  # how much faster the slow side is with the setting
            q = with_slow(p, gap.slow_arm, arm)
            x, y = ratio(rounds, p.size, p.slow, q.slow), ratio(rounds, p.size, q.slow, p.fast)
        if x is not None:
            sp.append(x)
        if y is not None:
            af.append(y)
    lone = len(gap.points) <= 2
    lo, hi = hyp.applies or (0, 1 << 62)
    faster = [s for run in held([(x.size, "Y" if x.above else "=") for x in sp], lone)
              for s in run if lo <= s <= hi]
    slower = [s for run in held([(x.size, "Y" if x.below else "=") for x in sp], lone)
              for s in run]
    inside = [s for s in faster if s in set(conf.sizes)]
    where = inside or faster
    if not faster:
        if slower:
            return Trial(hyp, "slower", tuple(sp), tuple(af))
        # "nothing" is a retraction ("not the eager limit"): only where the rounds rule
        # out closing half the gap.  One run's eager limit read 1.32x [0.97, 2.03] on a
        # 1.7x bibw gap after 6 noisy rounds, the other's closed it: not decided, said so
        open_ = still_open(sp, conf, hyp)
        reach = [s for s in conf.sizes if lo <= s <= hi]
        if reach and not any(x.size in set(reach) for x in sp):
            # no round of it paired where the gap holds (each taken across a jump
            # of the host between its modes): no evidence either way, never a
            # retraction (a flipping host once retracted the eager limit so)
            return Trial(hyp, "undecided", tuple(sp), tuple(af),
                         reason="no round of it was paired where the gap holds: each was "
                                "taken across a jump of the host between its modes")
        return Trial(hyp, "undecided" if open_ else "nothing", tuple(sp), tuple(af))
    shares: list[tuple[float, float, float]] = []
    for s in where:
        g, e = conf.at(s), next(x for x in sp if x.size == s)
        if g is not None and g.median > 1:
            lg = math.log(g.median)
            shares.append((math.log(e.median) / lg, math.log(e.lo) / lg, math.log(e.hi) / lg))

    def mid(k: int) -> float:
        return statistics.median(x[k] for x in shares) if shares else 0.0

    closed, c_lo, c_hi = mid(0), mid(1), mid(2)
    # the cause: half the gap or more closed, inside the gap, by the setting's own
    # interval too (its lower end closes half).  With a quarter at its lower end, one
    # run's recursive_doubling closed 52% of MPICH's small allreduce gap ("the cause")
    # and the next 37% ("narrows"): a verdict whose interval straddles half is "helps"
    # on every run, said with the range it closed
    verdict = "closes" if inside and closed >= CLOSES and c_lo >= CLOSES else "helps"
    return Trial(hyp, verdict, tuple(sp), tuple(af), tuple(where), closed, "", c_lo, c_hi)


def confirm_all(gaps: Sequence[Gap], rounds: Rounds) -> dict[str, Confirmation]:
    """Every gap, each size's test counted in one family (every size of
    every gap measured again): Benjamini-Hochberg over all of them."""
    rs = {g.id: _gap_ratios(g, rounds) for g in gaps}
    keep = bh_keep({(gid, x.size): x.p for gid, xs in rs.items() for x in xs})
    return {g.id: confirm(g, rounds, keep, rs[g.id]) for g in gaps}


# -- the whole file, checked --------------------------------------------------------------
CHECK_LO = 3  # rounds paired at a size, at least, for the check of a file to judge it
UNJUDGED_MAX = 0.1  # of a check's sizes, at most, left unjudged (fewer rounds paired)


@dataclass(frozen=True)
class FileCheck:
    """The settings of one implementation together against its defaults,
    on every benchmark they change that the sweep measured, at each size
    it measured: slower anywhere (neighbours agreeing) fails the file."""

    impl: str
    arm: str
    settings: tuple[tuple[str, str], ...]
    benches: tuple[str, ...]
    effects: tuple[tuple[str, Ratio], ...] = ()  # (bench, default / with the file)
    rounds: int = 0
    slower: tuple[tuple[str, int, int], ...] = ()  # (bench, first, last size)
    reason: str = ""  # where it could not run
    file: str = ""  # where it was written (only where it passed)
    # settings taken out after the check: (setting, what it slowed), where
    # the file with them slowed a benchmark only they change
    left_out: tuple[tuple[str, str], ...] = ()
    # sizes of the sweep no round paired at all (each taken across a jump of the
    # host, or not measured by both): not judged either way
    unpaired: tuple[tuple[str, int], ...] = ()

    @property
    def passed(self) -> bool:
        return not self.reason and bool(self.effects) and not self.slower

    @property
    def sizes(self) -> int:
        return len(self.effects) + len(self.unpaired)

    @property
    def unjudged(self) -> tuple[tuple[str, int], ...]:
        """The sizes fewer than CHECK_LO rounds paired (each taken across a
        jump of the host between its modes), none included: not judged
        either way."""
        return tuple((b, x.size) for b, x in self.effects if x.n < CHECK_LO) + self.unpaired

    @property
    def unjudged_words(self) -> str:
        """The sizes not judged, said once for the file and its conclusion."""
        few = len(self.unjudged)
        return (f"{few} size(s) not judged (fewer than {CHECK_LO} rounds paired: the host "
                "jumped between its modes)" if few else "")

    def instead(self, settings: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        """The file's own values of variables `settings` sets otherwise: two
        settings named one variable and the other kept it (diagnose's merge)."""
        keys = {k for k, _ in settings}
        return tuple((k, v) for k, v in self.settings if k in keys and (k, v) not in settings)

    def faster_at(self, bench: str, sizes: Sequence[int]) -> tuple[Ratio, ...] | None:
        """The file's speed-ups on `bench` at `sizes`, where its check found
        it surely faster at every one of them (None: not measured at one of
        them, or not surely faster there)."""
        xs = {x.size: x for b, x in self.effects if b == bench}
        got = tuple(xs[s] for s in sizes if s in xs)
        return got if sizes and len(got) == len(sizes) and all(x.above for x in got) else None

    @property
    def detectable(self) -> float:
        """The smallest slowdown the check would have seen: the median over
        its sizes of what their intervals tell from 1."""
        xs = sorted(r.detectable for _, r in self.effects if math.isfinite(r.detectable))
        return xs[len(xs) // 2] if xs else math.inf


def check_file(fc: FileCheck, rounds: Rounds, default_arm: str) -> FileCheck:
    """Slower somewhere: below 1 at two neighbouring sizes (or the one a
    sizeless benchmark has), each surviving Benjamini-Hochberg over every
    size of every benchmark checked (with 20-odd sizes of several
    benchmarks, chance alone gives a few at 95%).  Its rounds: the fewest
    paired at a size that had CHECK_LO or more.  A size with fewer (each
    round there taken across a jump of the host between its modes) is not
    judged and said so; more than UNJUDGED_MAX of the sizes so, and the
    file is not checked: a host flipping within rounds left one size of
    some 150 with a single paired round in every check of a pair of runs,
    and no file was handed over, though every other size held 4 to 8."""
    effects: list[tuple[str, Ratio]] = []
    slower: list[tuple[str, int, int]] = []
    by: dict[str, list[Ratio]] = {}
    unpaired: list[tuple[str, int]] = []
    for bench in fc.benches:
        sizes = sorted({s for figs in rounds.figures.get(default_arm, {}).values()
                        for (b, s) in figs if b == bench})
        got = {s: ratio(rounds, s, [(default_arm, bench, s, 1.0)], [(fc.arm, bench, s, 1.0)])
               for s in sizes}
        by[bench] = [x for x in got.values() if x is not None]
        unpaired += [(bench, s) for s, x in got.items() if x is None]
    keep = bh_keep({(b, x.size): x.p for b, xs in by.items() for x in xs})
    for bench, rs in by.items():
        effects += [(bench, x) for x in rs]
        marks = [(x.size, "Y" if x.below and (bench, x.size) in keep else "=") for x in rs]
        slower += [(bench, run[0], run[-1]) for run in held(marks, len(rs) <= 2)]
    judged = [x.n for _, x in effects if x.n >= CHECK_LO]
    n = min(judged) if judged else max((x.n for _, x in effects), default=0)
    few, every = len(effects) - len(judged) + len(unpaired), len(effects) + len(unpaired)
    reason = fc.reason or ("" if effects else "no size was measured in both")
    if not reason and judged and few > UNJUDGED_MAX * every:
        reason = (f"fewer than {CHECK_LO} rounds were paired at {few} of {every} sizes "
                  "(the host jumped between its modes)")
    return replace(fc, effects=tuple(effects), slower=tuple(slower), rounds=n, reason=reason,
                   unpaired=tuple(unpaired))


# -- serialisation ------------------------------------------------------------------------
def _ratio_list(xs: Iterable[Mapping[str, object]]) -> tuple[Ratio, ...]:
    return tuple(Ratio(**x) for x in xs)  # type: ignore[arg-type]


def gap_from_json(d: Mapping[str, object]) -> Gap:
    pts = tuple(GapPoint(int(p["size"]), tuple(tuple(t) for t in p["slow"]),  # type: ignore[index,misc]
                         tuple(tuple(t) for t in p["fast"]), bool(p.get("screened", True)))  # type: ignore[index,misc,union-attr]
                for p in d["points"])  # type: ignore[union-attr]
    return Gap(**{**d, "points": pts})  # type: ignore[arg-type]


def hyp_from_json(d: Mapping[str, object]) -> Hypothesis:
    ap = d.get("applies")
    return Hypothesis(str(d["id"]), str(d["mechanism"]),
                      tuple(tuple(kv) for kv in d.get("settings") or ()),  # type: ignore[misc,union-attr]
                      tuple(d.get("changes") or ()), str(d.get("untestable") or ""),  # type: ignore[arg-type]
                      str(d.get("side") or "slow"),
                      (int(ap[0]), int(ap[1])) if ap else None,  # type: ignore[index]
                      tuple(tuple(kv) for kv in d.get("probe") or ()),  # type: ignore[misc,union-attr]
                      str(d.get("raises") or ""))


def trial_from_json(d: Mapping[str, object]) -> Trial:
    return Trial(hyp_from_json(d["hypothesis"]), str(d["verdict"]),  # type: ignore[arg-type]
                 _ratio_list(d.get("speedup") or ()), _ratio_list(d.get("after") or ()),  # type: ignore[arg-type]
                 tuple(d.get("sizes") or ()), float(d.get("closed") or 0.0),  # type: ignore[arg-type]
                 str(d.get("reason") or ""), float(d.get("closed_lo") or 0.0),  # type: ignore[arg-type]
                 float(d.get("closed_hi") or 0.0))  # type: ignore[arg-type]


def conf_from_json(d: Mapping[str, object]) -> Confirmation:
    return Confirmation(_ratio_list(d["ratios"]), tuple(tuple(x) for x in d["held"]),  # type: ignore[arg-type,union-attr]
                        bool(d["decided"]))


def check_from_json(d: Mapping[str, object]) -> FileCheck:
    return FileCheck(str(d["impl"]), str(d["arm"]),
                     tuple(tuple(kv) for kv in d["settings"]),  # type: ignore[misc,union-attr]
                     tuple(d["benches"]),  # type: ignore[arg-type]
                     tuple((str(b), Ratio(**x)) for b, x in d.get("effects") or ()),  # type: ignore[arg-type,union-attr]
                     int(d.get("rounds") or 0),  # type: ignore[arg-type]
                     tuple(tuple(x) for x in d.get("slower") or ()),  # type: ignore[misc,union-attr]
                     str(d.get("reason") or ""), str(d.get("file") or ""),
                     tuple(tuple(x) for x in d.get("left_out") or ()),  # type: ignore[misc,union-attr]
                     tuple((str(b), int(z)) for b, z in d.get("unpaired") or ()))  # type: ignore[misc,union-attr]


def without_culprits(fc: FileCheck, changes: Mapping[tuple[str, str], Sequence[str]]
                     ) -> FileCheck:
    """A file that slowed some benchmark, less the settings that change it,
    where no setting left changes what they change: the rest was measured
    in the same rounds on benchmarks nothing taken out touches, so the check
    still holds for it.  `changes`: each setting and the benchmarks it
    changes.  Unchanged where the culprits cannot be told apart."""
    if not fc.slower:
        return fc
    slowed = {b for b, _, _ in fc.slower}
    out = [kv for kv in fc.settings if set(changes.get(kv, ())) & slowed]
    keep = [kv for kv in fc.settings if kv not in out]
    theirs = {b for kv in out for b in changes.get(kv, ())}
    if not out or not keep or any(set(changes.get(kv, ())) & theirs for kv in keep):
        return fc
    benches = tuple(b for b in fc.benches if b not in theirs)
    said = tuple((f"{k}={v}", ", ".join(
        f"{b} {human_bytes(a)}" + (f"-{human_bytes(z)}" if z != a else "")
        for b, a, z in fc.slower if b in changes.get((k, v), ()))) for k, v in out)
    return replace(fc, settings=tuple(keep), benches=benches,
                   effects=tuple(e for e in fc.effects if e[0] in benches), slower=(),
                   left_out=said, unpaired=tuple(u for u in fc.unpaired if u[0] in benches))


def dumps(obj: object) -> str:
    return json.dumps(obj, default=lambda o: asdict(o) if hasattr(o, "__dataclass_fields__")
                      else o.to_json() if hasattr(o, "to_json") else str(o))


def span_text(sizes: Sequence[int]) -> str:
    if not sizes:
        return ""
    lo, hi = min(sizes), max(sizes)
    return f"at {human_bytes(lo)}" if lo == hi else f"from {human_bytes(lo)} to {human_bytes(hi)}"


# -- what a gap came to --------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """One gap as the diagnosis left it: its confirmation (None: the budget
    did not reach it), and each hypothesis tried on it."""

    gap: Gap
    conf: Confirmation | None = None
    trials: tuple[Trial, ...] = ()
    # why no hypothesis was tried: "" (they were), budget, none (its library
    # offers no setting for it that commscope knows)
    unsearched: str = ""

    @property
    def searched(self) -> bool:
        """Whether the library's settings were measured on it (at least one
        ran: code is advised only after that)."""
        return any(t.verdict not in ("not-reached", "untestable") for t in self.trials)

    @property
    def confirmed(self) -> bool:
        return self.conf is not None and self.conf.confirmed

    def cause(self) -> Trial | None:
        """The setting of the slower side that closed the gap (the most, where
        several did; the fewest settings among those that closed it alike)."""
        return max((t for t in self.trials if t.verdict == "closes" and t.hypothesis.side ==
                    "slow"), key=lambda t: (t.closed, -len(t.hypothesis.settings)),
                   default=None)

    def lead(self) -> Trial | None:
        """A mechanism of the faster side that its absence showed to carry
        part of the gap (what makes it faster, not what makes the other slow)."""
        return max((t for t in self.trials if t.hypothesis.side == "fast"
                    and t.verdict in ("closes", "helps")), key=lambda t: t.closed, default=None)

    def best_setting(self) -> Trial | None:
        """The setting to hand over: the one that closed the gap, else the one
        that helps most, where it changes only this call (a switch of a
        whole path, UCX's transports say, is handed over only where it is
        the gap's cause: for a gain short of that it changes too much);
        never a setting that slows the faster side: that one shows a cause,
        it fixes nothing."""
        mine = [t for t in self.trials if t.hypothesis.side == "slow"]
        local = [t for t in mine if t.verdict == "helps"
                 and set(t.hypothesis.changes) <= {self.gap.call}]
        return max((t for t in mine if t.verdict == "closes"), key=lambda t: (t.closed, t.gain),
                   default=None) or max(local, key=lambda t: t.gain, default=None)


@dataclass
class Diagnosis:
    """Everything the diagnosis of one sweep measured and concluded."""

    sweep_id: int | None
    budget_s: float
    labels: dict[str, str] = field(default_factory=dict)  # arm -> a name people read
    impls: dict[str, str] = field(default_factory=dict)  # arm -> its implementation
    outcomes: list[Outcome] = field(default_factory=list)
    checks: list[FileCheck] = field(default_factory=list)
    rounds: Rounds = field(default_factory=Rounds)
    spent_s: float = 0.0
    status: str = "running"  # running | complete | partial | interrupted
    notes: list[str] = field(default_factory=list)  # what it did not reach, and why
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (gap id, why)
    # the last diagnosis in the store, on the same machine: its rounds, which
    # the trials of a setting measured again are judged on beside this run's
    # (kept in memory only: they are stored with that diagnosis), and its sweep
    earlier: Rounds = field(default_factory=Rounds)
    pooled_from: int | None = None

    def trial_rounds(self) -> Rounds:
        """What a setting's trial is judged on: this run's rounds and, for
        the arms this run measured too, the earlier diagnosis's."""
        return self.rounds.with_earlier(self.earlier) if self.earlier.figures else self.rounds

    def to_json(self) -> str:
        d = {"sweep_id": self.sweep_id, "budget_s": self.budget_s, "labels": self.labels,
             "impls": self.impls, "spent_s": self.spent_s, "status": self.status,
             "notes": self.notes, "skipped": self.skipped,
             "outcomes": [asdict(o) for o in self.outcomes],
             "checks": [asdict(c) for c in self.checks],
             "rounds": self.rounds.to_json(), "pooled_from": self.pooled_from}
        return json.dumps(d)

    @staticmethod
    def from_json(text: str) -> Diagnosis:
        d = json.loads(text)
        outs = [Outcome(gap_from_json(o["gap"]),
                        conf_from_json(o["conf"]) if o.get("conf") else None,
                        tuple(trial_from_json(t) for t in o.get("trials") or ()),
                        str(o.get("unsearched") or ""))
                for o in d.get("outcomes") or ()]
        return Diagnosis(d.get("sweep_id"), float(d.get("budget_s") or 0.0),
                         dict(d.get("labels") or {}), dict(d.get("impls") or {}), outs,
                         [check_from_json(c) for c in d.get("checks") or ()],
                         Rounds.from_json(d.get("rounds") or {}),
                         float(d.get("spent_s") or 0.0), str(d.get("status") or ""),
                         list(d.get("notes") or ()),
                         [tuple(x) for x in d.get("skipped") or ()],  # type: ignore[misc]
                         pooled_from=d.get("pooled_from"))

    def check_for(self, arm: str) -> FileCheck | None:
        return next((c for c in self.checks if c.arm.split("|", 1)[0] == arm), None)


def latest(store, sweep_ids: Iterable[int]) -> Diagnosis | None:
    """The newest stored diagnosis of the newest of these sweeps that has
    one (one written by another version of commscope: as if none)."""
    for row in reversed(store.diagnoses(sweep_ids)):
        try:
            return Diagnosis.from_json(row["data"])
        except (ValueError, KeyError, TypeError):
            continue
    return None
