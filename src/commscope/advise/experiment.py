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
still only those it planned."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from ..analysis.diagnosis import Figures, Rounds
from ..measure.build import Core
from ..measure.cluster import Local, Placement
from ..measure.plan import CoreOptions, Job
from ..measure.runner import default_timeout, run_job
from ..store.benches import bench as bench_facts
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


def round_s(arms: Iterable[Arm], clock: Clock) -> float:
    return sum(clock.job_s(points(b, s, f), a.core.impl.name)
               for a in arms for b, s, f in a.jobs)


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
    rng = random.Random(seed)
    live = list(arms)
    t0 = time.monotonic()
    try:
        for k in range(rounds):
            r = first_round + k
            if round_s(live, clock) > clock.left():
                out.stopped = "budget"
                break
            order = list(live)
            if k % 2 == 1:
                order.reverse()  # an arm's place in the round alternates, then shuffles
            elif k > 0:
                rng.shuffle(order)
            if progress is not None:
                progress.total += sum(len(a.jobs) for a in order)
            for arm in order:
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
                    if o.status != OK:
                        fails[arm.name] = fails.get(arm.name, 0) + 1
                        if fails[arm.name] >= BROKEN_AFTER or arm.settings and "settings" in (
                                o.message or ""):
                            out.broken[arm.name] = f"{o.status}: {o.message}"[:300]
                        continue
                    figs.update(_figures(store, o.run_id, out))
                if figs:
                    out.figures.setdefault(arm.name, {})[r] = figs
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
