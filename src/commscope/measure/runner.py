"""Sweeps: run each planned job (plan.py) under its timeout, store its
records as soon as it ends, flag (and optionally retry) noisy ones, and
measure again at a common window where the time bound narrowed one
configuration's and not another's."""

from __future__ import annotations

import functools
import os
import pickle
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..errors import CommscopeError
from ..store import core_facts
from ..store import db as db_mod
from ..store.db import FAILED, INVALID, OK, RETRIED, SKIPPED, TIMEOUT, RunInfo, Store
from ..store.records import Parsed, Result, parse_file
from ..store.sizes import expand_sizes, human
from . import mpi as mpi_mod
from . import noise as noise_mod
from . import provenance
from . import settings as settings_mod
from .build import loaded_library
from .cluster import transport_check
from .plan import CoreOptions, Job
from .procs import SIGKILL_WAITS_S, run_bounded
from .procs import Outcome as Ended
from .progress import Progress

# The core's exit statuses that classify() tells apart from a plain failure
# (core/harness/cs.h, enum cs_status; the others are failures as any code).
CS_EINVALID = core_facts.statuses()["invalid"]  # data validation failed: the MPI moved wrong bytes
CS_ESKIP = core_facts.statuses()["skip"]  # a GPU path this machine cannot run: skipped, said why


@dataclass(frozen=True)
class NoisePolicy:
    """A record is flagged when other processes used more than
    `max_other_cores` of a core on average while it was measured, or the
    hypervisor stole more than `max_steal` of the wall time."""

    max_other_cores: float = 0.10
    max_steal: float = 0.05
    min_ticks_s: float = 0.03  # /proc/stat counts 10 ms ticks: ignore less
    retries: int = 0

    def flag_job(self, job_noise: dict[str, object]) -> bool:
        """Short records cannot resolve 10 ms ticks; the job as a whole can."""
        if not job_noise.get("valid"):
            return False
        other = float(job_noise.get("other_cpu_s") or 0.0)  # type: ignore[arg-type]
        wall = float(job_noise.get("wall_s") or 0.0)  # type: ignore[arg-type]
        return wall > 0 and other >= self.min_ticks_s and other / wall > self.max_other_cores

    def flag(self, r: Result) -> bool:
        if not r.noise_valid or not r.wall_s or r.wall_s <= 0:
            return False
        other = r.other_cpu_s or 0.0
        steal = r.steal_s or 0.0
        return ((other >= self.min_ticks_s and other / r.wall_s > self.max_other_cores)
                or (steal >= self.min_ticks_s and steal / r.wall_s > self.max_steal))


@dataclass
class JobOutcome:
    job: Job
    run_id: int
    status: str
    parsed: Parsed
    flags: list[bool] = field(default_factory=list)
    message: str = ""
    transport: dict[str, object] | None = None
    stderr_tail: str = ""  # as stored with the run


def default_timeout(opts: CoreOptions, nsizes: int, nbenches: int = 1) -> float:
    """Generous: every size of every benchmark may run to its cap, plus
    calibration, validation and start-up."""
    return 30.0 + nbenches * nsizes * (3.0 * opts.time_cap_s + opts.warmup_s + 2.0)


# the lines of UCX's protocol tables ("[time] [host:pid:tid]   | 0..92 | ...")
_UCX_TABLE_LINE = re.compile(r"^\[[^\]]*\] \[[^\]]*\]\s+[|+].*\n?", re.M)


def _stderr_tail(path: Path, limit: int = 4000) -> str:
    """The end of a job's stderr, less UCX's protocol tables (read apart)."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return _UCX_TABLE_LINE.sub("", data.decode(errors="replace"))[-limit:]


def _aborts(folder: Path) -> list[str]:
    """The reasons ranks that aborted wrote into the job's folder."""
    out = []
    for f in sorted(folder.glob("abort-*.err")):
        try:
            out += [x for x in f.read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            pass
    return out


@functools.lru_cache(maxsize=32)
def ucx_prints_protocols(exe: Path, ld_path: str) -> bool:
    """Whether the UCX the core loads has UCX_PROTO_INFO, under which it
    prints the protocol it chose for each range of sizes (UCX 1.13 has the
    variable but prints nothing on its older selection; Open MPI and Intel
    MPI here load no UCX)."""
    lib = loaded_library(exe, {"LD_LIBRARY_PATH": ld_path} if ld_path else {}, r"libucp")
    try:
        return lib is not None and b"PROTO_INFO" in lib.read_bytes()
    except OSError:
        return False


# Seconds a job may take to exit once its last record is written.
EXIT_GRACE_S = 10.0


def footer_written(path: Path) -> bool:
    """The core writes its footer line last, just before MPI_Finalize."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            tail = f.read()
    except OSError:
        return False
    return b'"type":"footer"' in tail and tail.endswith(b"\n")


def payload_bytes(results: Sequence[Result]) -> int:
    """A lower bound of the bytes a job's timed iterations moved between
    its two farthest ranks: one message of each size per iteration."""
    return sum(r.size_bytes * (r.n_iters or 0) for r in results)


def classify(outcome: Ended, parsed: Parsed, timeout_s: float) -> tuple[str, str]:
    """A finished job's status and what to say of it, from how the process
    ended and what it wrote (the core's exit statuses: cs.h, enum
    cs_status)."""
    if outcome.hung_at_exit:
        status = TIMEOUT
        msg = (f"every record was written, then the job did not exit within "
               f"{EXIT_GRACE_S:.0f}s (hung in MPI_Finalize?): killed")
    elif outcome.timed_out:
        status = TIMEOUT
        msg = f"killed after {timeout_s:.0f}s timeout"
    elif outcome.signal is not None:
        status = FAILED
        msg = f"killed by signal {outcome.signal}"
    elif (outcome.exit_code == CS_ESKIP and parsed.footer is not None
          and parsed.footer.get("status") == "skipped"):
        status = SKIPPED  # a GPU path this machine cannot run, with the reason
        msg = f"skipped: {parsed.footer.get('reason') or 'no reason given'}"
    elif outcome.exit_code == CS_EINVALID or any(not r.valid for r in parsed.results):
        status = INVALID
        msg = "data validation failed"
    elif outcome.exit_code != 0:
        status = FAILED
        msg = f"exit code {outcome.exit_code}"
    elif parsed.footer is None or parsed.footer.get("status") != "ok":
        status = FAILED
        msg = "core ended without a complete record stream"
    else:
        status, msg = OK, ""
    return status, msg


def run_job(job: Job, store: Store, sweep_id: int | None, *, timeout_s: float,
            policy: NoisePolicy, attempt: int = 1, workdir: Path | None = None,
            round_pos: int | None = None) -> JobOutcome:
    impl = job.core.impl
    cores = provenance.n_cores()
    with tempfile.TemporaryDirectory(prefix="commscope-job-", dir=workdir) as tmp:
        tmpd = Path(tmp)
        out_path = tmpd / "records.jsonl"
        args = ["--bench", job.bench, *job.core_opts().argv(), "--output", str(out_path)]
        settings = dict(job.settings)
        launch = job.cluster.launch(impl, job.place, str(job.core.exe), args, tmpd, cores,
                                    os.geteuid() == 0, settings.get("COMMSCOPE_BIND", "core"))
        for name, text in launch.files.items():
            (tmpd / name).write_text(text)
        argv = launch.argv
        env = mpi_mod.environ(impl.env, launch.env, settings)
        env["CS_ERROR_DIR"] = str(tmpd)  # where a rank that aborts says why (core/harness/abort.c)
        protocols = "UCX_PROTO_INFO" not in env and ucx_prints_protocols(
            job.core.exe, env.get("LD_LIBRARY_PATH", ""))
        env.update(settings_mod.readback_env(settings, env, protocols, impl.family))
        placement = {**job.cluster.describe(), "label": job.cluster.label,
                     "nodes": job.place.nodes, "ppn": job.place.ppn}
        info = RunInfo(
            plan_key=job.plan_key(), bench=job.bench, np=job.np, sizes=job.core_opts().sizes,
            mpi_name=impl.name, mpi_family=impl.family, mpi_version=job.core.mpi_version,
            mpi_identity=job.core.identity, cluster=job.cluster.label, launch_argv=argv,
            env=provenance.relevant_env(env), machine=provenance.machine(),
            options=asdict(job.core_opts()),
            oversubscribed=job.cluster.oversubscribed(job.place, cores),
            attempt=attempt, placement=placement, config=job.config, repetition=job.rep,
            round_pos=round_pos, trial=job.trial)
        run_id = store.begin_run(info, sweep_id)
        links0 = job.cluster.link_bytes(job.place)
        mark0 = noise_mod.mark()
        try:
            outcome = run_bounded(argv, timeout_s=timeout_s, env=env, cwd=tmp,
                                  stdout_path=tmpd / "stdout", stderr_path=tmpd / "stderr",
                                  finished=lambda: footer_written(out_path),
                                  exit_grace_s=EXIT_GRACE_S)
        except BaseException:
            # Interrupted (Ctrl-C): the job is killed; keep what it measured.
            parsed = parse_file(out_path)
            store.finish_run(run_id, FAILED, exit_code=None, signal=None,
                             stderr_tail="interrupted by the user", header=parsed.header,
                             results=parsed.results, flags=[False] * len(parsed.results),
                             noise={"valid": False})
            raise
        job_noise = noise_mod.job_noise(mark0, noise_mod.mark(), outcome.cpu_s, outcome.wall_s)
        job_noise["leftover_processes"] = outcome.leftovers
        if outcome.survivors:
            job_noise["unkillable_processes"] = outcome.survivors
        parsed = parse_file(out_path)
        transport = transport_check(job.place, links0, job.cluster.link_bytes(job.place),
                                    payload_bytes(parsed.results))
        tail = _stderr_tail(tmpd / "stderr")
        status, msg = classify(outcome, parsed, timeout_s)
        # Intel MPI says on stdout what it ignores, UCX on stderr what it read
        said = "".join((tmpd / f).read_text(errors="replace")
                       for f in ("stdout", "stderr") if (tmpd / f).exists())
        rb = settings_mod.read_back(settings, parsed.header, said, cores=cores,
                                    protocols=protocols, finished=status == OK,
                                    oversubscribed=job.cluster.oversubscribed(job.place, cores))
        refused = rb.refused
        tail += "".join(f"\n{x}" for x in rb.notes)
        if status == OK and (astray := job.cluster.not_taken(parsed.header)):
            status, msg = FAILED, astray  # its records are not of the placement asked
        if refused and job.strict and status == OK:
            status, msg = FAILED, "settings not taken: " + "; ".join(refused)
        elif refused:
            tail += "\nwarning: " + "; ".join(refused)
        # what a rank said as it ended the job, where the launcher lost its stderr
        why = [f"cs-core: {x}" for x in _aborts(tmpd)]
        if status != SKIPPED and (parsed.footer or {}).get("reason"):
            why.append(f"cs-core: {parsed.footer['reason']}")  # type: ignore[index]
        lost = "".join(f"{x}\n" for x in dict.fromkeys(why) if x not in tail)
        tail = lost + tail
        if msg and not tail.strip():
            tail = msg
        elif msg:
            tail = f"{msg}\n{tail}"
        if outcome.survivors:
            tail += (f"\n{outcome.survivors} process(es) of this job were still alive "
                     f"{sum(SIGKILL_WAITS_S):.0f} s after SIGKILL")
        noisy_job = policy.flag_job(job_noise)
        flags = [noisy_job or policy.flag(r) for r in parsed.results]
        store.finish_run(run_id, status, exit_code=outcome.exit_code, signal=outcome.signal,
                         stderr_tail=tail, header=parsed.header, results=parsed.results,
                         flags=flags, noise=job_noise, transport=transport, footer=parsed.footer)
    return JobOutcome(job, run_id, status, parsed, flags, msg, transport, tail)


def rounds(jobs: Sequence[Job], repeat: int, seed: int = 0) -> list[list[Job]]:
    """Each job `repeat` times, as rounds that each run every job once, in
    an order that changes from round to round (the first as planned, then
    shuffled with a fixed seed), so that a change of the machine's mode
    during the sweep falls on every configuration alike rather than on
    whichever came last."""
    out: list[list[Job]] = []
    for r in range(1, repeat + 1):
        order = [replace(j, rep=r) for j in jobs]
        if r > 1:
            random.Random(seed * 1000 + r).shuffle(order)
        out.append(order)
    return out


def run_sweep(jobs: Sequence[Job], store: Store, *, argv: Sequence[str], resume: bool,
              timeout_s: float | None, policy: NoisePolicy, progress: Progress,
              on_done: Callable[[JobOutcome], None] | None = None,
              repeat: int = 1,
              probe: Callable[[], Mapping[str, object]] | None = None) -> list[JobOutcome]:
    """Run every job `repeat` times in interleaved rounds; a failure is
    stored and the sweep goes on.  `probe`: the machine probe, taken once
    before the first job and stored with the sweep (a probe that fails is
    said and the sweep goes on without it)."""
    store.abandon_running()
    plan_rounds = rounds(jobs, repeat)
    plan = [{"mpi": j.core.impl.name, "config": j.config.key, "bench": j.bench, "np": j.np,
             "cluster": j.cluster.label, "nodes": j.place.nodes, "rep": j.rep,
             "key": j.plan_key()} for rnd in plan_rounds for j in rnd]
    sweep_id = store.begin_sweep(argv, plan)
    if probe is not None:
        try:
            store.add_probe(probe(), provenance.machine().get("hostname") or "", sweep_id)
        except CommscopeError as exc:
            print(f"commscope: the machine probe failed, the sweep goes on without it: "
                  f"{str(exc).splitlines()[0]}", file=sys.stderr)
    outcomes: list[JobOutcome] = []
    try:
        for rnd in plan_rounds:
            done: list[JobOutcome] = []
            for pos, job in enumerate(rnd):
                out = _run_planned(job, store, sweep_id, resume, timeout_s, policy, progress,
                                   pos)
                if out is None:
                    continue
                done.append(out)
                if on_done:
                    on_done(out)
            outcomes += done
            if repeat == 1:  # with rounds, once after the last: it covers each round's too
                outcomes += _measure_again(equal_windows(done), store, sweep_id, timeout_s,
                                           policy, progress)
        if repeat > 1:  # the rounds alike: a round narrowed further sets every round's window
            outcomes += _measure_again(equal_windows(outcomes), store, sweep_id, timeout_s,
                                       policy, progress)
    finally:
        store.end_sweep(sweep_id)
        progress.close()  # a sweep cut short leaves no bar under the error that stopped it
    return outcomes


def equal_windows(outcomes: Sequence[JobOutcome]) -> list[tuple[JobOutcome, Job]]:
    """Where the time bound narrowed one configuration's window at a size
    and not another's, the jobs to measure the wider ones again at the
    narrowest window, so that every configuration compared at one size
    (one benchmark, process count and placement) ran the same window.  One
    job per configuration, window and run of consecutive sizes of its
    grid.  Configurations planned with different windows (--param
    window=...) are different measurements and are left as they are.
    Given every round's outcomes, the rounds of --repeat are made equal
    too: a job measured again already is judged by its latest records."""
    latest: dict[tuple[object, ...], tuple[int, int]] = {}
    for i, o in enumerate(outcomes):
        if o.status != OK:
            continue
        for r in o.parsed.results:
            if r.window:  # a later outcome of the same job and round holds its sizes
                latest[(o.job.config.key, o.job.rep, o.job.np, o.job.cluster.label,
                        o.job.place.nodes, o.job.opts.window, r.bench, r.size_bytes)] = (
                    i, r.window)
    ran: dict[tuple[object, ...], list[tuple[int, int]]] = {}
    for (_, _, np_, where, nodes, planned, bench, size), seen in latest.items():
        ran.setdefault((bench, np_, where, nodes, planned, size), []).append(seen)
    wider: dict[tuple[int, int, str], set[int]] = {}
    for (bench, *_, size), seen in ran.items():  # type: ignore[misc]
        narrowest = min(w for _, w in seen)
        for i, w in seen:
            if w > narrowest:
                wider.setdefault((i, narrowest, bench), set()).add(size)
    out: list[tuple[JobOutcome, Job]] = []
    for (i, window, bench), sizes in sorted(wider.items()):
        job = outcomes[i].job
        grid = expand_sizes(job.opts.sizes, job.opts.factor)
        for first, last in _consecutive(sorted(sizes), grid):
            spec = str(first) if first == last else f"{first}:{last}"
            out.append((outcomes[i], replace(job, bench=bench, again_at=(window, spec))))
    return out


def _consecutive(sizes: Sequence[int], grid: Sequence[int]) -> list[tuple[int, int]]:
    """sizes (a subset of grid) as runs of neighbours in grid."""
    at = {s: k for k, s in enumerate(grid)}
    runs: list[tuple[int, int]] = []
    for s in sizes:
        if runs and at[s] == at[runs[-1][1]] + 1:
            runs[-1] = (runs[-1][0], s)
        else:
            runs.append((s, s))
    return runs


def _measure_again(todo: Sequence[tuple[JobOutcome, Job]], store: Store, sweep_id: int,
                   timeout_s: float | None, policy: NoisePolicy, progress: Progress
                   ) -> list[JobOutcome]:
    """Measure each job again at the common window; where it ran that
    window, its first records at those sizes are marked as measured again
    (they stay stored; the analysis reads the later ones)."""
    progress.total += len(todo)
    outs = []
    for first, job in todo:
        window, spec = job.again_at  # type: ignore[misc]
        label = f"{job.label} again at window {window}, " + ":".join(
            human(int(x)) for x in spec.split(":"))
        t = timeout_s or default_timeout(job.core_opts(), len(expand_sizes(spec,
                                                                         job.opts.factor)))
        progress.start(label)
        out = run_job(job, store, sweep_id, timeout_s=t, policy=policy)
        marks = [(r.bench, r.size_bytes) for r in out.parsed.results if r.window == window]
        if out.status == OK and marks:
            store.narrowed(first.run_id, marks, out.run_id)
        note = "" if out.status != OK or len(marks) == len(out.parsed.results) else (
            f" ({len(out.parsed.results) - len(marks)} size(s) narrowed further: their "
            "windows still differ)")
        progress.end(label, out.status, note or (f" ({out.message})" if out.message else ""))
        outs.append(out)
    return outs


def _run_planned(job: Job, store: Store, sweep_id: int, resume: bool, timeout_s: float | None,
                 policy: NoisePolicy, progress: Progress, pos: int) -> JobOutcome | None:
    if resume and store.has_ok_run(job.plan_key()):
        progress.end(job.label, "stored already, skipped")
        return None
    t = timeout_s or default_timeout(job.opts, len(expand_sizes(job.opts.sizes, job.opts.factor)),
                                     len(job.bench.split(",")))
    progress.start(job.label)
    out = run_job(job, store, sweep_id, timeout_s=t, policy=policy, round_pos=pos)
    attempt = 1
    while out.status == OK and any(out.flags) and attempt <= policy.retries:
        store.mark_run(out.run_id, RETRIED)
        attempt += 1
        out = run_job(job, store, sweep_id, timeout_s=t, policy=policy, attempt=attempt,
                      round_pos=pos)
    note = f" ({out.message})" if out.message else ""
    if any(out.flags):
        note += f" [{sum(out.flags)} noisy record(s) flagged]"
    if out.transport:
        ok = "" if out.transport["ok"] else "TRANSPORT CHECK FAILED: "
        note += f" [{ok}{out.transport['verdict']}]"
    progress.end(job.label, out.status, note)
    return out


def run_at_once(waves: Sequence[Sequence[Job]], store: Store, *, argv: Sequence[str],
                timeout_s: float | None, policy: NoisePolicy, progress: Progress,
                repeat: int = 1) -> list[JobOutcome]:
    """Every wave's jobs started together, the next wave once all of them
    have ended: `commscope matrix`'s rounds, whose pairs share no node.
    The waves are repeated `repeat` times in rounds (the first as planned,
    then shuffled as `rounds` does).  Each job runs in a process of its own
    (forked: its children, its timeout, its exit status and its CPU are
    its own; a thread's would reap a sibling's launcher), which stores it
    through a connection of its own, as two `run`s into one store do.
    Other jobs of the wave count as other processes in each job's noise.
    A wave interrupted (Ctrl-C) interrupts every job of it; each keeps
    what it measured."""
    store.abandon_running()
    plan_rounds = []
    for r in range(1, repeat + 1):
        order = [[replace(j, rep=r) for j in w] for w in waves]
        if r > 1:
            random.Random(1000 + r).shuffle(order)
        plan_rounds.append(order)
    plan = [{"mpi": j.core.impl.name, "config": j.config.key, "bench": j.bench, "np": j.np,
             "cluster": j.cluster.label, "nodes": j.place.nodes, "rep": j.rep,
             "key": j.plan_key(), "wave": k}
            for rnd in plan_rounds for k, w in enumerate(rnd) for j in w]
    sweep_id = store.begin_sweep(argv, plan)
    outcomes: list[JobOutcome] = []
    try:
        with tempfile.TemporaryDirectory(prefix="commscope-wave-") as tmp:
            for rnd in plan_rounds:
                for pos, wave in enumerate(rnd):
                    outcomes += _wave(wave, store, sweep_id, timeout_s, policy, progress,
                                      pos, Path(tmp))
            # measured again at a common window as they were measured: beside their round's
            outcomes += _again_at_once(equal_windows(outcomes), store, sweep_id, timeout_s,
                                       policy, progress, Path(tmp))
    finally:
        store.end_sweep(sweep_id)
        progress.close()
    return outcomes


def _again_at_once(todo: Sequence[tuple[JobOutcome, Job]], store: Store, sweep_id: int,
                   timeout_s: float | None, policy: NoisePolicy, progress: Progress,
                   tmp: Path) -> list[JobOutcome]:
    """_measure_again for jobs of waves: in waves again, each job beside
    others that share none of its nodes (as many as fit), so that a pair
    measured at once is measured again at once."""
    progress.total += len(todo)
    waves: list[list[tuple[JobOutcome, Job]]] = []
    for first, job in todo:
        mine = set(getattr(job.cluster, "between", None) or ())
        for w in waves:
            if not any(mine & set(getattr(j.cluster, "between", None) or ()) for _, j in w):
                w.append((first, job))
                break
        else:
            waves.append([(first, job)])
    outs: list[JobOutcome] = []
    for k, w in enumerate(waves):
        done = _wave([j for _, j in w], store, sweep_id, timeout_s, policy, progress,
                     10_000 + k, tmp)
        for (first, job), out in zip(w, done, strict=True):
            window = job.again_at[0]  # type: ignore[index]
            marks = [(r.bench, r.size_bytes) for r in out.parsed.results if r.window == window]
            if out.status == OK and marks:
                store.narrowed(first.run_id, marks, out.run_id)
        outs += done
    return outs


def _wave(wave: Sequence[Job], store: Store, sweep_id: int, timeout_s: float | None,
          policy: NoisePolicy, progress: Progress, pos: int, tmp: Path) -> list[JobOutcome]:
    """The jobs of one wave at once, a forked process each (run_at_once);
    their outcomes in the wave's order."""
    kids: list[tuple[int, Job, Path]] = []
    progress.start(" + ".join(j.label for j in wave))
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    ended: dict[int, int] = {}  # pid -> wait status
    try:
        for k, job in enumerate(wave):
            t = timeout_s or default_timeout(
                job.opts, len(expand_sizes(job.opts.sizes, job.opts.factor)),
                len(job.bench.split(",")))
            back = tmp / f"{pos}-{k}-r{job.rep}-{os.getpid()}-{time.monotonic_ns()}.pickle"
            sys.stdout.flush()
            sys.stderr.flush()
            # no stop between the fork and the child's own handling of one, nor
            # between the fork and the parent's knowing the child
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
            pid = os.fork()
            if pid == 0:  # the job's own process: never returns
                code = 1
                try:
                    os.setpgid(0, 0)  # a Ctrl-C reaches the parent, which tells each job once
                    db_mod.own_process()  # its runs are its own: abandoned if it dies
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                    own = Store(store.path)
                    out = run_job(job, own, sweep_id, timeout_s=t, policy=policy,
                                  round_pos=pos)
                    own.close()
                    back.write_bytes(pickle.dumps(  # the job stays the parent's
                        (out.run_id, out.status, out.parsed, out.flags, out.message,
                         out.transport, out.stderr_tail)))
                    code = 0
                except BaseException:  # said to the parent through the missing outcome
                    back.with_suffix(".err").write_text(traceback.format_exc(limit=3))
                finally:
                    os._exit(code)
            kids.append((pid, job, back))
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for pid, _, _ in kids:
            ended[pid] = os.waitpid(pid, 0)[1]
    except BaseException:
        # interrupted: each job's process is told once, kills its job's family
        # and stores what it had; the parent waits for all of them
        for pid, _, _ in kids:
            if pid not in ended:
                try:
                    os.kill(pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        for pid, _, _ in kids:
            if pid not in ended:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
        raise
    outs = []
    for pid, job, back in kids:
        if back.exists():
            out = JobOutcome(job, *pickle.loads(back.read_bytes()))
            back.unlink()
        else:  # its process died (killed, out of memory): a failure, and the matrix goes on
            err = back.with_suffix(".err")
            code = os.waitstatus_to_exitcode(ended.get(pid, 0))
            why = (err.read_text().strip().splitlines() or ["?"])[-1] if err.exists() else (
                f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}")
            out = JobOutcome(job, -1, FAILED, Parsed(), [],
                             f"its process ended without an outcome ({why})")
            store.abandon_running()  # the run it began, if any, is a failure
        note = f" ({out.message})" if out.message else ""
        if any(out.flags):
            note += f" [{sum(out.flags)} record(s) taken beside other processes]"
        progress.end(job.label, out.status, note)
        outs.append(out)
    return outs
