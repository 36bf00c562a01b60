"""What `commscope tune` says and hands over: the search's report, the
settings file (`commscope run --settings` reads it, a shell can source it)
with the winner's variables or the per-size choices of collectives, and
what the settings handed over did measured together."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from ..measure.build import Core
from ..store.sizes import human_bytes
from .search import Effect, Outcome, best


def _span(lo: int, hi: int) -> str:
    return human_bytes(lo) if lo == hi else f"{human_bytes(lo)}-{human_bytes(hi)}"


def _claim(es: Sequence[Effect]) -> str:
    mid = sorted(es, key=lambda e: e.ratio)[len(es) // 2]
    return f"{mid.ratio:.2f}x [{mid.lo:.2f}, {mid.hi:.2f}]"


def report(core: Core, outcomes: Sequence[Outcome], rounds: int, extra: int = 0) -> str:
    ran = max((e.n for o in outcomes for e in o.effects), default=rounds)
    more = (f" (close contenders {ran - rounds} more)" if ran > rounds
            else " (no contender close enough for more)" if extra else "")
    lines = [f"{core.impl.name}: {len(outcomes)} candidate(s) against the default, {rounds} "
             f"interleaved rounds{more}; ratio = default time / candidate time (above 1: "
             f"faster), median over rounds [95% interval between rounds]"]
    for o in outcomes:
        lines.append(f"\n  {o.cand.label}  ({o.cand.why})")
        if o.state == "broken":
            lines.append(f"    broken: {o.reason}")
            continue
        wins, loses = o.ranges("wins"), o.ranges("loses")
        for b, lo, hi, es in wins:
            lines.append(f"    faster  {b} {_span(lo, hi)}: {_claim(es)}")
        for b, lo, hi, es in loses:
            lines.append(f"    slower  {b} {_span(lo, hi)}: {_claim(es)}")
        if not wins and not loses:
            lines.append("    no size told apart from the default")
        if o.state == "pruned":
            lines.append(f"    stopped: {o.reason}")
    w = best(outcomes)
    lines.append("")
    if w is None:
        lines.append("recommendation: keep the defaults (no candidate was faster beyond the "
                     "between-round uncertainty)")
    else:
        where = ", ".join(f"{b} {_span(lo, hi)} ({_claim(es)})" for b, lo, hi, es in
                          w.ranges("wins"))
        cost = w.ranges("loses")
        lines.append(f"recommendation: {w.cand.label}\n  faster at {where}"
                     + ("\n  but slower at " + ", ".join(f"{b} {_span(lo, hi)} ({_claim(es)})"
                                                         for b, lo, hi, es in cost)
                        if cost else "\n  and slower at no measured size"))
    return "\n".join(lines) + "\n"


def _launcher_note(settings: Sequence[tuple[str, str]], core: Core) -> list[str]:
    """COMMSCOPE_BIND is commscope's: how to say it to the launcher itself."""
    from ..measure.mpi import bind_flags

    return [f"# COMMSCOPE_BIND={v}: outside commscope, launch with "
            + (" ".join(bind_flags(core.impl.family, v)) or "no binding flag")
            for k, v in settings if k == "COMMSCOPE_BIND"]


def export_line(key: str, value: str) -> str:
    """A line a shell may source or eval: the value quoted, so that nothing
    in it (a candidate from a user's file, say) is run."""
    return f"export {key}={shlex.quote(value)}"


def settings_text(w: Outcome, core: Core) -> str:
    """The settings file `commscope run --settings` reads (and a shell can
    source): the winner's variables, with where it was measured to win."""
    head = [f"# commscope tune: {core.impl.name} ({core.impl.family}), this machine, 2 ranks"]
    head += [f"# faster: {b} {_span(lo, hi)} {_claim(es)}" for b, lo, hi, es in w.ranges("wins")]
    head += [f"# slower: {b} {_span(lo, hi)} {_claim(es)}" for b, lo, hi, es in w.ranges("loses")]
    head += _launcher_note(w.cand.settings, core)
    return "\n".join(head + [export_line(k, v) for k, v in w.cand.settings]) + "\n"


def with_selection(w: Outcome | None, lines: Sequence[tuple[str, str]], what: str,
                   core: Core) -> str:
    """The settings file when collectives won per size range: the settings
    that put the per-size choices in force (Open MPI's rules file, Intel
    MPI's I_MPI_ADJUST strings), and the best winner besides if it is not
    one of the forced algorithms."""
    from . import selection

    head = [f"# commscope tune: {core.impl.name} ({core.impl.family}), this machine, 2 ranks",
            f"# collective algorithms per message size: {what}"]
    out = list(lines)
    if w is not None and selection.forced(w.cand.settings) is None:
        head += [f"# and {w.cand.label}: faster at {b} {_span(lo, hi)} {_claim(es)}"
                 for b, lo, hi, es in w.ranges("wins")]
        head += _launcher_note(w.cand.settings, core)
        out += list(w.cand.settings)
    return "\n".join(head + [export_line(k, v) for k, v in out]) + "\n"


def with_rules(w: Outcome | None, rules: Path, core: Core) -> str:
    """with_selection for Open MPI: its rules file turned on."""
    return with_selection(w, [("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
                              ("OMPI_MCA_coll_tuned_dynamic_rules_filename",
                               str(rules.resolve()))], str(rules), core)


def together_text(o: Outcome | None) -> str:
    if o is None:
        return ("the settings handed over were not measured together: the budget left could "
                "not hold it (raise --budget)\n")
    n = max((e.n for e in o.effects), default=0)
    lines = [f"the settings handed over, measured together against the default over {n} "
             "rounds:"]
    if o.state != "measured":
        lines.append(f"  {o.state}: {o.reason}")
    lines += [f"  faster  {b} {_span(lo, hi)}: {_claim(es)}" for b, lo, hi, es in o.ranges("wins")]
    lines += [f"  slower  {b} {_span(lo, hi)}: {_claim(es)}"
              for b, lo, hi, es in o.ranges("loses")]
    if o.state == "measured" and not o.ranges("wins") and not o.ranges("loses"):
        lines.append("  no range of sizes told apart from the default")
    return "\n".join(lines) + "\n"
