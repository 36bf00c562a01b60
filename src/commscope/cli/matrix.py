"""commscope matrix: latency and bandwidth between every pair of nodes, and
which node or link is slow (issue 40; analysis/pairs.py holds the schedule
and the verdict)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import sys
import time

from ..analysis import pairs
from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import cluster as cluster_mod
from ..measure.plan import CoreOptions, Job
from ..measure.progress import Progress
from ..measure.runner import JobOutcome, NoisePolicy, default_timeout, run_at_once, run_sweep
from ..report.sections import id_ranges
from ..store.db import Store
from ..store.sizes import human_bytes, parse_size
from .common import command, named_impls


def _impl(a: argparse.Namespace, cl: cluster_mod.Cluster):
    impls = named_impls(a)
    if a.mpi and len(impls) != 1:
        raise CommscopeError("commscope matrix: --mpi names one implementation")
    fit = [m for m in impls if cl.cannot_launch(m) is None]
    if not fit:
        raise CommscopeError(f"{cl.label} launches none of {', '.join(m.name for m in impls)}: "
                             f"{cl.cannot_launch(impls[0])}")
    return fit[0]


def _failure(o: JobOutcome, limit: float) -> str:
    """A pair's job that did not end well, in words."""
    kept = "every record was written" in (o.stderr_tail + o.message)
    what = ("its records written, then it did not exit: killed, its records kept"
            if kept else f"no answer within {limit:.0f} s" if o.status == "timeout"
            else o.status)
    return what + (f" ({o.message[:160]})" if o.message and not kept else "")


def waves(core: build_mod.Core, cl: cluster_mod.Cluster, opts: CoreOptions, lat: int,
          at_once: bool = False) -> list[list[Job]]:
    """Two-rank jobs over every pair of nodes, in the schedule's rounds:
    latency at `lat` and bandwidth at the options' size from the first node
    to the second, then bandwidth the other way (a link slow one way shows
    which node sends).  One pair at a time, each job is a wave of its own
    (alone on the cluster: a slow pair is the pair's, not another pair's
    traffic); `at_once`, a round's pairs make one wave each way."""
    n = len(cl.node_names())
    one = pair_place(cl)
    out: list[list[Job]] = []
    how = pairs.AT_ONCE if at_once else ""
    for rnd in pairs.schedule(n):
        there = [Job(core, f"latency@{lat},bw", one, opts, cluster=cl.pair(i, j, how))
                 for i, j in rnd]
        back = [Job(core, "bw", one, opts, cluster=cl.pair(j, i, how)) for i, j in rnd]
        if at_once:
            out += [there, back]
        else:
            out += [[a] for ab in zip(there, back, strict=True) for a in ab]
    return out


CPU_SETSIZE = 1024  # glibc's cpu_set_t: the CPUs the core's sched_setaffinity can name


def cpu_list(spec: str) -> list[int]:
    """--cpus "0-3,8": CPU numbers this process may run on, each once."""
    allowed = os.sched_getaffinity(0)
    out: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d{1,5})(?:-(\d{1,5}))?", part.strip())
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise CommscopeError(f"bad --cpus '{spec}': CPU numbers and ranges, as 0-3,8")
        out += range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1)
    if len(set(out)) != len(out):
        raise CommscopeError(f"--cpus '{spec}' names a CPU twice")
    if big := [c for c in out if c >= CPU_SETSIZE]:
        raise CommscopeError(f"--cpus: CPU {big[0]} is beyond the {CPU_SETSIZE} the core can "
                             "pin to")
    if not_here := [c for c in out if c not in allowed]:
        raise CommscopeError(f"--cpus: this process may not run on CPU {not_here[0]} (it may "
                             f"on {len(allowed)}: {id_ranges(sorted(allowed))})")
    return out


def pair_place(cl: cluster_mod.Cluster) -> cluster_mod.Placement:
    """A pair's placement: two nodes, a rank each, or two ranks of one node."""
    return cluster_mod.Placement(1, 2) if isinstance(cl, cluster_mod.Cores) else (
        cluster_mod.Placement(2, 1))


def _alone(a: argparse.Namespace, core: build_mod.Core, cl: cluster_mod.Cluster,
           opts: CoreOptions, names: list[str], slow: list[tuple[str, str]], bench: str,
           at: int, lat: int, limit: float, v: pairs.Verdict, what: str,
           figure: str = "median") -> list:
    """The slow pairs of a matrix at once, and two pairs near the typical
    one, measured again one pair at a time, and what that says of each
    slow pair (pairs.alone; of `figure`: a stall is judged by the stall's
    cut).  Their records are marked (pairs=alone after at once): a check,
    not a matrix."""
    refs = pairs.references(v)
    redo = [Job(core, f"latency@{lat},bw" if bench == "latency" else "bw", pair_place(cl),
                opts, cluster=cl.pair(*ij, pairs.ALONE))
            for x, y in [*slow, *refs] for ij in ((names.index(x), names.index(y)),
                                                  (names.index(y), names.index(x)))
            if bench == "bw" or ij[0] < ij[1]]
    st = Store(a.db)
    again = run_sweep(redo, st, argv=sys.argv, resume=False, timeout_s=limit,
                      policy=NoisePolicy(), repeat=a.repeat,
                      progress=Progress(len(redo) * a.repeat, enabled=not a.quiet,
                                        name=f"{bench} of the slow pairs, alone"))
    alone_rows = st.result_rows(run_ids=[o.run_id for o in again], narrowed=True)
    st.close()
    # the pairs surely above the typical one at once (pairs.slow_pairs: 1.2x) are measured
    # alone whether or not the verdict's cut named them (a stall's is 10x and 10 ms: at
    # once the round's pairs, sharing cores under emulated nodes, stall each other)
    named = bool(v.nodes or v.links)
    print(f"  the {len(slow)} {'slow pair(s)' if named else 'pair(s) surely above the typical one'}"
          f" and {len(refs)} typical one(s) measured again one pair at a time ({a.repeat} "
          "rounds):")
    cut = (pairs.STALL, pairs.STALL_US) if figure == "stall" else ()
    for line in pairs.alone(v, pairs.pairs_from(pairs.per_pair(alone_rows, bench, at, figure)),
                            refs, what, *cut):
        print(f"  {line}")
    return again


def _figure(a: argparse.Namespace, rows: list, cl: cluster_mod.Cluster, names: list[str],
            bench: str, at: int, what: str, alone_check, figure: str = "median") -> list:
    """One figure's matrix and verdict (each class of pairs apart: within a
    socket and across, for CPUs on several), and with --at-once the slow
    pairs measured alone (`alone_check`); the outcomes of those jobs."""
    more: list = []
    word = "CPU" if a.within_node else "node"
    sockets = cl.sockets() if isinstance(cl, cluster_mod.Cores) else {}
    first = True
    for label, keep in pairs.classes(sockets):
        # the CPUs this class has pairs of: one alone on its socket has none within
        mine = [x for x in names if keep is None or label != "within a socket"
                or list(sockets.values()).count(sockets[x]) > 1]
        got = pairs.judge(rows, bench, at, what, mine, word, keep, figure)
        if got is None:
            print(f"\n{what}{', ' + label if label else ''}: no pair measured")
            continue
        found, v = got
        if first:  # the matrix over the first class's typical pair, every pair in it
            typical = f" ({v.typical:.4g} us)" if v.typical > 0 else ""
            rows_are = ", rows send, columns receive" if bench == "bw" else ""
            whose = "this machine's" if a.within_node else "the cluster's"
            print(f"\n{what} ({bench}), each pair over {whose} typical pair"
                  f"{' ' + label if label else ''}{typical}{rows_are}:")
            if v.typical > 0:
                every = found if keep is None else pairs.pairs_from(
                    pairs.per_pair(rows, bench, at, figure))
                print(pairs.matrix_text(names, v.typical, every), end="")
            first = False
        if label:
            print(f"  {label}" + (f" (typical {v.typical:.4g} us)" if v.typical > 0 else "")
                  + ":")
        for line in v.lines:
            print(f"  {line}")
        if a.at_once and alone_check is not None and (slow := pairs.slow_pairs(v)):
            more += alone_check(slow, v)
    return more


def second_tries(first: list, second: list) -> list[tuple]:
    """Each failed first try with its second: run_sweep gives one outcome per
    job, in order (no --resume here), then those of any window it measured
    again narrower.  Beside other work a second try's window was narrowed,
    one outcome more, and pairing the lists whole ended `matrix` in an
    internal error."""
    return list(zip(first, second[:len(first)], strict=True))


@command("matrix")
def cmd_matrix(a: argparse.Namespace) -> int:
    if a.within_node:
        if a.cluster not in (None, "local"):
            raise CommscopeError(f"--within-node measures the CPUs of this machine, not of "
                                 f"{a.cluster}'s nodes: leave --cluster out")
        cl: cluster_mod.Cluster = cluster_mod.Cores(cpu_list(a.cpus) if a.cpus else None)
        if len(cl.node_names()) < 2:
            raise CommscopeError(
                (f"--cpus '{a.cpus}' names 1 CPU" if a.cpus else "this process may run on 1 CPU")
                + ": --within-node needs 2 or more (two ranks on one CPU measure its scheduler)")
    elif a.cpus:
        raise CommscopeError("--cpus chooses the CPUs of --within-node")
    elif a.cluster is None:
        raise CommscopeError("commscope matrix: --cluster emu:NAME, hostfile:PATH or slurm "
                             "(every pair of nodes), or --within-node (every pair of this "
                             "machine's CPUs)")
    else:
        cl = cluster_mod.parse(a.cluster)
    names = cl.node_names()
    if cl.kind not in ("emu", "hostfile") and not a.within_node:
        cl.pair(0, 1)  # says which clusters it runs on
    if len(names) < 2:
        raise CommscopeError(f"{cl.label} has {len(names)} node(s): a matrix needs 2 or more")
    if len(set(names)) != len(names):
        cl.pair(0, 1)  # names the duplicated host
    lat, size = parse_size(a.latency_size), parse_size(a.bw_size)
    for flag, v in (("--latency-size", lat), ("--bw-size", size)):
        if v < 1:
            raise CommscopeError(f"{flag} must be 1 byte or more: a message of 0 bytes "
                                 "tells nothing of a link")
    impl = _impl(a, cl)
    cl.check(impl, pair_place(cl) if a.within_node else cluster_mod.Placement(len(names), 1))
    core = build_mod.build(impl)
    opts = CoreOptions(sizes=str(size))  # type: ignore[call-arg]
    if a.stall_time:  # every size sampled that long at least: a node's stalls fall inside
        opts = dataclasses.replace(opts, min_time_s=a.stall_time,
                                   time_cap_s=max(opts.time_cap_s, a.stall_time))
    planned = waves(core, cl, opts, lat, a.at_once)
    njobs = sum(len(w) for w in planned)
    limit = a.timeout or default_timeout(opts, 1, 2)
    store = Store(a.db)
    t0 = time.monotonic()
    progress = Progress(njobs * a.repeat, enabled=not a.quiet, name="matrix")
    if a.at_once:
        outcomes = run_at_once(planned, store, argv=sys.argv, timeout_s=limit,
                               policy=NoisePolicy(), progress=progress, repeat=a.repeat)
    else:
        outcomes = run_sweep([j for w in planned for j in w], store, argv=sys.argv,
                             resume=False, timeout_s=limit, policy=NoisePolicy(),
                             progress=progress, repeat=a.repeat)
    # a pair whose job hung or failed is launched once more: a link that does not carry
    # fails again, a start-up that hung by chance does not (beside other work a healthy
    # pair under srun once failed, then ran into its timeout), and both are said.  One
    # pair at a time only: at once, a second try alone would be stored as taken beside
    # its round, which it was not
    first = [] if a.at_once else [o for o in outcomes if o.status in ("failed", "timeout")]
    progress.total += len(first)
    second = run_sweep([o.job for o in first], store, argv=sys.argv, resume=False,
                       timeout_s=limit, policy=NoisePolicy(), progress=progress) if first else []
    outcomes += second
    took = time.monotonic() - t0
    tries = second_tries(first, second)
    # a first try's records count only where the second did not get through
    retried = {id(o) for o, o2 in tries if o2.status == "ok"}
    ids = [o.run_id for o in outcomes if id(o) not in retried]
    rows = store.result_rows(run_ids=ids, narrowed=True)
    store.close()
    how = (f"each round's {len(names) // 2} pairs at once" if a.at_once
           else "one pair at a time")
    print(f"{cl.label}: {len(names)} {'CPUs' if a.within_node else 'nodes'}, {njobs} jobs "
          f"(each pair, bw both ways) x {a.repeat} rounds, {impl.name}, {how}, in {took:.0f} s")
    for o, o2 in tries:
        pair = " and ".join(getattr(o.job.cluster, "between", None) or ("?", "?"))
        print(f"  {pair}: {_failure(o, limit)}; "
              + ("on a second try it got through" if o2.status == "ok"
                 else f"again on a second try: {_failure(o2, limit)}"))
    outcomes = [o for o in outcomes if all(o is not f for f in first)]
    for bench, at, what in (("bw", size, f"time of one {human_bytes(size)} message"),
                            ("latency", lat, f"latency at {human_bytes(lat)}")):
        outcomes += _figure(a, rows, cl, names, bench, at, what,
                            lambda slow, v, bench=bench, at=at, what=what: _alone(
                                a, core, cl, opts, names, slow, bench, at, lat, limit, v, what))
    if a.stall_time:
        what = f"longest stall at {human_bytes(lat)}"
        outcomes += _figure(a, rows, cl, names, "latency", lat, what,
                            lambda slow, v: _alone(a, core, cl, opts, names, slow, "latency",
                                                   lat, lat, limit, v, what, "stall"),
                            figure="stall")
    for line in pairs.transports(rows):  # a pair whose bytes went another way
        print(f"  {line}")
    print(f"\nthe records: commscope show --db {shlex.quote(str(a.db))} --bench latency,bw")
    return 1 if any(o.status != "ok" for o in outcomes) else 0
