"""The few conclusions that matter most: the first screen of the report and
the top of `analyze findings`.  Which implementation to use for small and
for large messages and by how much, which settings win, which collectives
to replace by plain sends and where, and what looks wrong.

Nothing here decides whether a difference is real: each conclusion is one
finding the statistics already separated (findings.py).  This module
chooses among them and ranks them by the share of time a user would save by
acting on it; what each says, in one sentence, is headlines.py's.

Causes come before comparisons: a difference that one setting explains
(causes.py: an eager limit read back from the job) is said as that
setting, once for every benchmark that shows it, with its fix as measured
(advise.py), not as "use another library"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..store.sizes import human_bytes
from .causes import Cause, Fix, buffers_of, cause_key
from .findings import Finding, less_per_call
from .headlines import LARGE_MIN, P2P, SMALL_MAX, cause_headline, headline, kind_of
from .headlines import ratio_text as ratio_text  # advise.selection reads it here
from .series import Config, Series, separated
from .significance import MIN_CHANGE

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

    @property
    def saving(self) -> str:
        """What acting on it saves, said only where commscope measured it:
        the other library, setting, variant or call (both sides measured);
        a cause's setting once its fix was measured faster (what the fix
        saved, not the gap it was meant to close); never how buffers were
        held (no choice) nor an anomaly."""
        if self.kind in ("buffers", "anomaly"):
            return ""
        if self.kind == "cause":
            fx = self.fix
            if fx is None or fx.verdict not in ("verified", "mixed") or fx.ratio <= 1:
                return ""
            less = less_per_call(1 - 1 / fx.ratio)
            lo, hi = fx.sizes or (0, 0)
            where = f" from {human_bytes(lo)} to {human_bytes(hi)}" if fx.sizes else ""
            slower = f" (slower {fx.slower})" if fx.verdict == "mixed" and fx.slower else ""
            return f"the setting took {less}{where}{slower}" if less else ""
        return less_per_call(self.gain)


@dataclass(frozen=True)
class Summary:
    conclusions: tuple[Conclusion, ...]
    notes: tuple[str, ...]  # comparisons made that separated nothing


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
    # compared as the findings compare them: like buffers with like
    group: dict[tuple[int, str, str, str], list[tuple[Config, Series]]] = {}
    for (cfg, bench), s in series.items():
        if bench in ("latency", "bw") and not cfg.oversubscribed and s:
            group.setdefault((cfg.np, cfg.cluster, bench, buffers_of(cfg)), []).append((cfg, s))
    told: set[tuple[int, str, str, str]] = set()
    for f in found:
        # any difference between implementations, whatever its cause
        if (f.kind == "faster" and f.span and len(f.parties) == 2
                and f.parties[0].implementation != f.parties[1].implementation):
            w = f.parties[0]
            told.update((w.np, w.cluster, b, buffers_of(w)) for b in (f.benches or (f.bench,)))
    for (np_, cluster, bench, held), these in sorted(group.items()):
        impls = {c.implementation for c, _ in these}
        if len(impls) > 1 and (np_, cluster, bench, held) not in told:
            what = "small messages (latency)" if bench == "latency" else "large messages (bw)"
            if held != "hot":
                what += f" with {held} buffers"
            lone, adjacent = _isolated(these)
            where = (", ".join(human_bytes(x) for x in lone[:4])
                     + (" and more" if len(lone) > 4 else ""))
            said = ("at any size (their intervals overlap)" if not lone else
                    "over any two neighbouring sizes (their intervals separate only at "
                    f"isolated sizes, {where}: no claim)" if not adjacent else
                    f"by a finding (their intervals separate at {where}, by less than the "
                    f"{MIN_CHANGE:.0%} a finding needs, or not across the runs: no claim)")
            out.append(f"For {what} at {np_} processes, {cluster}: {', '.join(sorted(impls))} "
                       f"are not told apart {said}")
    return out


def _isolated(group: Sequence[tuple[Config, Series]]) -> tuple[list[int], bool]:
    """The sizes at which two implementations' intervals do separate, in a
    comparison no finding holds; and whether two of them are neighbours (then
    it was too small a difference, or not held across the runs, that kept
    the finding out, not a size alone)."""
    out: set[int] = set()
    adjacent = False
    for i, (a, sa) in enumerate(group):
        for b, sb in group[i + 1:]:
            if a.implementation != b.implementation:
                both = sorted(set(sa) & set(sb))
                sep = [separated(sa[x], sb[x]) != 0 for x in both]
                adjacent = adjacent or any(p and q for p, q in zip(sep, sep[1:], strict=False))
                out.update(x for x, s in zip(both, sep, strict=True) if s)
    return sorted(out), adjacent


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
