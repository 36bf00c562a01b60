"""The few conclusions that matter most: the first screen of the report and
the top of `analyze findings`.  Which implementation to use for small and
for large messages and by how much, which settings win, which collectives
to replace by plain sends and where, and what looks wrong.

Nothing here decides whether a difference is real: each conclusion is one
finding the statistics already separated (findings.py).  This module
chooses among them, says what to do in one sentence, and ranks them by the
share of time a user would save by acting on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..sizes import human_bytes
from .crossover import mpi_name
from .findings import Finding
from .series import Config, Series

SMALL_MAX = 8 << 10  # a range that starts at or below this speaks of small messages
LARGE_MIN = 64 << 10  # one that ends at or above this, of large messages
P2P = ("latency", "roundtrip", "sendloop", "bw", "bibw")
LIMIT = 6  # conclusions on the first screen; the findings section holds the rest
# how many of each kind may lead, so that one kind cannot fill the screen
QUOTA = {"implementation": 3, "setting": 2, "variant": 1, "collective": 2, "anomaly": 2}


@dataclass(frozen=True)
class Conclusion:
    kind: str  # implementation | setting | variant | collective | anomaly
    headline: str  # what to do, in one sentence, with the figure that carries it
    finding: Finding  # the separated difference behind it: its numbers and records

    @property
    def gain(self) -> float:
        return self.finding.gain


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
    lo, hi = span
    if hi <= SMALL_MAX:
        return "small messages"
    if lo >= LARGE_MIN:
        return "large messages"
    return "messages"


def _benches(f: Finding) -> str:
    return ", ".join(f.benches or (f.bench,))


def _where(c: Config) -> str:
    return f"{c.np} processes, {c.cluster}" + (" (oversubscribed)" if c.oversubscribed else "")


def _settings(c: Config) -> set[tuple[str, str]]:
    return set(c.settings)


def kind_of(f: Finding) -> str | None:
    """Which conclusion a finding can lead to; None: information only."""
    if f.kind == "faster" and len(f.parties) == 2:
        w, lo = f.parties
        if w.implementation != lo.implementation:
            return "implementation"
        return "setting" if _settings(w) != _settings(lo) else "variant"
    if f.kind == "collective-slower":
        return "collective"
    if f.kind in ("drop", "guideline"):
        return "anomaly"
    return None


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
        return _choose(*f.parties, f, "use")
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
        return (f"Replace {mpi_name(x.collective)} by {x.reference} {_slower_runs(f)} under "
                f"{x.config.label()}: the collective takes {_as_long(f)} there")
    if f.kind == "drop":
        (c,) = f.parties
        lo_, hi_ = span
        return (f"{f.bench} under {c.label()} loses {100 * (1 - 1 / f.ratio):.0f}% of its "
                f"bandwidth from {human_bytes(lo_)} to {human_bytes(hi_)}: a protocol limit "
                f"sits there (commscope tune --mpi {c.implementation} --bench {f.bench} "
                "searches the eager and rendezvous limits)")
    return f.text[:1].upper() + f.text[1:]


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


def conclusions(found: Sequence[Finding], limit: int = LIMIT) -> list[Conclusion]:
    """The findings worth a user's first look, those that save most first:
    no kind beyond its quota, information-only findings never."""
    by_kind: dict[str, list[Finding]] = {}
    for f in found:
        k = kind_of(f)
        if k is not None and f.gain > 0:
            by_kind.setdefault(k, []).append(f)
    picked: list[Conclusion] = []
    for k, fs in by_kind.items():
        fs = sorted(fs, key=lambda f: -f.gain)
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
        if kind_of(f) == "implementation" and f.span:
            w = f.parties[0]
            told.update((w.np, w.cluster, b) for b in (f.benches or (f.bench,)))
    for (np_, cluster, bench), impls in sorted(seen.items()):
        if len(impls) > 1 and (np_, cluster, bench) not in told:
            what = "small messages (latency)" if bench == "latency" else "large messages (bw)"
            out.append(f"For {what} at {np_} processes, {cluster}: {', '.join(sorted(impls))} "
                       "are not told apart at any size")
    return out


def summarize(series: Mapping[tuple[Config, str], Series], found: Sequence[Finding],
              limit: int = LIMIT) -> Summary:
    return Summary(tuple(conclusions(found, limit)), tuple(even(series, found)))


def text(s: Summary) -> str:
    """The summary as `analyze findings` prints it above the findings."""
    if not s.conclusions and not s.notes:
        return ""
    lines = ["What matters most here:"]
    for i, c in enumerate(s.conclusions, 1):
        lines.append(f"{i:>3}. {c.headline}")
    lines += [f"   - {n}" for n in s.notes]
    return "\n".join(lines) + "\n\n"
