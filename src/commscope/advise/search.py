"""The tuning advisor: which settings make an implementation faster here,
over which message sizes, decided by statistics that hold between runs.

The search space comes from the implementation itself: its control
variables as the core reads them through MPI_T after MPI_Init (with their
current values and, for Open MPI, the names of their enumerations),
restricted to the settings known to matter for the benchmarks asked for.
Every candidate runs as its own configuration, interleaved with the default
in rounds whose order changes; a candidate's effect at a size is the ratio
default/candidate within each round (the two ran seconds apart, in the same
machine mode), and a 95% interval over the rounds.  A candidate wins a size
only where that interval lies above 1 and the median gains 5%; after the
third round, candidates surely slower at every size stop running.  A
candidate whose job fails, hangs or does not take its setting is recorded
as broken and dropped.  What it says and writes: tune_text.py; the command
from its inputs to the file handed over: tune_workflow.py."""

from __future__ import annotations

import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..analysis.algorithms import CHOSEN, MV2_ALGORITHMS, MV2_SHMEM_OFF, MV2_WITH, variable
from ..analysis.repeats import between, same_mode
from ..analysis.series import lone_is_no_claim, runs
from ..analysis.significance import MIN_FACTOR
from ..errors import CommscopeError
from ..measure import mpi as mpi_mod
from ..measure import provenance
from ..measure.build import Core
from ..measure.cluster import Local, Placement
from ..measure.plan import CoreOptions, Job
from ..measure.procs import run_bounded
from ..measure.runner import JobOutcome, run_job
from ..store.db import OK, Store
from ..store.records import parse_file
from ..store.sizes import expand_sizes

PRUNE_AFTER = 3  # rounds before a sure loser stops running

COLLS = CHOSEN  # the collectives whose algorithm a library lets a user choose
# MPICH algorithms a single-node search leaves out: smp splits the job by
# node, ccl hands the collective to an external library
MPICH_SKIP = ("smp", "ccl")
# UCX transports a shared-memory job can be given (UCX's own names), and
# rendezvous thresholds on either side of UCX's own choice ("auto")
UCX_TLS = ("posix,self", "sysv,self", "tcp,self")
UCX_RNDV = ("16k", "1m")


@dataclass(frozen=True)
class Candidate:
    settings: tuple[tuple[str, str], ...]
    why: str = ""

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.settings) or "default"


DEFAULT = Candidate((), "the implementation's defaults")


def _short_job(core: Core, extra_env: Mapping[str, str], timeout_s: float):
    """A 2-rank barrier of a few samples on this machine: enough to start
    the implementation and hear what it says.  (exit code, parsed records,
    stdout and stderr together)."""
    with tempfile.TemporaryDirectory(prefix="commscope-ask-") as tmp:
        t = Path(tmp)
        out = t / "records.jsonl"
        launch = Local().launch(core.impl, Placement(1, 2), str(core.exe),
                                ["--bench", "barrier", "--min-samples", "3", "--time-cap",
                                 "0.01", "--output", str(out)], t, provenance.n_cores(),
                                os.geteuid() == 0)
        env = mpi_mod.environ(core.impl.env, launch.env, extra_env)
        res = run_bounded(launch.argv, timeout_s=timeout_s, env=env, cwd=tmp,
                          stdout_path=t / "stdout", stderr_path=t / "stderr")
        # Intel MPI's startup notes go to stdout, the core's errors to stderr
        said = "".join((t / f).read_text(errors="replace") for f in ("stdout", "stderr"))
        return res.exit_code, parse_file(out), said


def read_cvars(core: Core, timeout_s: float = 60.0,
               settings: Sequence[tuple[str, str]] = ()) -> dict[str, dict[str, object]]:
    """Every control variable of the implementation with its value (and
    enumeration), read inside a 2-rank job on this machine, with these
    settings given (a configuration under study)."""
    mv2 = core.impl.variant == "mvapich2"  # its channel's variables are no MPI_T ones
    env = {**dict(settings), "COMMSCOPE_CVARS": "*", **({"MV2_SHOW_ENV_INFO": "2"} if mv2 else {})}
    code, parsed, said = _short_job(core, env, timeout_s)
    if code != 0 or parsed.header is None or parsed.header.cvars is None:
        err = said.strip().splitlines()
        ours = [x for x in err if x.startswith("cs-core")] or err[-1:]
        raise CommscopeError(f"cannot read {core.impl.name}'s control variables: "
                             + (ours[0] if ours else f"exit {code}"))
    out = {k: v for k, v in parsed.header.cvars.items() if isinstance(v, dict)}
    if mv2:
        from ..measure.settings import mv2_params

        out.update({k: {"value": v, "read": "MV2_SHOW_ENV_INFO"}
                    for k, v in mv2_params(said).items()})
    return out


INTEL_MAX_ALG = 64  # the most algorithm numbers asked of Intel MPI (2021.18: 32 allreduce)


def intel_algorithms(core: Core, colls: Sequence[str], timeout_s: float = 60.0
                     ) -> dict[str, list[int]]:
    """The algorithm numbers Intel MPI accepts for each collective's
    I_MPI_ADJUST_<OP>: its algorithms are not MPI_T variables, but it says at
    startup which number it ignores.  One short job per number, every
    collective asked at once, until it ignores them all."""
    from ..measure.settings import intel_ignored

    left = list(colls)
    found: dict[str, list[int]] = {c: [] for c in colls}
    for k in range(1, INTEL_MAX_ALG + 1):
        if not left:
            break
        code, _, said = _short_job(
            core, {f"I_MPI_ADJUST_{c.upper()}": str(k) for c in left}, timeout_s)
        if code != 0:
            raise CommscopeError(f"asking Intel MPI for its algorithms failed (exit {code}): "
                                 f"{said.strip().splitlines()[-1:]}")
        ignored = intel_ignored(said)
        for c in list(left):
            if f"I_MPI_ADJUST_{c.upper()}" in ignored:
                left.remove(c)
            else:
                found[c].append(k)
    return found


def space(core: Core, cvars: Mapping[str, Mapping[str, object]],
          benches: Sequence[str], algorithms: Mapping[str, Sequence[object]] | None = None
          ) -> list[Candidate]:
    """The candidates worth measuring for these benchmarks, from what the
    implementation says it has: its control variables, and each
    collective's algorithms as it names them (Intel MPI's accepted numbers,
    the names in MPICH's selection tables)."""
    fam = core.impl.family
    out: list[Candidate] = []
    p2p = any(core.bench(b).get("group") in ("p2p", "loggp") for b in benches)

    def value(name: str) -> str | None:
        v = cvars.get(name, {}).get("value")
        return None if v is None else str(v)

    if fam == "openmpi":
        name = "btl_vader_single_copy_mechanism"
        if name in cvars and p2p:
            for item in cvars[name].get("enum", []) or []:  # type: ignore[union-attr]
                if item != value(name):
                    out.append(Candidate(((f"OMPI_MCA_{name}", str(item)),),
                                         f"shared-memory single copy: {item}"))
        name = "btl_vader_eager_limit"
        if name in cvars and p2p and (v := value(name)) and v.isdigit():
            for k in (int(v) // 2, int(v) * 4):
                if k >= 1024:
                    out.append(Candidate(((f"OMPI_MCA_{name}", str(k)),), "eager limit"))
        for b in benches:
            name = variable("openmpi", b)
            if b in COLLS and name in cvars:
                for item in cvars[name].get("enum", []) or []:  # type: ignore[union-attr]
                    if item != "ignore":
                        out.append(Candidate(
                            (("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
                             (f"OMPI_MCA_{name}", str(item))), f"{b} algorithm {item}"))
    elif core.impl.variant == "mvapich2":  # its own tables, not MPICH's variables
        if any(b in COLLS or b in MV2_ALGORITHMS for b in benches):
            out.append(Candidate(MV2_SHMEM_OFF, "MVAPICH2's collectives without shared memory"))
        for b in benches:
            var, algs = MV2_ALGORITHMS.get(b, ("", {}))
            out.extend(Candidate(tuple(sorted(((var, v), *MV2_WITH.get(b, ())))),
                                 f"{b} algorithm {name}") for v, name in algs.items())
    elif fam == "intel":
        for b in benches:
            for k in (algorithms or {}).get(b, ()):
                out.append(Candidate(((f"I_MPI_ADJUST_{b.upper()}", str(k)),),
                                     f"{b} algorithm {k}"))
    elif fam == "mpich":
        if p2p:
            out.extend(Candidate((("UCX_TLS", t),), f"UCX transports {t}") for t in UCX_TLS)
            out.extend(Candidate((("UCX_RNDV_THRESH", t),), f"UCX rendezvous from {t}")
                       for t in UCX_RNDV)
        if "MPIR_CVAR_DEVICE_COLLECTIVES" in cvars and any(b in COLLS for b in benches):
            # MPICH 5's device (shared-memory) collectives answer a single
            # node before its own selection is asked
            out.append(Candidate((("MPIR_CVAR_DEVICE_COLLECTIVES", "none"),),
                                 "MPICH's own collectives instead of the device's"))
        for b in benches:
            name = variable("mpich", b)
            if b in COLLS and name in cvars:
                out.extend(Candidate(((name, str(a)),), f"{b} algorithm {a}")
                           for a in (algorithms or {}).get(b, ()) if a not in MPICH_SKIP)
    if provenance.n_cores() >= 2:
        # the launcher's default here binds each rank to a core of its own
        out.append(Candidate((("COMMSCOPE_BIND", "none"),), "ranks not bound to cores"))
    return out


def algorithm_candidates(core: Core, coll: str) -> list[Candidate]:
    """One collective's algorithms as `tune` searches them, from what the
    implementation says it has (Open MPI's enumerations, the names in
    MPICH's selection tables); none for Intel MPI, whose numbers take a job
    each to ask (`commscope tune` does that)."""
    if core.impl.family not in ("openmpi", "mpich") or coll not in COLLS:
        return []
    if core.impl.variant == "mvapich2":
        return [c for c in space(core, {}, [coll]) if not any(
            k == "COMMSCOPE_BIND" for k, _ in c.settings)]
    algorithms = None
    if core.impl.family == "mpich":
        from . import selection

        algorithms = dict(selection.mpich_library(core.exe, core.impl.env).algorithms)
    return [c for c in space(core, read_cvars(core), [coll], algorithms)
            if not any(k == "COMMSCOPE_BIND" for k, _ in c.settings)]


@dataclass(frozen=True)
class Effect:
    """A candidate against the default at one size of one benchmark."""
    bench: str
    size: int
    ratio: float  # default time / candidate time: above 1 the candidate is faster
    lo: float
    hi: float
    n: int

    @property
    def wins(self) -> bool:
        return self.n >= 3 and self.lo > 1.0 and self.ratio >= MIN_FACTOR

    @property
    def loses(self) -> bool:
        return self.n >= 3 and self.hi < 1.0 and self.ratio <= 1.0 / MIN_FACTOR


@dataclass
class Outcome:
    cand: Candidate
    state: str = "measured"  # measured | pruned | broken
    reason: str = ""
    effects: list[Effect] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)

    def ranges(self, which: str) -> list[tuple[str, int, int, list[Effect]]]:
        """Runs of consecutive measured sizes (per benchmark) that win or
        lose, where a neighbouring size says the same (series.lone_is_no_claim)."""
        out: list[tuple[str, int, int, list[Effect]]] = []
        for bench in sorted({e.bench for e in self.effects}):
            es = sorted((e for e in self.effects if e.bench == bench), key=lambda e: e.size)
            marks = lone_is_no_claim([(e.size, "W" if e.wins else "L" if e.loses else "=")
                                      for e in es])
            want = "W" if which == "wins" else "L"
            at = {e.size: e for e in es}
            out += [(bench, sizes[0], sizes[-1], [at[x] for x in sizes])
                    for m, sizes in runs(marks) if m == want]
        return out

    @property
    def gain(self) -> float:
        """How much it saves over the sizes it wins, less what it costs where
        it loses (sum of log ratios): what orders the recommendations."""
        return sum(math.log(e.ratio) for which in ("wins", "loses")
                   for *_, es in self.ranges(which) for e in es)


Floors = Mapping[int, Mapping[tuple[str, int], float]]


def effects(per_round: Mapping[int, Mapping[tuple[str, int], float]],
            base: Mapping[int, Mapping[tuple[str, int], float]],
            floors: Floors | None = None, base_floors: Floors | None = None,
            mode_ns: float | None = None) -> list[Effect]:
    """Paired ratios per round, then their median and between-round
    interval; a round whose two records were taken in different machine
    modes (their floors apart) pairs nothing at that size, nor, where
    `mode_ns` names the mode asked about, one taken in another mode."""
    keys = sorted({k for r in per_round.values() for k in r})
    out = []

    def paired(r: int, key: tuple[str, int]) -> bool:
        a = (floors or {}).get(r, {}).get(key)
        b = (base_floors or {}).get(r, {}).get(key)
        return same_mode(a, b) and (mode_ns is None or (same_mode(a, mode_ns)
                                                        and same_mode(b, mode_ns)))

    for key in keys:
        ratios = [base[r][key] / per_round[r][key] for r in per_round
                  if r in base and key in base[r] and key in per_round[r] and per_round[r][key] > 0
                  and paired(r, key)]
        if ratios:
            b = between(ratios)
            out.append(Effect(key[0], key[1], b.median, b.lo, b.hi, len(ratios)))
    return out


def _medians(store: Store, run_id: int) -> dict[tuple[str, int], float]:
    return {(str(r["bench"]), int(r["size_bytes"])): float(r["median_us"])
            for r in store.result_rows(latest=False, run_ids=[run_id])
            if r["valid"] and r["median_us"]}


def _floors(store: Store, run_id: int) -> dict[tuple[str, int], float]:
    return {(str(r["bench"]), int(r["size_bytes"])): float(r["floor_ns"])
            for r in store.result_rows(latest=False, run_ids=[run_id])
            if r["valid"] and r["floor_ns"]}


def _why(out: JobOutcome) -> str:
    """The job's status, its message and the first line its stderr adds."""
    extra = next((x.strip() for x in out.stderr_tail.splitlines()
                  if x.strip() and x.strip() != out.message), "")
    return f"{out.status}: {out.message}" + (f" ({extra[:160]})" if extra else "")


def estimate_s(opts: CoreOptions, benches: Sequence[str]) -> float:
    """A job's time at most: start-up, then each size's sampling cap,
    warm-up and validation."""
    n = len(expand_sizes(opts.sizes, opts.factor))
    return 3.0 + len(benches) * n * (opts.time_cap_s + opts.warmup_s + 0.05)


@dataclass(frozen=True)
class Measured:
    ok: bool
    run_id: int
    reason: str  # why not ok
    medians: dict[tuple[str, int], float]  # (benchmark, size) -> median time, us
    # (benchmark, size) -> the core-to-core floor the record was taken at, ns
    floors: dict[tuple[str, int], float] = field(default_factory=dict)


def measure_job(job: Job, store: Store, sweep: int, pos: int, *, timeout_s: float,
                policy) -> Measured:
    out = run_job(job, store, sweep, timeout_s=timeout_s, policy=policy, round_pos=pos)
    if out.status != OK:
        return Measured(False, out.run_id, _why(out), {})
    return Measured(True, out.run_id, "", _medians(store, out.run_id),
                    _floors(store, out.run_id))


def close(o: Outcome) -> bool:
    """A contender not yet decided: at some size its median gains the
    factor that counts, but the between-round interval still reaches 1; or
    no round has paired it yet (every one taken across machine modes)."""
    return o.state == "measured" and (not o.effects or any(
        e.ratio >= MIN_FACTOR and not e.wins and not e.loses for e in o.effects))


def search(core: Core, benches: Sequence[str], opts: CoreOptions, cands: Sequence[Candidate],
           store: Store, *, rounds: int, budget_s: float, argv: Sequence[str],
           timeout_s: float, policy, progress, seed: int = 0, extra_rounds: int = 0,
           measure: Callable[..., Measured] = measure_job, purpose: str = "tune",
           base: Sequence[tuple[str, str]] = (), job_s: float | None = None,
           mode_ns: float | None = None) -> list[Outcome]:
    """Every candidate and the default, interleaved over `rounds` rounds;
    then up to `extra_rounds` more of the default and the close contenders
    only, while the time spent leaves the budget room for another.  `base`:
    the settings of the configuration under study, which the default runs
    with and each candidate overrides; `job_s`: one job's time where the
    caller knows it better than estimate_s's bound; `mode_ns`: the machine
    mode (core-to-core floor) the effects are asked in (search.effects)."""
    per_job = job_s or estimate_s(opts, benches)
    need = (len(cands) + 1) * rounds * per_job
    if need > budget_s:
        raise CommscopeError(
            f"a search of {len(cands)} candidate(s) and the default over {rounds} rounds needs "
            f"up to {need:.0f} s, more than --budget {budget_s:.0f} s: narrow --sizes or "
            f"--bench, lower --rounds, or raise --budget")
    place = Placement(1, 2)
    bench = ",".join(benches)
    everyone = [DEFAULT, *cands]
    results = {c: Outcome(c) for c in everyone}
    rounds_of: dict[Candidate, dict[int, dict[tuple[str, int], float]]] = {c: {} for c in everyone}
    floors_of: dict[Candidate, dict[int, dict[tuple[str, int], float]]] = {c: {} for c in everyone}
    plan = [{"tune": c.label, "bench": bench} for c in everyone]
    sweep = store.begin_sweep(argv, plan, purpose)
    rng = random.Random(seed)
    t0 = time.monotonic()
    # the jobs planned, counted on the progress another search may share:
    # every candidate and the default each round; fewer as candidates are
    # pruned or break, more for each extra round
    progress.total += len(everyone) * rounds
    try:
        for r in range(1, rounds + extra_rounds + 1):
            active = [c for c in everyone if results[c].state == "measured"]
            if r > rounds:
                active = [DEFAULT, *(c for c in cands if close(results[c]))]
                if len(active) == 1 or (time.monotonic() - t0
                                        + len(active) * per_job > budget_s):
                    break
                progress.total += len(active)
            else:
                progress.total -= len(everyone) - len(active)
            order = list(active)
            if r > 1:
                rng.shuffle(order)
            for pos, c in enumerate(order):
                settings = tuple(sorted({**dict(base), **dict(c.settings)}.items()))
                job = Job(core, bench, place, opts, Local(), settings, rep=r, strict=True)
                progress.start(job.label)
                m = measure(job, store, sweep, pos, timeout_s=timeout_s, policy=policy)
                progress.end(job.label, "ok" if m.ok else "broken")
                results[c].run_ids.append(m.run_id)
                if not m.ok:
                    if c is DEFAULT:
                        raise CommscopeError(f"the default configuration failed in round {r} "
                                             f"({m.reason}): nothing to compare against")
                    results[c].state, results[c].reason = "broken", m.reason
                    continue
                rounds_of[c][r] = m.medians
                floors_of[c][r] = m.floors
            for c in active[1:] if r > rounds else cands:
                o = results[c]
                if o.state == "measured":
                    o.effects = effects(rounds_of[c], rounds_of[DEFAULT], floors_of[c],
                                        floors_of[DEFAULT], mode_ns)
                    if r >= PRUNE_AFTER and o.effects and all(e.loses for e in o.effects):
                        o.state, o.reason = "pruned", f"slower at every size after round {r}"
    finally:
        store.end_sweep(sweep)
        progress.close()
    return [results[c] for c in cands]


def best(outcomes: Sequence[Outcome]) -> Outcome | None:
    """The candidate to recommend: it wins somewhere and saves most overall."""
    ok = [o for o in outcomes if o.state == "measured" and o.ranges("wins")]
    return max(ok, key=lambda o: o.gain, default=None)


def check_settings(core: Core, benches: Sequence[str], opts: CoreOptions,
                   settings: Sequence[tuple[str, str]], store: Store, *, argv: Sequence[str],
                   timeout_s: float, policy) -> Measured:
    """One short job of the benchmarks over the search's sizes with these
    settings, strict and validated: does the implementation take what was
    written for it (a selection file it cannot parse, or whose algorithm
    cannot run, fails here rather than in the user's job)."""
    quick = replace(opts, min_samples=3, time_cap_s=min(opts.time_cap_s, 0.02))
    job = Job(core, ",".join(benches), Placement(1, 2), quick, Local(), tuple(settings),
              strict=True)
    sweep = store.begin_sweep(argv, [{"check": " ".join(f"{k}={v}" for k, v in settings)}],
                              "check")
    try:
        return measure_job(job, store, sweep, 0, timeout_s=timeout_s, policy=policy)
    finally:
        store.end_sweep(sweep)


def together(core: Core, benches: Sequence[str], opts: CoreOptions,
             settings: Sequence[tuple[str, str]], store: Store, *, rounds: int,
             budget_s: float, argv: Sequence[str], timeout_s: float, policy,
             progress) -> Outcome | None:
    """The settings handed over (per-size choices and the best winner
    besides, which the search only measured apart) against the default,
    together, in rounds of their own; None where the budget left cannot
    hold them."""
    handed = Candidate(tuple(settings), "the settings handed over")
    if 2 * rounds * estimate_s(opts, benches) > budget_s:
        return None
    (o,) = search(core, benches, opts, [handed], store, rounds=rounds, budget_s=budget_s,
                  argv=argv, timeout_s=timeout_s, policy=policy, progress=progress, seed=2)
    return o


def validate(core: Core, winner: Candidate, app: str, param: str, opts: CoreOptions,
             store: Store, *, rounds: int, argv: Sequence[str], timeout_s: float, policy,
             progress) -> list[Effect]:
    """The winner against the default on an application's end-to-end time."""
    app_opts = replace(opts, param=param)
    (o,) = search(core, [app], app_opts, [winner], store, rounds=rounds, budget_s=float("inf"),
                  argv=argv, timeout_s=timeout_s, policy=policy, progress=progress, seed=1)
    if o.state == "broken":
        raise CommscopeError(f"the winning settings broke {app}: {o.reason}")
    return o.effects
