"""What each finding leads to, and the one sentence that says it: which
kind of conclusion a finding can be (kind_of), what to do about it
(headline), and for a finding a setting explains, the mechanism with its fix
as measured (cause_headline, fix_text).  The sizes, ratios, times and places
in these sentences are written here, one way everywhere (ratio_text: 1.3x,
_span: "from 4 KiB to 1 MiB").

Which findings lead, merged how and in which order, is summary.py's."""

from __future__ import annotations

from collections.abc import Sequence

from ..store.core_facts import names
from ..store.sizes import human, human_bytes
from .causes import Cause, Fix, buffers_of
from .crossover import mpi_name
from .findings import Finding, kind_of, settings_of
from .series import Config
from .significance import MIN_FACTOR

SMALL_MAX = 8 << 10  # "small messages": a range within 1 B ... 8 KiB
SMALL_FROM = 64  # that starts at the smallest sizes
LARGE_MIN = 64 << 10  # "large messages": a range from 64 KiB on
RANGE_SPAN = 8  # and covers a factor of 8 or more (4 sizes in powers of two)
P2P = frozenset(names("p2p"))  # the core's point-to-point benchmarks


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


def ratio_text(r: float) -> str:
    """A ratio to two figures (1.3x, 7.1x, 14x): what repeated runs of this
    machine carry, not the four a median would print."""
    return f"{r:.1f}x" if r < 10 else f"{r:.0f}x"


def _as_long(f: Finding) -> str:
    """'7.1x as long (at least 3.0x)': the median, and the least ratio the
    separating intervals' edges give at any size of the range (two
    decimals below 2x: 'at least 1.0x' would read as no difference)."""
    lo = f.ratio_lo
    return (f"{ratio_text(f.ratio)} as long (at least "
            f"{f'{lo:.2f}x' if lo < 2 else ratio_text(lo)})")


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
        wb, lb = buffers_of(w), buffers_of(lo)
        if "hot" not in (wb, lb):
            return (f"{lb.capitalize()} buffers take {_as_long(f)} as {wb} ones under "
                    f"{w.base or w.implementation} "
                    f"{_span(span)} ({_benches(f)}, {_where(w)}): {why}")
        if lb == "hot":  # hot was the slower side
            return (f"{wb.capitalize()} buffers measured faster than {lb} ones under {lo.mpi} "
                    f"{_span(span)} ({_benches(f)}, {_where(w)}): {why}")
        seen = ("an application that streams its data from memory sees the cold figures"
                if lb == "cold" else "an application sees figures like these on its first "
                "call after a compute sweep of about twice the last-level cache a rank "
                "(a lower bound: the barrier before each call warms part of what was "
                "evicted again; not a bw window, whose later messages find the cache warm)")
        return (f"{lb.capitalize()} buffers take {_as_long(f)} as {wb} ones under {w.mpi} "
                f"{_span(span)} ({_benches(f)}, {_where(w)}): {why}; {seen}")
    if k == "variant":
        return _choose(*f.parties, f, "prefer")
    if k == "setting":
        w, lo = f.parties
        gained = " ".join(f"{a}={b}" for a, b in sorted(settings_of(w) - settings_of(lo)))
        dropped = " ".join(f"{a}={b}" for a, b in sorted(settings_of(lo) - settings_of(w)))
        action, it = (f"Set {gained}", "without") if gained else (f"Leave {dropped} unset",
                                                                   "with")
        return (f"{action} for {w.implementation}: {it} it {_benches(f)} takes {_as_long(f)} "
                f"{_span(span)} ({_where(w)})")
    if k == "collective" and f.xrow is not None:
        # screened, not diagnosed: a candidate, never code before the library's
        # settings for the call were searched (the diagnosis does that)
        x = f.xrow
        return (f"{mpi_name(x.collective)} under {x.config.label()} is slower than its "
                f"hand-written equivalent ({x.reference}) {_slower_runs(f)}: it takes "
                f"{_as_long(f)} there; a candidate, not advice: commscope diagnose searches "
                f"its settings first")
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
    if not winners or left < MIN_FACTOR:  # what is left is no difference
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
