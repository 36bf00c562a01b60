"""The few conclusions that matter most: the first screen of the report and
the top of `analyze findings`.  Which implementation to use for small and
for large messages and by how much, which settings win, which collectives
to replace by plain sends and where, and what looks wrong.

Nothing here decides whether a difference is real: each conclusion is one
finding the statistics already separated (findings.py).  This module
chooses among them, says what to do in one sentence, and ranks them by the
share of time a user would save by acting on it.

Causes come before comparisons: a difference that one setting explains
(causes.py: an eager limit read back from the job) is said as that
setting, once for every benchmark that shows it, with its fix as measured
(advise.py), not as "use another library"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..store.sizes import human, human_bytes
from .causes import COLD, Cause, Fix, cause_key, cold_pair
from .crossover import mpi_name
from .findings import Finding
from .series import Config, Series

SMALL_MAX = 8 << 10  # "small messages": a range within 1 B ... 8 KiB
SMALL_FROM = 64  # that starts at the smallest sizes
LARGE_MIN = 64 << 10  # "large messages": a range from 64 KiB on
RANGE_SPAN = 8  # and covers a factor of 8 or more (4 sizes in powers of two)
P2P = ("latency", "roundtrip", "sendloop", "bw", "bibw")
LIMIT = 6  # conclusions on the first screen; the findings section holds the rest
# how many of each kind may lead, so that one kind cannot fill the screen
QUOTA = {"cause": 3, "implementation": 3, "setting": 2, "variant": 1, "buffers": 2, "collective": 2,
         "anomaly": 2}


@dataclass(frozen=True)
class Conclusion:
    kind: str  # cause | implementation | setting | variant | buffers | collective | anomaly
    headline: str  # what to do, in one sentence, with the figure that carries it
    finding: Finding  # the separated difference behind it: its numbers and records
    also: tuple[Finding, ...] = ()  # the others with the same cause
    cause: Cause | None = None
    fix: Fix | None = None  # the cause's setting as measured against the default

    @property
    def gain(self) -> float:
        return max([self.finding.gain, *(f.gain for f in self.also)])


@dataclass(frozen=True)
class Summary:
    conclusions: tuple[Conclusion, ...]
    notes: tuple[str, ...]  # comparisons made that separated nothing


def _span(span: tuple[int, int] | None) -> str:
    if span is None:
        return ""
    lo, hi = span
    return f"at {human_bytes(lo)}" if lo == hi else f"from {human_bytes(lo)} to {human_bytes(hi)}"


def _scale(span: tuple[int, int]) -> str:
    """A range word only where the range covers what the word means to a
    reader: "small messages" from the smallest sizes up to a few KiB,
    "large messages" from 64 KiB over a factor of 8 or more; any other
    range (two sizes, say) is named by its sizes."""
    lo, hi = span
    if lo <= SMALL_FROM and hi <= SMALL_MAX and hi >= RANGE_SPAN * max(lo, 1):
        return "small messages"
    if lo >= LARGE_MIN and hi >= RANGE_SPAN * lo:
        return "large messages"
    return "messages"


def _benches(f: Finding) -> str:
    return ", ".join(f.benches or (f.bench,))


def _where(c: Config) -> str:
    return f"{c.np} processes, {c.cluster}" + (" (oversubscribed)" if c.oversubscribed else "")


def _settings(c: Config) -> set[tuple[str, str]]:
    return set(c.settings)


def kind_of(f: Finding) -> str | None:
    """Which conclusion a finding can lead to; None: information only (a
    drop at a cache boundary or at the sweep's first size carries no
    claim)."""
    if f.cause is not None and f.cause.key:
        return "cause"
    if f.cause is not None and not f.cause.claims:
        return None
    if f.kind == "faster" and len(f.parties) == 2 and cold_pair(*f.parties):
        return "buffers"  # how the data was held, whichever side won: never a choice
    if f.kind == "faster" and len(f.parties) == 2:
        w, lo = f.parties
        if all(b.endswith("_sends") for b in (f.benches or (f.bench,))):
            return None  # commscope's own reference patterns: no call a user makes
        if w.implementation != lo.implementation:
            return "implementation"
        return "setting" if _settings(w) != _settings(lo) else "variant"
    if f.kind == "collective-slower":
        return "collective"
    if f.kind in ("drop", "guideline"):
        return "anomaly"
    return None


def _us(t: float) -> str:
    """A time saved, to two figures: 0.10 us, 1.3 us, 99 us, 120 us (never
    '1e+02 us', as a general format would write 99.7)."""
    return f"{t:.2f} us" if t < 1 else f"{t:.1f} us" if t < 10 else f"{t:.0f} us"


def ratio_text(r: float) -> str:
    """A ratio to two figures (1.3x, 7.1x, 14x): what repeated runs of this
    machine carry, not the four a median would print."""
    return f"{r:.1f}x" if r < 10 else f"{r:.0f}x"


def _as_long(f: Finding) -> str:
    """'7.1x as long (at least 3.0x)': the median, and the ratio the
    separating intervals' edges still give."""
    return f"{ratio_text(f.ratio)} as long (at least {ratio_text(f.ratio_lo)})"


def _choose(w: Config, lo: Config, f: Finding, verb: str) -> str:
    """'For small messages use A: B takes ...', or, where the range spans
    small and large, 'Use A, not B, from X to Y: B takes ...'."""
    span = f.span or (0, 0)
    scale = _scale(span)
    where = f"({_benches(f)}, {_where(w)})"
    if scale == "messages":
        return (f"{verb.capitalize()} {w.mpi}, not {lo.mpi}, {_span(span)}: {lo.mpi} takes "
                f"{_as_long(f)} {where}")
    return (f"For {scale} {verb} {w.mpi}: {lo.mpi} takes {_as_long(f)} {_span(span)} "
            f"{where}")


def _slower_runs(f: Finding) -> str:
    """Where a collective was surely slower than its sends: each run of
    such sizes, not one range over sizes the statistics left undecided."""
    runs = [(lo, hi) for m, lo, hi in f.xrow.verdict.runs() if m == "H"]  # type: ignore[union-attr]
    return ", ".join(_span(r) for r in runs)


def headline(f: Finding) -> str:
    """What to do about a finding, in one sentence."""
    k = kind_of(f)
    span = f.span or (0, 0)
    if k == "implementation":
        why = (f"; {f.cause.text}" if f.cause is not None
               and f.cause.kind in ("unexplained", "break") else "")
        if not any(b in P2P for b in (f.benches or (f.bench,))):
            # one collective slower in one library: a fact to weigh, not a
            # reason to change libraries (its algorithm is the cause to look
            # at first, where the library lets it be chosen)
            w, lo = f.parties
            return (f"Under {lo.mpi}, {_benches(f)} takes {_as_long(f)} as under {w.mpi} "
                    f"{_span(span)} ({_where(w)}){why}")
        return _choose(*f.parties, f, "use") + why
    if k == "buffers":
        # hot against cold is how the data was held, not a choice to make
        w, lo = f.parties
        why = f.cause.text if f.cause is not None else "no recorded mechanism explains it"
        if COLD in w.mpi.split():
            return (f"Cold buffers measured faster than hot ones under {lo.mpi} {_span(span)} "
                    f"({_benches(f)}, {_where(w)}): {why}")
        return (f"Cold buffers take {_as_long(f)} as hot ones under {w.mpi} {_span(span)} "
                f"({_benches(f)}, {_where(w)}): {why}; an application that streams "
                "its data from memory sees the cold figures")
    if k == "variant":
        return _choose(*f.parties, f, "prefer")
    if k == "setting":
        w, lo = f.parties
        gained = " ".join(f"{a}={b}" for a, b in sorted(_settings(w) - _settings(lo)))
        dropped = " ".join(f"{a}={b}" for a, b in sorted(_settings(lo) - _settings(w)))
        action, it = (f"Set {gained}", "without") if gained else (f"Leave {dropped} unset",
                                                                   "with")
        return (f"{action} for {w.implementation}: {it} it {_benches(f)} takes {_as_long(f)} "
                f"{_span(span)} ({_where(w)})")
    if k == "collective" and f.xrow is not None:
        x = f.xrow
        sizes = [sz for m, lo_, hi_ in x.verdict.runs() if m == "H"
                 for sz in x.coll if lo_ <= sz <= hi_ and sz in x.ref]
        saved = sorted(x.coll[sz].median - x.ref[sz].median for sz in sizes)
        lo_us, hi_us = (_us(saved[0]), _us(saved[-1])) if saved else ("", "")
        us = ("" if not saved else f", {lo_us} per call" if lo_us == hi_us else
              f", {lo_us.removesuffix(' us')}-{hi_us} per call")
        return (f"Replace {mpi_name(x.collective)} by hand-written sends ({x.reference}) "
                f"{_slower_runs(f)} under "
                f"{x.config.label()}: the collective takes {_as_long(f)} there{us}; "
                f"measured at {x.config.np} processes only (the library's algorithm and the "
                f"sends scale differently with the process count): measure it at yours "
                f"(commscope run --np N --bench {x.collective},{x.reference})")
    if f.kind == "drop":
        (c,) = f.parties
        lo_, hi_ = span
        if f.cause is not None and f.cause.kind == "break":
            return (f"{f.bench} under {c.label()} loses {100 * (1 - 1 / f.ratio):.0f}% of its "
                    f"bandwidth from {human_bytes(lo_)} to {human_bytes(hi_)}: {f.cause.text} "
                    f"(commscope tune --mpi {c.implementation} --bench {f.bench} searches the "
                    "protocol settings it knows)")
        # a drop no recorded limit explains: the place to search, not a cause
        return (f"{f.bench} under {c.label()} loses {100 * (1 - 1 / f.ratio):.0f}% of its "
                f"bandwidth from {human_bytes(lo_)} to {human_bytes(hi_)}: no recorded eager "
                f"limit or cache boundary sits there (commscope tune --mpi {c.implementation} "
                f"--bench {f.bench} searches the protocol limits)")
    return f.text[:1].upper() + f.text[1:]


def _ratios(fs: Sequence[Finding]) -> str:
    lo, hi = ratio_text(min(f.ratio for f in fs)), ratio_text(max(f.ratio for f in fs))
    return lo if lo == hi else f"{lo}-{hi}"


def _rel(path: str) -> str:
    """A settings file's path as a user in this folder would type it."""
    import os

    rel = os.path.relpath(path) if path else path
    return rel if path and not rel.startswith("..") else path


def _handed(fix: Fix) -> str:
    return f"settings file {_rel(fix.file)}" if fix.file else fix.reason or "no settings file"


def _per_size(fix: Fix) -> str:
    """Where a fix won, size by size (each with its interval above 1), or
    as a range of ratios over many sizes."""
    lo, hi = fix.sizes or (0, 0)
    es = [(s, r, a, b) for s, r, a, b in fix.effects if lo <= s <= hi]
    if not es:
        return (f"{ratio_text(fix.ratio)} faster {_span(fix.sizes)} (95% interval "
                f"{fix.lo:.2f}-{fix.hi:.2f}x)" if fix.sizes else "")
    if len(es) <= 4:
        each = [f"{ratio_text(r)} at {human_bytes(s)} ({a:.2f}-{b:.2f}x)" for s, r, a, b in es]
        return each[0].replace(" at ", " faster at ", 1) + "".join(f", {x}" for x in each[1:])
    rs = sorted(r for _, r, _, _ in es)
    return (f"{ratio_text(rs[0])}-{ratio_text(rs[-1])} faster {_span((es[0][0], es[-1][0]))} "
            f"(every 95% interval above 1)")


def _still(gap: float, fix: Fix, winners: Sequence[str]) -> str:
    """What a fix leaves of the gap to another library."""
    left = gap / fix.ratio if fix.ratio > 0 else gap
    if not winners or left < 1.05:
        return ""
    verb = "stays" if len(winners) == 1 else "stay"
    return f"; {' and '.join(winners)} {verb} about {ratio_text(left)} faster there"


# the benchmarks a limit's setting is measured with, cheapest first
CHEAPEST = ("bw", "latency", "roundtrip", "bibw", "sendloop")


def measure_bench(fs: Sequence[Finding]) -> str:
    """The cheapest benchmark a cause showed in: the one its fix is measured with."""
    named = [b for f in fs for b in (f.benches or (f.bench,))]
    return next((b for b in CHEAPEST if b in named), named[0] if named else "bw")


def fix_text(c: Cause, fix: Fix | None, winners: Sequence[str] = (), gap: float = 1.0,
             bench: str = "bw") -> str:
    """What measuring the cause's setting showed, or how to measure it (with
    `bench`); `gap`: how much longer it took than under `winners`."""
    impl = c.config.implementation if c.config else ""
    lo, hi = c.sizes or (0, 0)
    if fix is None or fix.verdict == "skipped":
        why = f" ({fix.reason})" if fix is not None and fix.reason else ""
        if c.kind == "algorithm":
            return (f"Not measured{why}: commscope tune --mpi {impl} --bench {c.coll} --sizes "
                    f"{human(lo)}:{human(hi)} measures its {c.coll} algorithms")
        cand = " ".join(f"{k}={v}" for k, v in c.candidates[0]) if c.candidates else ""
        own = " ".join(f"{k}={v}" for k, v in (c.config.settings if c.config else ()))
        base = (f", against the library's defaults, not this configuration's {own}"
                if own else "")
        return (f"Not measured{why}: commscope tune --mpi {impl} --bench {bench} --sizes "
                f"{human(max(1, lo // 2))}:{human(2 * hi)} measures {cand}{base}")
    figure = f"{ratio_text(fix.ratio)} (95% interval {fix.lo:.1f}-{fix.hi:.1f}x)"
    mode = (f", the host's core-to-core time ~{fix.mode_ns:.0f} ns as in the sweep"
            if fix.mode_ns else "")
    rounds = f"{fix.rounds} interleaved rounds against the default{mode}"
    scope = (f" from {human_bytes(fix.checked[0])} to {human_bytes(fix.checked[1])} "
             "(checked every 8x)" if fix.checked else
             f"; measured from {human_bytes(fix.effects[0][0])} to "
             f"{human_bytes(fix.effects[-1][0])} only" if fix.effects else "")
    if fix.verdict == "verified":
        return (f"Measured: with {fix.label}, {fix.bench} is {_per_size(fix)} "
                f"({rounds}), no measured size slower{scope}: {_handed(fix)}"
                + _still(gap, fix, winners))
    if fix.verdict == "mixed":
        return (f"Measured: with {fix.label}, {fix.bench} is {_per_size(fix)} "
                f"({rounds}), but slower at {fix.slower}: weigh it before setting it "
                f"({_handed(fix)})" + _still(gap, fix, winners))
    if fix.verdict == "broken":
        return f"Measured: {impl} did not run with {fix.label} ({fix.reason}): nothing to set"
    if c.kind == "algorithm":
        where = f" {_span((lo, hi))}" if c.sizes else ""
        return (f"Measured: none of the {fix.tried} {c.coll} settings {impl} offers was "
                f"faster over neighbouring sizes beyond the between-round uncertainty "
                f"({fix.rounds} rounds): for {c.coll}{where} "
                f"{', '.join(winners) or 'the other library'} is the faster library here")
    return (f"Measured: {fix.label} made no size faster beyond the between-round uncertainty "
            f"({fix.bench}, {figure}): nothing to set")


def _merged_cause(fs: Sequence[Finding]) -> Cause:
    """One cause for the findings it explains: the sizes of all, every
    candidate any of them asks for."""
    from dataclasses import replace

    first = fs[0].cause
    assert first is not None
    spans = [f.cause.sizes for f in fs if f.cause and f.cause.sizes]
    cands = sorted({c for f in fs if f.cause for c in f.cause.candidates},
                   key=lambda c: [int(v) if v.isdigit() else 0 for _, v in c])
    return replace(first, sizes=(min(a for a, _ in spans), max(b for _, b in spans))
                   if spans else None, candidates=tuple(cands))


def algorithm_headline(c: Cause, fs: Sequence[Finding], fix: Fix | None) -> str:
    """One collective slower than in another library, where no protocol
    limit explains it: the algorithm the library chose, and what measuring
    its others showed."""
    cfg = c.config
    assert cfg is not None
    winners = sorted({f.parties[0].mpi for f in fs if f.kind == "faster" and f.parties})
    # each range the statistics separated, with its own ratio: the sizes
    # between two ranges were not told apart and are not claimed
    ranges = sorted((f for f in fs if f.span), key=lambda f: f.span)  # type: ignore[arg-type,return-value]
    whose = " and ".join(w + "'s" for w in winners)
    said = "".join(f"{' and ' if i else ''}{ratio_text(f.ratio)}"
                   f"{f' as long as {whose}' if not i else ''} {_span(f.span)}"
                   for i, f in enumerate(ranges))
    gap = sorted(f.ratio for f in fs)[len(fs) // 2]
    return (f"{cfg.mpi}'s {mpi_name(c.coll)} takes {said} ({_where(cfg)}): {c.text}. "
            f"{fix_text(c, fix, winners, gap)}")


def cause_headline(c: Cause, fs: Sequence[Finding], fix: Fix | None) -> str:
    """A setting's conclusion: the mechanism, every benchmark it shows in,
    with their figures, and the fix as measured."""
    if c.kind == "algorithm":
        return algorithm_headline(c, fs, fix)
    cfg, lim = c.config, c.limit
    assert cfg is not None and lim is not None
    faster = [f for f in fs if f.kind == "faster"]
    drops = [f for f in fs if f.kind == "drop"]
    parts = []
    if faster:
        benches = list(dict.fromkeys(b for f in faster for b in (f.benches or (f.bench,))))
        winners = sorted({f.parties[0].mpi for f in faster})
        lo, hi = min(f.span[0] for f in faster), max(f.span[1] for f in faster)  # type: ignore[index]
        parts.append(f"{', '.join(benches)} take{'s' if len(benches) == 1 else ''} "
                     f"{_ratios(faster)} as long as under {', '.join(winners)} {_span((lo, hi))}")
    parts += [f"{f.bench} loses {100 * (1 - 1 / f.ratio):.0f}% of its bandwidth "
              f"{_span(f.span)}" for f in drops if f.span]
    first = min((f.cause.boundary for f in fs if f.cause and f.cause.boundary), default=0)
    return (f"{cfg.mpi} sends messages of {human_bytes(first)} and more {lim.after} "
            f"({lim.variable} = {lim.bytes} B, {lim.what}): {'; '.join(parts)} "
            f"({_where(cfg)}). {fix_text(c, fix, bench=measure_bench(fs))}")


def _causes(fs: Sequence[Finding], fixes: Mapping[str, Fix]) -> list[Conclusion]:
    """One conclusion per cause, however many findings it explains."""
    groups: dict[str, list[Finding]] = {}
    for f in fs:
        if f.cause is not None:
            groups.setdefault(cause_key(f.cause), []).append(f)
    out = []
    for key, same in groups.items():
        same = sorted(same, key=lambda f: -f.gain)
        c = _merged_cause(same)
        fix = fixes.get(key)
        out.append(Conclusion("cause", cause_headline(c, same, fix), same[0], tuple(same[1:]),
                              c, fix))
    return out


def causes_to_fix(found: Sequence[Finding]) -> list[tuple[str, Cause, list[Finding]]]:
    """The causes that are settings, each merged over the findings it
    explains: what the advise step measures (key, cause, findings)."""
    groups: dict[str, list[Finding]] = {}
    for f in found:
        if kind_of(f) == "cause" and f.cause is not None:
            groups.setdefault(cause_key(f.cause), []).append(f)
    return [(k, _merged_cause(fs), fs) for k, fs in groups.items()]


def _rest(c: Config) -> str:
    """What a configuration's label adds to its implementation's name."""
    impl = c.implementation
    return c.mpi[len(impl):] if c.mpi.startswith(impl) else c.mpi


def _implementation_picks(cands: Sequence[Finding]) -> list[Finding]:
    """The best point-to-point finding that covers small messages, the
    best that covers large ones, and the best of any other benchmark."""
    p2p = [f for f in cands if f.bench in P2P and f.span]
    small = [f for f in p2p if f.span[0] <= SMALL_MAX]  # type: ignore[index]
    large = [f for f in p2p if f.span[1] >= LARGE_MIN]  # type: ignore[index]
    other = [f for f in cands if f.bench not in P2P]
    out: list[Finding] = []
    for group in (small, large, other):
        # implementations compared like for like first (both built and set
        # the same way): a tuned one against another's defaults is the
        # setting's conclusion, a clang build against a gcc one the build's
        best = min(group, key=lambda f: (_rest(f.parties[0]) != _rest(f.parties[1]),
                                         any(c.settings for c in f.parties), -f.gain),
                   default=None)
        if best is not None and best not in out:
            out.append(best)
    return out


def _anomalies(fs: Sequence[Finding]) -> list[Conclusion]:
    """One conclusion per anomaly however many configurations show it (the
    same drop under three settings of one implementation is one thing to
    look at), naming the others."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in fs:
        groups.setdefault((f.kind, f.bench, f.span), []).append(f)
    out = []
    for same in groups.values():
        first, rest = same[0], same[1:]
        also = "; the same under " + ", ".join(
            f.parties[0].mpi for f in rest if f.parties) if rest else ""
        out.append(Conclusion("anomaly", headline(first) + also, first))
    return out


def conclusions(found: Sequence[Finding], limit: int = LIMIT,
                fixes: Mapping[str, Fix] | None = None) -> list[Conclusion]:
    """The findings worth a user's first look, those that save most first:
    no kind beyond its quota, information-only findings never; findings
    with one cause make one conclusion."""
    by_kind: dict[str, list[Finding]] = {}
    for f in found:
        k = kind_of(f)
        if k is not None and f.gain > 0:
            by_kind.setdefault(k, []).append(f)
    picked: list[Conclusion] = []
    for k, fs in by_kind.items():
        fs = sorted(fs, key=lambda f: -f.gain)
        if k == "cause":
            picked += sorted(_causes(fs, fixes or {}), key=lambda c: -c.gain)[:QUOTA[k]]
            continue
        if k == "implementation":
            fs = _implementation_picks(fs)
        if k == "anomaly":
            picked += _anomalies(fs)[:QUOTA[k]]
            continue
        picked += [Conclusion(k, headline(f), f) for f in fs[:QUOTA[k]]]
    picked.sort(key=lambda c: -c.gain)
    return picked[:limit]


def even(series: Mapping[tuple[Config, str], Series], found: Sequence[Finding]) -> list[str]:
    """Where implementations were compared on latency (small messages) or
    bandwidth (large) and no finding separates them: said, since "which
    implementation?" answered "either" is an answer too."""
    out = []
    seen: dict[tuple[int, str, str], set[str]] = {}
    for (cfg, bench), s in series.items():
        if bench in ("latency", "bw") and not cfg.oversubscribed and s:
            seen.setdefault((cfg.np, cfg.cluster, bench), set()).add(cfg.implementation)
    told: set[tuple[int, str, str]] = set()
    for f in found:
        # any difference between implementations, whatever its cause
        if f.kind == "faster" and f.span and len(f.parties) == 2:
            w = f.parties[0]
            told.update((w.np, w.cluster, b) for b in (f.benches or (f.bench,)))
    for (np_, cluster, bench), impls in sorted(seen.items()):
        if len(impls) > 1 and (np_, cluster, bench) not in told:
            what = "small messages (latency)" if bench == "latency" else "large messages (bw)"
            out.append(f"For {what} at {np_} processes, {cluster}: {', '.join(sorted(impls))} "
                       "are not told apart at any size (their intervals overlap)")
    return out


def summarize(series: Mapping[tuple[Config, str], Series], found: Sequence[Finding],
              limit: int = LIMIT, fixes: Mapping[str, Fix] | None = None) -> Summary:
    return Summary(tuple(conclusions(found, limit, fixes)), tuple(even(series, found)))


def text(s: Summary) -> str:
    """The summary as `analyze findings` prints it above the findings."""
    if not s.conclusions and not s.notes:
        return ""
    lines = ["What matters most here:"]
    for i, c in enumerate(s.conclusions, 1):
        lines.append(f"{i:>3}. {c.headline}")
    lines += [f"   - {n}" for n in s.notes]
    return "\n".join(lines) + "\n\n"
