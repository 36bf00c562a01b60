"""Algorithm choices per message-size range, written in the form the
implementation reads itself: for Open MPI a coll_tuned dynamic rules file
(classic format, read by 4.1 and 5.0 alike), for MPICH a collective
selection JSON file (its own tree, taken from the library, with the choices
grafted in), for Intel MPI its I_MPI_ADJUST_<OP> strings.

A choice comes from the tuning advisor: a candidate that forced one
collective's algorithm and won over a range of sizes against the default
(search.Outcome.ranges).  Where two candidates win at one size, the larger
median ratio takes it.  Outside every range the file hands the decision
back to the implementation's own."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..analysis.summary import ratio_text
from ..errors import CommscopeError
from ..store.sizes import human_bytes

# Open MPI's COLLTYPE numbering (ompi/mca/coll/base/coll_base_functions.h)
OMPI_COLL_ID = {"allgather": 0, "allreduce": 2, "alltoall": 3, "barrier": 6, "bcast": 7,
                "gather": 9, "reduce": 11, "reduce_scatter": 12, "scatter": 15}
# The size a rule is looked up by, over the benchmark's size: coll_tuned's
# dynamic decision takes the whole send buffer of alltoall (a block per
# rank) but the buffer itself for bcast, reduce and allreduce.
OMPI_SIZE_PER_RANK = {"alltoall", "allgather"}
_FORCED = re.compile(r"^(?:OMPI_MCA_coll_tuned_(\w+)_algorithm|I_MPI_ADJUST_(\w+)"
                     r"|MPIR_CVAR_(\w+)_INTRA_ALGORITHM|MV2_INTER_(\w+?)_TUNING|MV2_(ALLTOALL)_TUNING)$")


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
    MPIR_CVAR_<OP>_INTRA_ALGORITHM, MVAPICH2's MV2_INTER_<OP>_TUNING and
    MV2_ALLTOALL_TUNING); None for a setting that may change any benchmark."""
    m = _FORCED.match(key)
    return next((g.lower() for g in m.groups() if g), None) if m else None


def forced(settings: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """(collective, algorithm) that a candidate's settings force, if any."""
    return next(((c, v) for k, v in settings if (c := forced_collective(k))), None)


def _value(cvars: Mapping[str, Mapping[str, object]], coll: str, alg: str, family: str) -> int:
    if family != "openmpi":  # Intel MPI's are numbers, MPICH's files take names
        return int(alg) if alg.isdigit() else 0
    cv = cvars.get(f"coll_tuned_{coll}_algorithm") or {}
    names = list(cv.get("enum") or [])  # type: ignore[call-overload]
    values = list(cv.get("enum_values") or [])  # type: ignore[call-overload]
    if alg in names and len(values) == len(names):
        return int(values[names.index(alg)])
    if alg.isdigit():
        return int(alg)
    raise CommscopeError(f"Open MPI does not list {alg!r} among coll_tuned_{coll}_algorithm's "
                         "values")


def choices(outcomes: Sequence[object], cvars: Mapping[str, Mapping[str, object]],
            family: str = "openmpi") -> list[Choice]:
    """The winning algorithm at each size, per collective, as ranges."""
    best: dict[tuple[str, int], tuple[float, str]] = {}
    for o in outcomes:
        f = forced(o.cand.settings)  # type: ignore[attr-defined]
        if f is None or o.state != "measured" or ":" in f[1]:  # type: ignore[attr-defined]
            continue  # (a candidate that is itself a table of ranges forces no one algorithm)
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
                out.append(Choice(coll, run[0], run[-1], alg, _value(cvars, coll, alg, family),
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



# -- MPICH -------------------------------------------------------------------
MPICH_JSON_CVAR = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
# An algorithm's name in MPICH's selection tables: MPIR_Bcast_intra_binomial
_MPICH_ALG = re.compile(rb"(?<=\x00)(?:algorithm=)?MPIR_([A-Z][a-z_]*?)_intra_([a-z0-9_]+)(?=\x00)")
_MPICH_TREE = re.compile(rb'\{"collective=[^\x00]*')
# Where a measured choice does not hold: the benchmarks reduce a built-in,
# commutative operation on at least as many elements as ranks, and never
# send in place.  There the file keeps MPICH's own tree.
_MPICH_GUARDS = {"allreduce": ("is_op_built_in=no", "is_commutative=no", "count<pow2"),
                 "reduce": ("is_op_built_in=no", "is_commutative=no", "count<pow2"),
                 "alltoall": ("is_sendbuf_inplace=yes",)}


# The algorithms whose entries in a selection file carry parameters (MPICH 5
# reads them as keys under the algorithm: {"algorithm=...": {"k=2": {}}};
# one left out reads as 0), and the control variable each takes its value
# from when the algorithm is forced, as the search measured it.
_TOPO = (("topo_overhead", "TOPO_OVERHEAD"), ("topo_diff_groups", "TOPO_DIFF_GROUPS"),
         ("topo_diff_switches", "TOPO_DIFF_SWITCHES"), ("topo_same_switches", "TOPO_SAME_SWITCHES"))
MPICH_PARAMS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("bcast", "tree"): (("tree_type", "TREE_TYPE"), ("k", "TREE_KVAL"),
                        ("is_non_blocking", "IS_NON_BLOCKING"), *_TOPO),
    ("bcast", "pipelined_tree"): (("tree_type", "TREE_TYPE"), ("k", "TREE_KVAL"),
                                  ("is_non_blocking", "IS_NON_BLOCKING"),
                                  ("chunk_size", "TREE_PIPELINE_CHUNK_SIZE"),
                                  ("recv_pre_posted", "RECV_PRE_POST")),
    ("allreduce", "tree"): (("buffer_per_child", "TREE_BUFFER_PER_CHILD"), ("k", "TREE_KVAL"),
                            ("tree_type", "TREE_TYPE"),
                            ("chunk_size", "TREE_PIPELINE_CHUNK_SIZE"), *_TOPO),
    ("allreduce", "recexch"): (("k", "RECEXCH_KVAL"),
                               ("single_phase_recv", "RECEXCH_SINGLE_PHASE_RECV")),
    ("allreduce", "k_reduce_scatter_allgather"): (
        ("k", "RECEXCH_KVAL"), ("single_phase_recv", "RECEXCH_SINGLE_PHASE_RECV")),
    ("allreduce", "recursive_multiplying"): (("k", "RECURSIVE_MULTIPLYING_KVAL"),),
    ("alltoall", "k_brucks"): (("k", "BRUCKS_KVAL"),),
}


def _mpich_params(coll: str, alg: str, cvars: Mapping[str, Mapping[str, object]]
                  ) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, cv in MPICH_PARAMS.get((coll, alg), ()):
        name = f"MPIR_CVAR_{coll.upper()}_{cv}"
        v = (cvars.get(name) or {}).get("value")
        if v is None:
            raise CommscopeError(f"MPICH's {coll} {alg} takes {key}, but {name} cannot be "
                                 "read to give it the value it was measured with")
        out[f"{key}={v}"] = {}
    return out


@dataclass(frozen=True)
class MpichLibrary:
    path: Path
    tree: dict[str, object]  # MPICH's own collective selection (the MPIR layer's)
    algorithms: dict[str, tuple[str, ...]]  # collective -> the names its tables know


def mpich_library(exe: Path, env: Mapping[str, str]) -> MpichLibrary:
    """The MPICH library a core runs with (as the loader finds it), its
    built-in selection tree and its algorithm names.  MPICH 4 and later
    carry the tree as JSON text; a file that names one collective only
    leaves the others without a choice, so a written file starts from it."""
    from ..measure.build import loaded_library

    lib = loaded_library(exe, dict(env), r"libmpi(?:ch)?")
    if lib is None:
        raise CommscopeError(f"{exe} does not load an MPICH library (libmpi or libmpich)")
    data = lib.read_bytes()
    trees = [json.loads(t) for t in _MPICH_TREE.findall(data) if b'"algorithm=MPIR_' in t]
    if not trees:
        raise CommscopeError(f"{lib} holds no collective selection tree of MPICH's (MPICH 4 "
                             "or later has one)")
    algs: dict[str, list[str]] = {}
    for coll, alg in _MPICH_ALG.findall(data):
        names = algs.setdefault(coll.decode().lower(), [])
        if alg.decode() not in names:
            names.append(alg.decode())
    return MpichLibrary(lib, trees[0], {c: tuple(v) for c, v in algs.items()})


def mpich_json(cs: Sequence[Choice], lib: MpichLibrary,
               cvars: Mapping[str, Mapping[str, object]]) -> str:
    """MPICH's own tree with each collective's choices grafted in front of
    its intra-communicator branch: the sizes a choice won take its
    algorithm, every other size (and every case the measurement did not
    cover) falls through to MPICH's own branch.  MPICH compares a
    collective's "average message size": the buffer for bcast, reduce and
    allreduce, the block per rank for alltoall, as the benchmarks count.
    An algorithm's parameters take the values of the control variables it
    ran with in the search (cvars, as read from the library)."""
    tree = json.loads(json.dumps(lib.tree))
    by: dict[str, list[Choice]] = {}
    for c in cs:
        if c.alg not in lib.algorithms.get(c.coll, ()):
            raise CommscopeError(f"{lib.path} knows no {c.coll} algorithm {c.alg!r} (it has "
                                 f"{', '.join(lib.algorithms.get(c.coll, ())) or 'none'})")
        by.setdefault(c.coll, []).append(c)
    for coll, group in sorted(by.items()):
        old = tree.get(f"collective={coll}")
        if not isinstance(old, dict) or "comm_type=intra" not in old:
            raise CommscopeError(f"MPICH's tree in {lib.path} has no intra-communicator "
                                 f"branch for {coll}")
        own = old["comm_type=intra"]
        new: dict[str, object] = {g: own for g in _MPICH_GUARDS.get(coll, ())}
        for c in sorted(group, key=lambda c: c.lo):
            new[f"avg_msg_size<{c.lo}"] = own
            new[f"avg_msg_size<={c.hi}"] = {
                f"algorithm=MPIR_{coll.capitalize()}_intra_{c.alg}": _mpich_params(
                    coll, c.alg, cvars)}
        new["avg_msg_size=any"] = own
        tree[f"collective={coll}"] = {"comm_type=intra": new,
                                      **{k: v for k, v in old.items() if k != "comm_type=intra"}}
    return json.dumps(tree, indent=1) + "\n"


# -- MVAPICH2 ----------------------------------------------------------------
# A user's MV2_<...>_TUNING takes "algorithm:from-to" ranges ("1:0-1024,3:1025-+",
# bytes as the call counts them: the buffer, alltoall's, allgather's and
# scatter's block per rank) only with its indexed tables off, globally and
# for that collective (mv2_use_indexed_tuning || mv2_use_indexed_<op>_tuning
# picks the indexed table, which takes one algorithm: <op>_tuning.c).  Its
# table then replaces the library's at every size: a size is looked up by the
# first range whose upper end holds it (the last range past them all), and
# nothing hands a size back to MVAPICH2's own choice (measure/settings.py:
# ranges with the indexed tables on crashed a job).
# The calls whose ranged table runs what the search measured.  Not allreduce,
# reduce and allgather: their ranged tables leave the two-level flag of every
# range but the first unset (stack memory: allreduce_tuning.c, reduce_tuning.c,
# allgather_tuning.c fill a local table and copy it whole), reduce's ranges
# take no 8 (its allreduce: the switch's default, k-nomial, runs instead), and
# allgather's non-indexed selector runs its direct algorithm as MPIR_Allgather.
MV2_RANGED = ("alltoall", "scatter")
MV2_MAX_RANGES = 32  # MV2_MAX_NB_THRESHOLDS (coll_shmem.h): more overflow its table


def mvapich2_tuning(outcomes: Sequence[object], cs: Sequence[Choice], best: object = None
                    ) -> tuple[list[tuple[str, str]], list[str]]:
    """MVAPICH2's per-size settings for the collectives that won somewhere:
    each won range its winner, and every other measured size a forced
    algorithm measured alike with the default there (its interval holding
    1.0; the one in force below it where it is one of them, else the
    nearest to 1.0): what MVAPICH2 chose itself, as far as the search can
    name it.  A collective with a size where no algorithm
    measured alike is left out, said why (its table would force a slower
    one there); where the search's best candidate (`best`) forced that
    collective, its one algorithm is kept instead, as the search measured it
    (else the tables would drop what it recommends).  Returns (settings,
    what was left out)."""
    from ..analysis.algorithms import MV2_ALGORITHMS

    by: dict[str, list[Choice]] = {}
    for c in cs:
        by.setdefault(c.coll, []).append(c)
    out: list[tuple[str, str]] = []
    left: list[str] = []
    for coll, group in sorted(by.items()):
        if coll not in MV2_RANGED:
            left.append(f"{coll}: MVAPICH2 2.3.7's table of ranges for it does not run the "
                        "algorithms it names (docs/mvapich2.md)")
            continue
        alike: dict[int, list[tuple[float, int]]] = {}  # size -> (|log ratio|, value)
        extra: set[tuple[str, str]] = set()
        for o in outcomes:
            f = forced(o.cand.settings)  # type: ignore[attr-defined]
            if f is None or f[0] != coll or o.state != "measured" or not f[1].isdigit():  # type: ignore[attr-defined]
                continue
            if any(c.alg == f[1] for c in group):
                extra |= {kv for kv in o.cand.settings  # type: ignore[attr-defined]
                          if forced_collective(kv[0]) is None}
            for e in o.effects:  # type: ignore[attr-defined]
                if e.bench == coll and e.n >= 3 and e.lo <= 1.0 <= e.hi:
                    alike.setdefault(e.size, []).append((abs(math.log(e.ratio)), int(f[1])))
        sizes = _sizes_of(outcomes, coll)
        won = {s: c.value for c in group for s in sizes if c.lo <= s <= c.hi}
        table: list[tuple[int, int]] = []  # (value, last size it holds)
        missing = [s for s in sizes if s not in won and s not in alike]
        if missing:
            left.append(f"{coll}: at {human_bytes(missing[0])} no algorithm measured alike "
                        "with MVAPICH2's own choice, and its table names one at every size")
            continue
        keys = {k for k, _ in extra}
        if len(keys) != len(extra):
            left.append(f"{coll}: its winners were measured with different companion settings")
            continue
        for s in sizes:
            # where several measured alike, the one already in force (fewer ranges)
            near = [v for _, v in sorted(alike.get(s, ()))]
            v = won[s] if s in won else table[-1][0] if table and table[-1][0] in near \
                else near[0]
            if table and table[-1][0] == v:
                table[-1] = (v, s)
            else:
                table.append((v, s))
        if len(table) > MV2_MAX_RANGES:
            left.append(f"{coll}: {len(table)} ranges, more than MVAPICH2's table holds "
                        f"({MV2_MAX_RANGES})")
            continue
        ranges, lo = [], 0
        for i, (v, hi) in enumerate(table):
            ranges.append(f"{v}:{lo}-{'+' if i == len(table) - 1 else hi}")
            lo = hi + 1
        out += [("MV2_USE_INDEXED_TUNING", "0"), (f"MV2_USE_INDEXED_{coll.upper()}_TUNING", "0"),
                (MV2_ALGORITHMS[coll][0], ",".join(ranges)), *sorted(extra)]
    fb = forced(best.cand.settings) if best is not None else None  # type: ignore[attr-defined]
    if out and fb is not None and not any(forced_collective(k) == fb[0] for k, _ in out):
        out += list(best.cand.settings)  # type: ignore[attr-defined]
    return list(dict.fromkeys(out)), left


def _sizes_of(outcomes: Sequence[object], coll: str) -> list[int]:
    """The sizes the search measured a collective at."""
    return sorted({e.size for o in outcomes for e in o.effects  # type: ignore[attr-defined]
                   if e.bench == coll})
