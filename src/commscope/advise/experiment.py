"""Experiments: configurations run side by side in interleaved rounds.

An experiment is a set of arms, each one configuration (an implementation
with its settings) and the benchmarks and sizes it is asked for.  Every
round runs each arm's jobs once, in an order that changes from round to
round, so that two arms' figures in one round were taken seconds apart,
in the same state of the machine: their ratio within the round is the
paired figure the diagnosis judges (analysis/diagnosis.py).  Rounds stop
when the caller says the question is decided, when the deadline would be
passed by the next job, or at the most rounds asked; an arm whose job
fails twice is broken and stops running.

Every job is an ordinary run of the store, kept in the sweep it concerns
and marked with the experiment (`trial`): what was measured stays stored
whatever happens next (Ctrl-C included), and the sweep's own runs are
still only those it planned.

Arms of one implementation whose settings cannot reach each other's
benchmarks share a job (packs): MPICH's alltoall algorithm forced beside
its reduce_scatter algorithm, each measured on its own call only.  A
job's start costs 0.15-0.4 s here against about 10 ms a size, and a wave
of hypotheses is mostly starts.  A setting shares a job only where the
library's sources bound what it changes (scope: a bcast algorithm reaches
the allreduce and allgather built from it, never an alltoall); every
point-to-point setting keeps a job of its own."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from ..analysis.diagnosis import Figures, Rounds
from ..measure.build import Core
from ..measure.cluster import Local, Placement
from ..measure.plan import CoreOptions, Job
from ..measure.runner import default_timeout, run_job
from ..store.core_facts import bench as bench_facts
from ..store.db import OK, Store
from ..store.sizes import expand_sizes

JOB_START_S = 0.5  # a 2-rank job's start and end here (0.1-0.4 s measured), before its sizes
POINT_S = 0.03  # one benchmark at one size, as a first guess (the sweep's took ~14 ms)
BROKEN_AFTER = 2  # failed jobs before an arm stops running


@dataclass(frozen=True)
class Arm:
    """One configuration in an experiment: `name` is its identity within
    the diagnosis (the same configuration keeps its name across the
    experiments, so their rounds can be read together); `jobs`: the
    benchmarks (comma-separated) and the sizes (MIN:MAX, factor) of each
    job a round runs for it."""

    name: str
    core: Core
    place: Placement
    opts: CoreOptions
    settings: tuple[tuple[str, str], ...] = ()
    jobs: tuple[tuple[str, str, int], ...] = ()
    strict: bool = True  # a setting the job does not take fails it

    def job_list(self, trial: str, rep: int) -> list[Job]:
        return [Job(self.core, benches, self.place, replace(self.opts, sizes=sizes, factor=f),
                    Local(), self.settings, rep=rep, strict=self.strict, trial=trial)
                for benches, sizes, f in self.jobs]

    def points(self) -> int:
        return sum(points(b, s, f) for b, s, f in self.jobs)


def points(benches: str, sizes: str, factor: int) -> int:
    """Benchmark-sizes a job measures: each benchmark over its own sizes
    (NAME@SIZES, the core's syntax) or the job's; a sizeless one at one."""
    return sum(1 if bench_facts(b.split("@", 1)[0]).sizeless else
               len(expand_sizes(b.split("@", 1)[1] if "@" in b else sizes, factor))
               for b in benches.split(","))


def _figures(store: Store, run_id: int, rounds: Rounds) -> Figures:
    """A run's figures; one flagged noisy is left out, and counted."""
    out: Figures = {}
    for r in store.result_rows(latest=False, run_ids=[run_id]):
        rounds.points += 1
        if r["flagged"]:
            rounds.noisy += 1
            continue
        if r["valid"] and r["median_us"]:
            out[(str(r["bench"]), int(r["size_bytes"]))] = (
                float(r["median_us"]), float(r["floor_ns"]) if r["floor_ns"] else None,
                int(r["window"]) if r["window"] else None)
    return out


class Clock:
    """The deadline an experiment keeps, and how long its jobs take here,
    learned as they run: each implementation's start (Open MPI's launcher
    takes 0.4 s here, MPICH's 0.15 s) and the time a benchmark takes at one
    size; the first guesses are generous.  `seen` is shared by the clocks
    of one diagnosis."""

    BIG = 20  # points from which a job tells the time per point

    def __init__(self, deadline: float, seen: list[tuple[str, int, float]] | None = None
                 ) -> None:
        self.deadline = deadline
        self.seen: list[tuple[str, int, float]] = seen if seen is not None else []

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def _per_point(self) -> float:
        xs = sorted((t - self._start("")) / n for _, n, t in self.seen if n >= self.BIG)
        return max(0.0, xs[len(xs) // 2]) if xs else POINT_S

    def _start(self, impl: str) -> float:
        xs = sorted(t for m, n, t in self.seen if n < self.BIG and (m == impl or not impl))
        return xs[len(xs) // 2] if xs else JOB_START_S

    def job_s(self, points: int, impl: str = "") -> float:
        return self._start(impl) + points * self._per_point()

    def learn(self, points: int, seconds: float, impl: str = "") -> None:
        self.seen.append((impl, points, seconds))


MAX_PACK = 6  # arms one job measures at most (a longer job risks more on one failure)
# what a forced algorithm of one collective can change: the call, and the
# collectives the libraries build from it (Open MPI's allreduce
# `nonoverlapping` is its reduce then its bcast, allgather `basic_linear` its
# gather then its bcast, reduce_scatter_block `basic_linear` its reduce then a
# scatterv; MPICH's node-aware barrier ends in a one-byte bcast, its smp
# allreduce is a reduce then a bcast); none of alltoall, allgather,
# allreduce and reduce_scatter is called inside another collective.  A
# barrier's reaches every collective: the core's loop meets in one after
# each timed call, and where ranks leave it decides where the next starts.
_REACH = {"allreduce": {"allreduce"}, "alltoall": {"alltoall"}, "allgather": {"allgather"},
          "reduce_scatter_block": {"reduce_scatter"},
          "bcast": {"bcast", "allreduce", "allgather", "barrier"},
          "reduce": {"reduce", "allreduce", "reduce_scatter"},
          "gather": {"gather", "allgather"}, "scatter": {"scatter", "reduce_scatter"}}
_SCOPED = (re.compile(r"^MPIR_CVAR_([A-Z_]+?)_(?:POSIX_)?(?:INTRA_ALGORITHM|DEVICE_COLLECTIVE)$"),
           re.compile(r"^OMPI_MCA_coll_tuned_([a-z_]+)_algorithm$"),
           re.compile(r"^I_MPI_ADJUST_([A-Z_]+)$"))


def scope(var: str) -> set[str] | None:
    """The benchmarks a setting can change, or None: it may change any."""
    for rx in _SCOPED:
        m = rx.match(var)
        if m:
            reach = _REACH.get(m.group(1).lower())
            return set(reach) if reach is not None else None
    return None


def _benches(a: Arm) -> set[str]:
    return {b.split("@", 1)[0] for benches, _, _ in a.jobs for b in benches.split(",")}


def _fits(a: Arm, b: Arm) -> bool:
    """May a and b share a job: one library and options, no benchmark in
    common, no setting of one that the other's benchmarks could feel (a
    setting both carry alike is in both jobs anyway)."""
    if (a.core.impl.name != b.core.impl.name or a.place != b.place or a.opts != b.opts
            or a.strict != b.strict or len(a.jobs) != 1 or len(b.jobs) != 1
            or a.jobs[0][1:] != b.jobs[0][1:]):
        return False
    ba, bb = _benches(a), _benches(b)
    if ba & bb:
        return False
    sa, sb = dict(a.settings), dict(b.settings)
    for k in sa.keys() & sb.keys():
        if sa[k] != sb[k]:
            return False
    for mine, theirs in ((sa, bb), (sb, ba)):
        for k in mine.keys() - (sa.keys() & sb.keys()):
            sc = scope(k)
            if sc is None or sc & theirs:
                return False
    return True


def packs(arms: Sequence[Arm], alone: Iterable[str] = ()) -> list[tuple[Arm, ...]]:
    """The arms in jobs: each pack one job, in the arms' order.  `alone`:
    arms that run by themselves (their shared job failed)."""
    solo = set(alone)
    out: list[list[Arm]] = []
    for a in arms:
        for p in out if a.name not in solo else ():
            if (len(p) < MAX_PACK and p[0].name not in solo
                    and all(_fits(a, b) for b in p)):
                p.append(a)
                break
        else:
            out.append([a])
    return [tuple(p) for p in out]


def joined(pack: Sequence[Arm]) -> Arm:
    """One arm that runs a pack's job: every member's settings and benchmarks."""
    if len(pack) == 1:
        return pack[0]
    a = pack[0]
    settings = tuple(sorted({k: v for m in pack for k, v in m.settings}.items()))
    benches = ",".join(m.jobs[0][0] for m in pack)
    return Arm("+".join(m.name for m in pack), a.core, a.place, a.opts, settings,
               ((benches, *a.jobs[0][1:]),), a.strict)


def round_s(arms: Iterable[Arm], clock: Clock) -> float:
    return sum(clock.job_s(points(b, s, f), a.core.impl.name)
               for a in map(joined, packs(list(arms))) for b, s, f in a.jobs)


def run(arms: Sequence[Arm], store: Store, *, sweep_id: int | None, trial: str,
        clock: Clock, rounds: int, policy, progress=None, seed: int = 0,
        active: Callable[[Rounds, int], Sequence[str] | None] | None = None,
        first_round: int = 1) -> Rounds:
    """Run the arms in interleaved rounds, at most `rounds` of them.
    `active(result, round)`, asked after each round: the names of the arms
    the next round still needs (None or empty: the experiment is decided).
    A round starts only where the deadline holds all of it; a job only
    where the deadline holds it."""
    out = Rounds()
    fails: dict[str, int] = {}
    # arms whose shared job failed run by themselves; one that then runs well
    # alone shares again, unless its shared jobs failed twice (the settings
    # may fail only together): the one that failed it stays alone
    alone: set[str] = set()
    in_failed: dict[str, int] = {}
    rng = random.Random(seed)
    live = list(arms)
    t0 = time.monotonic()
    try:
        for k in range(rounds):
            r = first_round + k
            if round_s(live, clock) > clock.left():
                out.stopped = "budget"
                break
            order = packs(live, alone)
            if k % 2 == 1:
                order.reverse()  # an arm's place in the round alternates, then shuffles
            elif k > 0:
                rng.shuffle(order)
            if progress is not None:
                progress.total += sum(len(joined(p).jobs) for p in order)
            while order:
                pack = order.pop(0)
                arm = joined(pack)
                figs: Figures = {}
                for job in arm.job_list(trial, r):
                    n = points(job.bench, job.opts.sizes, job.opts.factor)
                    t = default_timeout(job.opts, n, 1)
                    if progress is not None:
                        progress.start(job.label)
                    t1 = time.monotonic()
                    o = run_job(job, store, sweep_id,
                                timeout_s=min(t, 30 + 4 * clock.job_s(n, arm.core.impl.name)),
                                policy=policy)
                    clock.learn(n, time.monotonic() - t1, arm.core.impl.name)
                    out.run_ids.append(o.run_id)
                    if progress is not None:
                        progress.end(job.label, o.status)
                    if o.status != OK and len(pack) > 1:
                        # which one failed it: each runs alone, in this round already
                        alone.update(m.name for m in pack)
                        for m in pack:
                            in_failed[m.name] = in_failed.get(m.name, 0) + 1
                        order[:0] = [(m,) for m in pack]
                        if progress is not None:
                            progress.total += len(pack)
                        break
                    if o.status != OK:
                        fails[arm.name] = fails.get(arm.name, 0) + 1
                        if fails[arm.name] >= BROKEN_AFTER or arm.settings and "settings" in (
                                o.message or ""):
                            out.broken[arm.name] = f"{o.status}: {o.message}"[:300]
                        continue
                    figs.update(_figures(store, o.run_id, out))
                    if len(pack) == 1 and in_failed.get(arm.name, 0) < 2:
                        alone.discard(arm.name)  # not the one that failed its shared job
                for m in pack:
                    mine = _benches(m)
                    got = {k: v for k, v in figs.items() if k[0] in mine}
                    if got:
                        out.figures.setdefault(m.name, {})[r] = got
            live = [a for a in live if a.name not in out.broken]
            if active is not None:
                want = active(out, r)
                if not want:
                    out.stopped = "decided"
                    break
                live = [a for a in live if a.name in set(want)]
    except KeyboardInterrupt:
        # the job in flight was killed and stored as interrupted (runner.run_job):
        # what the rounds measured before it stands, and the caller says so
        out.stopped = "interrupted"
    finally:
        out.seconds = time.monotonic() - t0
    return out
