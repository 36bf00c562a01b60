"""The first screen, from what the diagnosis established (diagnosis.py):
each conclusion one confirmed gap, said with the figures of its own
rounds, its cause only where an experiment closed the gap, and what was
tried where none did.

Ranked by what acting on it gains, measured: a setting verified with the
whole settings file first, then the choice of another implementation,
then a hand-written equivalent the library's own algorithms did not
match, then what has no fix.  Within a rank, the larger measured saving
first; the order does not depend on the screening pass."""

from __future__ import annotations

import math
import statistics
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..store.sizes import human_bytes
from .diagnosis import (
    CLOSES,
    MIN_ROUNDS,
    Diagnosis,
    FileCheck,
    Outcome,
    Trial,
    runs_text,
    span_text,
    still_open,
)
from .significance import MIN_FACTOR

LIMIT = 6  # conclusions on the first screen
TIERS = {"setting": 0, "found": 1, "implementation": 2, "code": 3, "anomaly": 4, "drop": 5}
MPI_NAME = {"bcast": "MPI_Bcast", "reduce": "MPI_Reduce", "allreduce": "MPI_Allreduce",
            "gather": "MPI_Gather", "scatter": "MPI_Scatter", "alltoall": "MPI_Alltoall",
            "allgather": "MPI_Allgather", "reduce_scatter": "MPI_Reduce_scatter_block",
            "barrier": "MPI_Barrier"}


@dataclass(frozen=True)
class Conclusion:
    kind: str  # setting | implementation | code | anomaly
    headline: str  # one sentence: what to do, with the figure that carries it
    details: tuple[str, ...]  # what established it, and what was tried
    gain: float  # the share of a call's time acting on it saves, as measured
    # (call, slow implementation, fast side, cause): for run-to-run; a setting's
    # fast side is '' (the setting is the conclusion, whichever gap it closed)
    identity: tuple[str, ...]
    outcome: Outcome
    members: tuple[Conclusion, ...] = ()  # a line that groups several gaps: each one's

    def identities(self) -> set[tuple[str, ...]]:
        """What this line concludes, gap by gap: (call, slow, fast, cause)."""
        return {m.identity for m in self.members} if self.members else {self.identity}

    def named(self) -> set[tuple[str, ...]]:
        """What the line itself says, as a reader sees it: each call it names
        (a library line names its first SHOWN_CALLS) with the implementations
        and what it says of them: the setting or cause a setting line names,
        "use" for a library choice (its causes are in the details), "code"
        for a hand-written equivalent, "rule" for a rule that does not hold."""
        said = {"implementation": "use", "code": "code", "anomaly": "rule", "drop": "drop"}
        if self.kind in ("setting", "found"):
            return {(*m.identity[:3], self.identity[3]) for m in (self.members or (self,))}
        shown = self.members[:SHOWN_CALLS] if self.members else (self,)
        return {(*m.identity[:3], said[self.kind]) for m in shown}

    @property
    def saving(self) -> str:
        return f"~{100 * self.gain:.0f}% less per call" if self.gain >= 0.02 else ""


def _r(x: float) -> str:
    """A ratio to two figures (1.3x, 7.1x, 14x): what repeated runs carry."""
    return f"{x:.1f}x" if x < 10 else f"{x:.0f}x"


def _least(x: float) -> str:
    """The least a ratio's interval gives: two decimals below 2 ('at least
    1.0x' would read as no difference), three just above 1."""
    return f"{x:.3f}x" if x < 1.01 else f"{x:.2f}x" if x < 2 else _r(x)


def _call(call: str) -> str:
    return MPI_NAME.get(call, call)


def _at(t: Trial, o: Outcome) -> list:
    """The trial's speed-ups at the gap's confirmed sizes (all, where none)."""
    sizes = set(o.conf.sizes) if o.conf is not None else set()
    return [r for r in t.speedup if r.size in sizes] or list(t.speedup)


def _mid(xs: list) -> float:
    return sorted(r.median for r in xs)[len(xs) // 2]


def phrase(t: Trial, o: Outcome) -> str:
    """What one setting did to the gap, in a few words (one given to the
    faster library said as what it took away)."""
    sp = _at(t, o)
    n = max((r.n for r in sp), default=0)
    fast = t.hypothesis.side == "fast"
    if t.verdict == "nothing" and sp and n < MIN_ROUNDS:
        return (f"dropped after {n} round(s): no size {MIN_FACTOR - 1:.0%} "
                f"{'slower' if fast else 'faster'} ({_r(_mid(sp))})")
    if t.verdict == "nothing":
        return (f"changed nothing ({_r(_mid(sp))}, within the between-round interval)" if sp
                else "changed nothing measurable")
    if t.verdict == "undecided" and not (o.conf is not None and (
            still_open(t.speedup, o.conf, t.hypothesis) or sp)):
        # no round of it paired where the gap holds (diagnosis.judge)
        return f"not decided ({t.reason})" if t.reason else "not decided"
    if t.verdict == "undecided" and o.conf is not None:
        # the size that holds it open, with its own interval
        x = max(still_open(t.speedup, o.conf, t.hypothesis) or sp, key=lambda r: r.hi)
        return (f"not decided in {x.n} round(s) ({_r(x.median)} at {human_bytes(x.size)}; its "
                f"interval there, {x.lo:.2f}-{x.hi:.2f}x, holds both no change and half the "
                "gap closed)")
    if t.verdict == "slower":
        return f"was {'faster' if fast else 'slower'}" + (f" ({_r(_mid(sp))})" if sp else "")
    if fast and t.verdict in ("helps", "closes"):
        med, _, _ = t.speed()
        return (f"took {_r(med)} as long{_sp(span_text(t.sizes))}, {_share(t.closed)}")
    if t.verdict == "helps":
        rng = (f", {max(t.closed_lo, 0.0):.0%}-{min(t.closed_hi, 1.0):.0%} by its interval"
               if t.closed_hi > t.closed_lo else "")
        return (f"helped ({t.gain:.0%} less per call {span_text(t.sizes)}) but closed "
                f"{_share(t.closed)}{rng}, not surely half")
    if t.verdict == "closes":
        return f"closed {_share(t.closed)} {span_text(t.sizes)}"
    if t.verdict == "broken":
        if "failed" in t.reason and any(k == "MPIR_CVAR_COLLECTIVE_FALLBACK"
                                        for k, _ in t.hypothesis.probe):
            return "cannot apply here (MPICH refused it with its fallback off)"
        return f"did not run ({t.reason[:100]})"
    if t.verdict == "untestable":
        return t.reason
    return "not reached within the budget"


def _name(t: Trial) -> str:
    """An algorithm by its name; any other setting by its assignments."""
    h = t.hypothesis
    if h.id.startswith("alg:") and h.id.count(":") >= 2:
        return h.id.split(":", 2)[2]
    return h.label or h.mechanism


def _tried(o: Outcome, but: Trial | None = None) -> str:
    """What was tried besides `but`: the library's algorithms for the call
    together ("forcing it changed nothing": it may be what runs already),
    each other setting with its mechanism, retracted ("not X") only where it
    changed nothing and is no part of what closed the gap."""
    algs = [t for t in o.trials if t.hypothesis.id.startswith("alg:") and t is not but]
    rest = [t for t in o.trials if not t.hypothesis.id.startswith("alg:") and t is not but]
    late = [t for t in algs + rest if t.verdict == "not-reached"]
    cause = set(but.hypothesis.settings) if but is not None else set()
    parts = []
    for t in rest:
        if t.verdict == "not-reached":
            continue
        h = t.hypothesis
        if h.settings and set(h.settings) <= cause:
            parts.append(f"{h.label} alone {phrase(t, o)}")
        elif t.verdict == "nothing" and h.settings and h.side == "slow":
            parts.append(f"not {h.mechanism}: {h.label} {phrase(t, o)}")
        elif h.settings:
            parts.append(f"{h.label} {phrase(t, o)}")
        else:
            parts.append(f"{h.mechanism}: {phrase(t, o)}")
    shown = [t for t in algs if t.verdict != "not-reached"]
    if shown:
        var = next((k for k, _ in shown[0].hypothesis.settings if "ALGORITHM" in k.upper()),
                   "its algorithm")
        def one(t: Trial) -> str:
            alone = " alone" if set(t.hypothesis.settings) < cause else ""
            return f"{_name(t)}{alone} {phrase(t, o)}"

        parts.append(f"{len(shown)} algorithm(s) forced ({var}): "
                     + ", ".join(one(t) for t in shown))
    if late:
        parts.append(f"{len(late)} more setting(s) not reached within the budget")
    return "; ".join(parts)


def file_closes(fc: FileCheck, t: Trial, call: str) -> list[float] | None:
    """The share of the gap the whole file closed at each size this setting
    was faster at (from the file's check: its speed-up there, in log ratio,
    over the gap the setting's own rounds measured, slow / fast), where the
    check found the file surely faster at every one; None otherwise."""
    got = fc.faster_at(call, t.sizes)
    if got is None:
        return None
    sp, after = {r.size: r for r in t.speedup}, {r.size: r for r in t.after}
    out = []
    for x in got:
        gap = sp[x.size].median * after[x.size].median if x.size in sp and x.size in after else 0
        out.append(math.log(x.median) / math.log(gap) if gap > 1 else 1.0)
    return out


def _served(fc: FileCheck, t: Trial, call: str) -> tuple[str, str]:
    """How much faster the whole file ran `call` where the trial's setting
    was faster, and the share of the gap it closed at its least-closed size
    (its check's figures: in_file has already held them to the verdict)."""
    got = fc.faster_at(call, t.sizes) or ()
    shares = file_closes(fc, t, call) or [0.0]
    return _r(statistics.median(x.median for x in got)), _share(min(shares))


def in_file(fc: FileCheck | None, t: Trial, call: str) -> bool:
    """Whether the file handed over carries what this setting gained: it
    holds the setting; or, where it holds another value of its variable
    (two gaps' settings named one variable: the one that saved more kept
    it), its check found the call surely faster with it at every size the
    setting was, closing the gap there as the setting's own verdict asks
    (CLOSES of it for a cause; surely faster for a setting that helps): a
    file holding the eager limit one gap's trial raised to 16 KiB is not
    taken for the 32 KiB another gap's trial needed, nor 5% faster for a
    tenfold gap's fix."""
    if fc is None or not fc.passed:
        return False
    mine = t.hypothesis.settings
    if all(kv in fc.settings for kv in mine):
        return True
    other = dict(fc.instead(mine))
    if not other or not all(kv in fc.settings or kv[0] in other for kv in mine):
        return False
    shares = file_closes(fc, t, call)
    return shares is not None and (t.verdict != "closes" or min(shares) >= CLOSES)


def _instead_why(t: Trial | None, instead: Sequence[tuple[str, str]], more: bool = True) -> str:
    """Why the file holds another value of a trial's variable: a larger value
    of the threshold the trial raised, or another gap's, which saved more."""
    h = t.hypothesis if t is not None else None
    mine = dict(h.settings).get(h.raises, "") if h is not None and h.raises else ""
    theirs = dict(instead).get(h.raises, "") if h is not None and h.raises else ""
    if mine.isdigit() and theirs.isdigit() and int(theirs) > int(mine):
        return "a larger value of the same threshold"
    return "another gap's setting of it" + (", which saved more" if more else "")


def file_text(fc: FileCheck | None, t: Trial | None = None, call: str = "") -> str:
    """What the check of the settings file as a whole said (of the trial's
    settings, where they were taken out of it, or another value of their
    variable went in: then of `call` at the sizes the setting was faster)."""
    settings = t.hypothesis.settings if t is not None else ()
    sizes = t.sizes if t is not None else ()
    if fc is None:
        return "not checked with the other settings of its file (the budget ran out)"
    mine = {f"{k}={v}" for k, v in settings}
    out = [why for label, why in fc.left_out if label in mine]
    if out:
        return (f"not handed over: set for every size, it slowed {out[0]} (a per-size "
                "selection keeps it where it wins: commscope tune --write writes one)")
    if fc.reason:
        return f"not handed over: the whole file could not be checked ({fc.reason})"
    if fc.slower:
        where = ", ".join(f"{b} {human_bytes(a)}" + (f"-{human_bytes(z)}" if z != a else "")
                          for b, a, z in fc.slower)
        return f"not handed over: with the whole file, {where} ran slower"
    det = fc.detectable
    seen = f"; a slowdown of {100 * (det - 1):.0f}% or more would have shown" if det < 9 else ""
    few = len(fc.unjudged)
    unjudged = f"; {fc.unjudged_words}" if few else ""
    instead = fc.instead(settings)
    if instead:
        vals = " ".join(f"{k}={v}" for k, v in instead)
        if t is None or not in_file(fc, t, call):
            return (f"not handed over: the settings file holds {vals} instead "
                    f"({_instead_why(t, instead)}), and its check did not find it closing "
                    f"the gap of {_call(call)}{_sp(span_text(sizes))}")
        faster, closed = _served(fc, t, call)
        return (f"in the settings file as {vals} ({_instead_why(t, instead)}): with the "
                f"whole file, {_call(call)} ran {faster} faster"
                f"{_sp(span_text(sizes))} in its check, closing {closed} at its "
                f"least-closed size ({fc.rounds} rounds or more; none slower{seen}{unjudged})"
                + (f": {fc.file}" if fc.file else ""))
    if settings and not all(kv in fc.settings for kv in settings):
        # another gap's value of its variable went in, and the check took it out again
        return ("not handed over: the settings file does not hold it (another gap's value of "
                "its variable went in, and the file's check took that out)")
    return (f"checked as the whole file ({', '.join(fc.benches)}, {fc.sizes - few} size(s), "
            f"{fc.rounds} rounds or more: none slower{seen}{unjudged})"
            + (f": {fc.file}" if fc.file else ""))


def _share(closed: float) -> str:
    """The share of a gap a setting closed: past all of it, said so."""
    return "all of the gap and more" if closed > 1.05 else f"{min(closed, 1.0):.0%} of the gap"


def _cause_text(t: Trial, fast: str) -> str:
    """An established cause in words: the mechanism, and the experiment
    that closed the gap, with how much of it where."""
    h = t.hypothesis
    where = span_text(t.sizes) if any(t.sizes) else ""
    if h.side == "fast":
        med, _, _ = t.speed()
        return (f"the cause: {h.mechanism} (without it, {h.label}, {fast} takes {_r(med)} as "
                f"long{_sp(where)}, closing {_share(t.closed)})")
    return f"the cause: {h.mechanism} ({h.label} closed {_share(t.closed)}{_sp(where)})"


def _sp(x: str) -> str:
    return f" {x}" if x else ""


def _rounds(c) -> str:
    """The rounds behind a confirmation: the fewest and the most over its
    confirmed sizes."""
    ns = sorted(r.n for r in c.ratios if r.size in set(c.sizes)) or [0]
    return f"{ns[0]}" if ns[0] == ns[-1] else f"{ns[0]}-{ns[-1]}"


def _interval(c) -> str:
    """The confirmed sizes' intervals, lowest end to highest: what these
    rounds allow (another run's rounds may land elsewhere in it)."""
    xs = [r for r in c.ratios if r.size in set(c.sizes)]
    lo = min((r.lo for r in xs), default=1.0)
    hi = max((r.hi for r in xs), default=1.0)
    return f"{_least(lo)}-{_r(hi)} over {_rounds(c)} rounds"


def _scope(g) -> str:
    return f"{g.np} processes, one node"


def _one(o: Outcome, d: Diagnosis) -> Conclusion | None:
    if not o.confirmed or o.conf is None:
        return None
    g, c = o.gap, o.conf
    slow, fast = d.labels.get(g.slow_arm, g.slow_arm), d.labels.get(g.fast_arm, g.fast_arm)
    where = runs_text(c.held, c.ratios)  # each confirmed range, with its own ratio
    figure = f"that many times as long ({_interval(c)})"
    best = o.best_setting()
    fc = d.check_for(g.slow_arm)
    handed = best is not None and in_file(fc, best, g.call)
    cause, lead = o.cause(), o.lead()
    impl_slow = d.impls.get(g.slow_arm, slow)
    ident = (g.call, impl_slow, d.impls.get(g.fast_arm, fast),
             cause.hypothesis.id if cause is not None else
             lead.hypothesis.id if lead is not None else "none")
    details = [f"confirmed: {g.text}{_sp(where)}, {figure}"]
    if cause is not None:
        details.append(_cause_text(cause, fast))
    if lead is not None:
        details.append(_lead_text(lead, fast))
    if best is not None:
        med, least, _ = best.speed()
        details.append(f"measured: with {best.hypothesis.label}, {_call(g.call)} is {_r(med)} "
                       f"faster (at least {_least(least)}){_sp(span_text(best.sizes))}, "
                       f"closing {_share(best.closed)}; "
                       + file_text(fc, best, g.call))
    tried = _tried(o, best or cause)
    # every setting tried left undecided: the cause was not refuted, only not decided
    open_ = o.searched and all(t.verdict in ("undecided", "not-reached", "untestable")
                               for t in o.trials)
    if tried:
        details.append(("also tried: " if best is not None or cause is not None else
                        "cause not decided: tried " if open_ else "cause not found: tried ")
                       + tried)
    elif best is None and cause is None:
        details.append("cause not found: " + {
            "budget": "its library's settings were not tried: the budget ran out first",
            "late": "it was confirmed after the search of settings began: not searched",
            "none": "no setting of its library that commscope knows could change it"}.get(
                o.unsearched, "nothing tried"))
    if best is not None and best is cause:
        med, least, _ = best.speed()
        closes = f"closing {_share(best.closed)}" + (f" to {fast}" if g.kind ==
                                                      "implementation" else "")
        why = f"the cause: {best.hypothesis.mechanism}"
        sizes = span_text(best.sizes) if any(best.sizes) else ""
        head = (f"{slow} {_call(g.call)}{_sp(sizes)}: set {best.hypothesis.label} ({_r(med)} "
                f"faster, at least {_least(least)}, {closes}; {why}) ({_scope(g)})")
        # a setting is the same conclusion whichever gap it closed: another
        # library's call, or the same library's hand-written equivalent
        ident = (g.call, impl_slow, "", best.hypothesis.id)
        if handed:
            assert fc is not None
            instead = fc.instead(best.hypothesis.settings)
            if instead:  # served by another gap's value of its variable: said, with its check
                faster, closed = _served(fc, best, g.call)
                head += (f"; the settings file holds {' '.join(f'{k}={v}' for k, v in instead)} "
                         f"({_instead_why(best, instead, more=False)}), with which the whole "
                         f"file ran it {faster} faster there in its check, closing {closed} "
                         "at its least-closed size")
            return Conclusion("setting", head, tuple(details), best.gain, ident, o)
        # found, not handed over: said with why, above a library choice
        head += "; not handed over: " + file_text(fc, best, g.call).split(": ", 1)[-1]
        return Conclusion("found", head, tuple(details), best.gain, ident, o)
    gain = 1.0 - 1.0 / c.median
    # a setting that narrows the gap without closing it leaves the gap what
    # it is (the library choice, the hand-written equivalent): said beside it
    narrows = ""
    if best is not None:
        instead = " ".join(f"{k}={v}" for k, v in fc.instead(best.hypothesis.settings)) \
            if handed and fc is not None else ""
        narrows = (f"; {best.hypothesis.label} narrows it ({best.gain:.0%} less per call"
                   f"{_sp(span_text(best.sizes))}, "
                   + (f"in the settings file as {instead})" if instead else
                      "in the settings file)" if handed else "not handed over)"))
    why = (_cause_text(cause, fast) if cause is not None else
           _lead_text(lead, fast) if lead is not None else
           "no setting of it tried was decided either way" if open_ else
           "no setting of it closed the gap" if o.searched else
           "its settings not tried (budget)" if o.unsearched == "budget" else
           "its settings not searched" if o.unsearched == "late" else
           "no setting of it to try") + narrows
    if g.kind == "implementation":
        other = "" if d.impls.get(g.slow_arm) != d.impls.get(g.fast_arm) else f", not {slow}"
        head = (f"{_call(g.call)}{_sp(where)}: use {fast}{other}: {slow} takes {figure}; "
                f"{why} ({_scope(g)})")
        return Conclusion("implementation", head, tuple(details), gain, ident, o)
    if g.kind == "reference" and _changed(o) and cause is None:
        # code only once the library's own settings were searched and one of
        # them demonstrably ran another path (it was slower, or faster)
        ref = g.points[0].fast[0][1]
        head = (f"{_call(g.call)} under {slow}{_sp(where)}: its hand-written equivalent ({ref}) "
                f"is faster ({_interval(c)}); none of the library's settings tried closed the "
                f"gap ({_scope(g)})")
        return Conclusion("code", head, tuple(details), gain, ident, o)
    if g.kind == "reference":
        said = (why if not o.searched or cause is not None else
                "no setting tried ran another path measurably: no code advised")
        head = (f"{_call(g.call)} under {slow}{_sp(where)} takes that many times as long as its "
                f"hand-written equivalent; {said} ({_scope(g)})")
        return Conclusion("anomaly", head, tuple(details), gain, ident, o)
    kind = "drop" if g.kind == "drop" else "anomaly"
    head = (f"{g.text[:1].upper()}{g.text[1:]}{_sp(where)} ({_interval(c)}): "
            + ("cause not decided" if open_ and cause is None else
               "cause not found" if o.searched and cause is None else why)
            + f" ({_scope(g)})")
    return Conclusion(kind, head, tuple(details), gain, ident, o)


def _changed(o: Outcome) -> bool:
    """Whether some setting tried demonstrably ran another path: it changed
    the call's time either way (a forced algorithm that is what the library
    runs already, or that falls back to it, changes nothing)."""
    return any(t.verdict in ("slower", "helps", "closes") and t.hypothesis.side == "slow"
               for t in o.trials)


def _lead_text(t: Trial, fast: str) -> str:
    """What a mechanism of the faster side carries: its lead, not the other's cause."""
    med, _, _ = t.speed()
    return (f"{fast}'s lead rests {'mostly' if t.closed >= CLOSES else 'in part'} on "
            f"{t.hypothesis.mechanism}: without it ({t.hypothesis.label}) {fast} takes "
            f"{_r(med)} as long{_sp(span_text(t.sizes))}, {_share(t.closed)}")


SHOWN_CALLS = 4  # calls a grouped line names before "and N more"


def items(d: Diagnosis) -> list[Conclusion]:
    """Each confirmed gap's conclusion, the most actionable first."""
    out = [c for o in d.outcomes if (c := _one(o, d)) is not None]
    out.sort(key=lambda c: (TIERS[c.kind], -c.gain, c.identity))
    return out


def _calls(ms: Sequence[Conclusion]) -> str:
    def one(m: Conclusion) -> str:
        c = m.outcome.conf
        assert c is not None
        where = runs_text(c.held, c.ratios)
        return f"{_call(m.outcome.gap.call)}{_sp(where)}"

    said = ", ".join(one(m) for m in ms[:SHOWN_CALLS])
    return said + (f" and {len(ms) - SHOWN_CALLS} more" if len(ms) > SHOWN_CALLS else "")


def _grouped(kind: str, ms: list[Conclusion], d: Diagnosis) -> Conclusion:
    """One line for the gaps of one choice: the library to use for these
    calls (each with the ratio its rounds measured), or what does not
    hold under one configuration."""
    lead = ms[0]
    g = lead.outcome.gap
    slow, fast = d.labels.get(g.slow_arm, g.slow_arm), d.labels.get(g.fast_arm, g.fast_arm)
    if kind in ("setting", "found"):  # the same setting, for each gap it narrowed
        others = "; ".join(m.outcome.gap.text for m in ms[1:])
        return Conclusion(kind, f"{lead.headline}; it narrows {len(ms) - 1} more gap(s) too "
                          f"({others})", tuple(x for m in ms for x in m.details),
                          max(m.gain for m in ms), lead.identity, lead.outcome, tuple(ms))
    if kind == "implementation":
        found = [m for m in ms if m.identity[3] != "none"]
        late = [m for m in ms if m.outcome.unsearched == "budget"]
        narrowed = [m for m in ms if m.outcome.best_setting() is not None]
        head = (f"Use {fast}, not {slow}, for {_calls(ms)}: {slow} takes that many times as "
                "long (each confirmed over its own rounds); "
                + (f"a cause or {fast}'s lead found for {len(found)} (details)" if found
                   else "no cause found that a setting removes")
                + (f"; a setting narrows {len(narrowed)} (details)" if narrowed else "")
                + (f"; {len(late)} not searched (budget)" if late else "")
                + f" ({_scope(g)})")
    elif kind == "drop":
        head = (f"Under {slow}, bandwidth drops between neighbouring sizes: "
                + "; ".join(f"{m.outcome.gap.call} {m.outcome.gap.text.split(' from ', 1)[-1]}"
                            for m in ms[:SHOWN_CALLS])
                + (f" and {len(ms) - SHOWN_CALLS} more" if len(ms) > SHOWN_CALLS else "")
                + f" ({_scope(g)}; details: what was tried)")
    else:
        def short(m: Conclusion) -> str:
            c = m.outcome.conf
            assert c is not None
            o = m.outcome
            if o.gap.kind == "reference":
                return (f"{_call(o.gap.call)} slower than its hand-written equivalent"
                        f"{_sp(runs_text(c.held, c.ratios))}")
            rule = o.gap.text.split(", ", 1)[-1].replace(" does not hold", "")
            return f"{rule} fails{_sp(runs_text(c.held, c.ratios))}"

        head = (f"Under {slow}, {len(ms)} call(s) slower than what does their job: "
                + "; ".join(short(m) for m in ms[:SHOWN_CALLS])
                + (f" and {len(ms) - SHOWN_CALLS} more" if len(ms) > SHOWN_CALLS else "")
                + f" ({_scope(g)}; details: what was tried)")
    details = tuple(x for m in ms for x in (m.headline, *(f"  {y}" for y in m.details)))
    return Conclusion(kind, head, details, max(m.gain for m in ms),
                      (kind, slow, fast), lead.outcome, tuple(ms))


ROBUST = 1.10  # what a gap's rounds allow at least, for it to lead: 10% at half its sizes


def robust(c: Conclusion) -> bool:
    """Whether a conclusion is one the next run should repeat: a setting
    that wins surely by 5% (its interval's lower end), a gap whose interval
    stays 10% above 1 at half the sizes it holds at or more (the call's gap,
    not its noisiest size's: the lowest end over 15 sizes flipped lines
    between two runs whose medians agreed to 3%).  The others are true of
    these rounds and said below the first screen: a flip between runs comes
    from them."""
    o = c.outcome
    if c.kind in ("setting", "found"):
        t = o.best_setting()
        return t is not None and t.speed()[1] >= MIN_FACTOR
    return o.conf is not None and o.conf.typical_least >= ROBUST


def conclusions(d: Diagnosis, limit: int | None = LIMIT) -> list[Conclusion]:
    """The first screen's lines, the most actionable first: each setting
    handed over alone, each library choice one line (the calls it is the
    faster one for), each hand-written equivalent alone, the anomalies of
    one configuration one line; what these rounds hold only narrowly
    (robust) after everything that holds surely, in lines of its own.

    With a limit (the first screen), only what holds surely: a narrowly held
    line is one the next run may not repeat, and two default runs led with
    different screens through such lines (docs/diagnosis.md, "The first
    screen"); they stay in the whole list (limit None), counted below the
    screen."""
    out: list[Conclusion] = []
    groups: dict[tuple[str, str, str, bool], list[Conclusion]] = {}
    for c in items(d):
        g = c.outcome.gap
        sure = robust(c)
        if c.kind in ("implementation", "anomaly", "drop"):
            groups.setdefault((c.kind, g.slow_arm, g.fast_arm if c.kind == "implementation"
                               else "", sure), []).append(c)
        elif c.kind in ("setting", "found"):  # one setting that narrows several gaps: one line
            groups.setdefault((c.kind, g.slow_arm, c.identity[3], sure), []).append(c)
        else:
            groups.setdefault((c.kind, g.id, "", sure), []).append(c)
    for (kind, _, _, sure), ms in groups.items():
        line = ms[0] if len(ms) == 1 else _grouped(kind, ms, d)
        if not sure:
            line = replace(line, headline=NARROW + line.headline)
        out.append(line)
    # gains a tenth apart rank as one, then by what they say: rounds move a gain a few
    # hundredths between runs, and the first screen's cut fell between such lines
    out.sort(key=lambda c: (narrow(c), TIERS[c.kind], -round(c.gain, 1), c.identity))
    return out if limit is None else screen(out, limit)


def screen(cs: Sequence[Conclusion], limit: int) -> list[Conclusion]:
    """The first screen of the whole list: what holds surely, up to limit."""
    return [c for c in cs if not narrow(c)][:limit]


NARROW = "(narrowly held) "


def narrow(c: Conclusion) -> bool:
    """A line these rounds hold only narrowly (marked so by conclusions)."""
    return c.headline.startswith(NARROW)


def _more(cs: Sequence[Conclusion], shown: Sequence[Conclusion]) -> str:
    """What the screen leaves out: how many lines, and of them how many
    narrowly held (left out whatever the room)."""
    n = len(cs) - len(shown)
    held = sum(1 for c in cs if narrow(c))
    return f"  ... and {n} more" + (
        f", {held} of them narrowly held (the next run may not repeat them)" if held else "")


def not_confirmed(d: Diagnosis) -> list[Outcome]:
    """Gaps the screening pass showed that their own rounds did not hold."""
    return [o for o in d.outcomes if o.conf is not None and not o.confirmed]


def text(d: Diagnosis, limit: int | None = LIMIT, details: bool = False) -> str:
    cs = conclusions(d, None)
    shown = cs if limit is None else screen(cs, limit)
    lines = ["What the diagnosis established:" if shown else
             "The diagnosis confirmed no gap: " + _none_said(d) if not cs else
             "Nothing the diagnosis established holds surely:"]
    for i, c in enumerate(shown, 1):
        lines.append(f"{i:>3}. {c.headline}")
        if details:
            lines += [f"       {x}" for x in c.details]
    if len(cs) > len(shown):
        lines.append(_more(cs, shown) + " (commscope analyze findings --limit 0)")
    lines += _footer(d)
    return "\n".join(lines) + "\n"


def _inner_dropped(text: str) -> str:
    """The text without what nests two brackets deep (a mechanism's own
    explanation inside the figure's bracket): the details keep it."""
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        if depth < 2:
            out.append(ch)
        if ch == ")":
            depth -= 1
    return "".join(out).replace(" )", ")").replace("  ", " ")


def brief(text: str, width: int, lines: int = 2, indent: int = 5) -> list[str]:
    """A conclusion in at most `lines` lines of `width`, for a terminal:
    what nests two brackets deep dropped, then cut at the last clause that
    fits ('; ', then ', '), marked ' ...' (the whole line: commscope analyze
    findings).  Wrapped, the first line after its number, the rest indented."""
    whole = _inner_dropped(text)

    def wrap(t: str) -> list[str]:
        return textwrap.wrap(t, width=width - indent, break_on_hyphens=False)

    room, t = lines * (width - indent) - 4, whole
    while len(wrap(t)) > lines and room > 20:
        cut = -1
        for sep in ("; ", ", ", " "):  # the last clause that fits, else the last word
            cut = whole.rfind(sep, 0, room)
            if cut >= room // 2:
                break
        t = whole[:max(cut, 1)].rstrip(" ,;:") + " ..."
        room = min(room, len(t) - 4) - 1
    return wrap(t)[:lines]


def terminal(d: Diagnosis, width: int, limit: int = LIMIT) -> str:
    """text() for a person at a terminal: each conclusion at most two lines
    of `width`, each note one; everything else behind commscope analyze
    findings (--details)."""
    cs = conclusions(d, None)
    shown = screen(cs, limit)
    out = ["What the diagnosis established:" if shown else
           "The diagnosis confirmed no gap: " + _none_said(d) if not cs else
           "Nothing the diagnosis established holds surely:"]
    for i, c in enumerate(shown, 1):
        first, *rest = brief(c.headline, width) or [""]
        out.append(f"{i:>3}. {first}")
        out += [f"     {x}" for x in rest]
    if len(cs) > len(shown):
        out.append(_more(cs, shown))
    out += [fit_line(x, width) for x in _footer(d)]
    return "\n".join(out) + "\n"


def fit_line(line: str, width: int) -> str:
    """One line of at most `width`, cut and marked ' ...' where longer."""
    return line if len(line) <= width else line[:width - 4].rstrip() + " ..."


def _none_said(d: Diagnosis) -> str:
    n = len([o for o in d.outcomes if o.conf is not None])
    return (f"{n} candidate(s) from the sweep measured again, none held" if n else
            "the sweep separated no difference to measure again")


def _footer(d: Diagnosis) -> list[str]:
    # the files handed over, named on the screen that holds their lines (a
    # narrowly held setting is in its file, though off the first screen)
    out = [f"   - settings file: {fc.file} (" + " ".join(f"{k}={v}" for k, v in fc.settings)
           + "; checked together, none slower)" for fc in d.checks if fc.passed and fc.file]
    nc = not_confirmed(d)
    if nc:
        out.append("   - not confirmed when measured again (no conclusion): "
                   + "; ".join(f"{o.gap.text}" for o in nc[:4])
                   + (f" and {len(nc) - 4} more" if len(nc) > 4 else ""))
    for n in d.notes:
        out.append(f"   - {n}")
    return out


def identities(cs: Sequence[Conclusion]) -> set[tuple[str, ...]]:
    """Every (call, slow, fast, cause) the lines conclude."""
    return {i for c in cs for i in c.identities()}


def named(cs: Sequence[Conclusion]) -> set[tuple[str, ...]]:
    """Every (call, slow, fast, what is said) the lines name (Conclusion.named)."""
    return {i for c in cs for i in c.named()}


def shown(d: Diagnosis | None, arms: set[str]) -> Diagnosis | None:
    """The diagnosis of the configurations a reader selected: the gaps whose
    every side is among them (a gap against a library left out of the
    selection is not this selection's conclusion)."""
    if d is None:
        return None
    from dataclasses import replace

    outs = [o for o in d.outcomes if o.gap.arms() <= arms]
    return replace(d, outcomes=outs,
                   checks=[c for c in d.checks if c.arm.split("|", 1)[0] in arms])


def of_rows(store, rows) -> Diagnosis | None:
    """The stored diagnosis of the sweeps these records come from, for the
    configurations among them."""
    from .diagnosis import latest

    sweeps = {int(r["sweep_id"]) for r in rows if r["sweep_id"] is not None}
    arms = {str(r["config_key"]) for r in rows if r["config_key"]}
    return shown(latest(store, sweeps), arms)


def where(o: Outcome) -> str:
    """The screened sizes of a gap that did not hold, in words."""
    return span_text(o.gap.sizes)
