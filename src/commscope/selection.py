"""Algorithm choices per message-size range, written in the form the
implementation reads itself: for Open MPI a coll_tuned dynamic rules file
(classic format, read by 4.1 and 5.0 alike), for Intel MPI its
I_MPI_ADJUST_<OP> strings.

A choice comes from the tuning advisor: a candidate that forced one
collective's algorithm and won over a range of sizes against the default
(tune.Outcome.ranges).  Where two candidates win at one size, the larger
median ratio takes it.  Outside every range the file hands the decision
back to Open MPI's fixed rules (algorithm 0)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .analysis.summary import ratio_text
from .errors import CommscopeError
from .sizes import human_bytes

# Open MPI's COLLTYPE numbering (ompi/mca/coll/base/coll_base_functions.h)
OMPI_COLL_ID = {"allgather": 0, "allreduce": 2, "alltoall": 3, "barrier": 6, "bcast": 7,
                "gather": 9, "reduce": 11, "reduce_scatter": 12, "scatter": 15}
# The size a rule is looked up by, over the benchmark's size: coll_tuned's
# dynamic decision takes the whole send buffer of alltoall (a block per
# rank) but the buffer itself for bcast, reduce and allreduce.
OMPI_SIZE_PER_RANK = {"alltoall", "allgather"}
_FORCED = re.compile(r"^(?:OMPI_MCA_coll_tuned_(\w+)_algorithm|I_MPI_ADJUST_(\w+)"
                     r"|MPIR_CVAR_(\w+)_INTRA_ALGORITHM)$")


@dataclass(frozen=True)
class Choice:
    coll: str
    lo: int  # the first and last benchmark size it won at (bytes as the benchmark counts)
    hi: int
    alg: str  # the implementation's name for the algorithm
    value: int  # and the number its files use
    ratio: float  # default time / its time, median over the range's sizes
    segsize: int = 0  # Open MPI's segment size for it (0: the algorithm's own)


def forced_collective(key: str) -> str | None:
    """The collective whose algorithm a setting chooses (Open MPI's
    coll_tuned_<op>_algorithm, Intel MPI's I_MPI_ADJUST_<OP>, MPICH's
    MPIR_CVAR_<OP>_INTRA_ALGORITHM); None for a setting that may change
    any benchmark."""
    m = _FORCED.match(key)
    return next((g.lower() for g in m.groups() if g), None) if m else None


def forced(settings: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """(collective, algorithm) that a candidate's settings force, if any."""
    return next(((c, v) for k, v in settings if (c := forced_collective(k))), None)


def _value(cvars: Mapping[str, Mapping[str, object]], coll: str, alg: str) -> int:
    cv = cvars.get(f"coll_tuned_{coll}_algorithm") or {}
    names = list(cv.get("enum") or [])  # type: ignore[call-overload]
    values = list(cv.get("enum_values") or [])  # type: ignore[call-overload]
    if alg in names and len(values) == len(names):
        return int(values[names.index(alg)])
    if alg.isdigit():
        return int(alg)
    raise CommscopeError(f"Open MPI does not list {alg!r} among coll_tuned_{coll}_algorithm's "
                         "values")


def choices(outcomes: Sequence[object], cvars: Mapping[str, Mapping[str, object]]
            ) -> list[Choice]:
    """The winning algorithm at each size, per collective, as ranges."""
    best: dict[tuple[str, int], tuple[float, str]] = {}
    for o in outcomes:
        f = forced(o.cand.settings)  # type: ignore[attr-defined]
        if f is None or o.state != "measured":  # type: ignore[attr-defined]
            continue
        coll, alg = f
        for bench, _, _, es in o.ranges("wins"):  # type: ignore[attr-defined]
            if bench != coll:
                continue  # a bcast algorithm "winning" allreduce is noise, not a choice
            for e in es:
                if e.ratio > best.get((coll, e.size), (0.0, ""))[0]:
                    best[(coll, e.size)] = (e.ratio, alg)
    out: list[Choice] = []
    for coll in sorted({c for c, _ in best}):
        sizes = sorted(s for c, s in best if c == coll)
        run: list[int] = []
        for s in [*sizes, None]:
            if run and (s is None or best[(coll, s)][1] != best[(coll, run[0])][1]):
                alg = best[(coll, run[0])][1]
                ratios = sorted(best[(coll, x)][0] for x in run)
                out.append(Choice(coll, run[0], run[-1], alg, _value(cvars, coll, alg),
                                  ratios[len(ratios) // 2]))
                run = []
            if s is not None:
                run.append(s)
    return out


def openmpi_rules(cs: Sequence[Choice], np_: int, where: str = "") -> str:
    """A coll_tuned dynamic rules file: for each collective, its choices at
    the sizes they won, Open MPI's own decision everywhere else.  Measured
    with np_ ranks; the rules apply to every communicator size."""
    by: dict[str, list[Choice]] = {}
    for c in cs:
        if c.coll not in OMPI_COLL_ID:
            raise CommscopeError(f"no coll_tuned rule for {c.coll}")
        by.setdefault(c.coll, []).append(c)
    lines = ["# Open MPI coll_tuned dynamic rules, written by commscope tune"
             + (f" ({where})" if where else ""),
             "# use: OMPI_MCA_coll_tuned_use_dynamic_rules=1",
             "#      OMPI_MCA_coll_tuned_dynamic_rules_filename=THIS_FILE",
             f"# measured with {np_} ranks; the rules apply to every communicator size",
             f"{len(by)}  # collectives"]
    for coll, group in sorted(by.items(), key=lambda kv: OMPI_COLL_ID[kv[0]]):
        k = np_ if coll in OMPI_SIZE_PER_RANK else 1
        rules: list[tuple[int, int, int, str]] = [(0, 0, 0, "Open MPI's own decision")]
        for c in sorted(group, key=lambda c: c.lo):
            lo, after = c.lo * k, (c.hi + 1) * k
            if lo == rules[-1][0]:
                rules.pop()
            rules.append((lo, c.value, c.segsize, f"{c.alg}: won {human_bytes(c.lo)} to "
                                       f"{human_bytes(c.hi)}, {ratio_text(c.ratio)} the default"))
            rules.append((after, 0, 0, "Open MPI's own decision"))
        lines += [f"{OMPI_COLL_ID[coll]}  # {coll}", "1  # one set of rules",
                  f"{np_}  # communicator size measured", f"{len(rules)}  # message sizes"]
        lines += [f"{size} {alg} 0 {seg}  # {why}" for size, alg, seg, why in rules]
    return "\n".join(lines) + "\n"


def intel_adjust(cs: Sequence[Choice]) -> list[tuple[str, str]]:
    """Intel MPI's own per-size syntax, one variable per collective:
    I_MPI_ADJUST_BCAST="3:65536-1048576;1:1-16".  Sizes as the benchmark
    counts them (the buffer; alltoall's block per rank, as Intel MPI
    measures its message); Intel MPI decides alone elsewhere."""
    by: dict[str, list[Choice]] = {}
    for c in cs:
        by.setdefault(c.coll, []).append(c)
    return [(f"I_MPI_ADJUST_{coll.upper()}",
             '"' + ";".join(f"{c.value}:{c.lo}-{c.hi}" for c in sorted(group, key=lambda c: c.lo))
             + '"') for coll, group in sorted(by.items())]

