"""Sweeps: expand a plan into jobs, run each under its timeout, store each
job's records as soon as it ends, flag (and optionally retry) noisy ones."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, make_dataclass, replace
from pathlib import Path

from ..errors import CommscopeError
from ..store.config import LATER_PARAMS, PARAM_DEFAULTS, Configuration, params_of
from ..store.db import FAILED, INVALID, OK, RETRIED, SKIPPED, TIMEOUT, RunInfo, Store
from ..store.records import Parsed, Result, parse_file
from ..store.sizes import expand_sizes, human
from . import noise as noise_mod
from . import provenance
from . import settings as settings_mod
from .build import Core, loaded_library
from .cluster import Cluster, Local, Placement, transport_check
from .procs import SIGKILL_WAITS_S, run_bounded
from .procs import Outcome as Ended

# The core's option table (core/harness/options.c), as `cs-core --list
# --json` prints it; tests check this copy against every built core.  The
# options of scope "run" (and "hidden") are CoreOptions' fields and
# `commscope run`'s arguments; the transport and the GPU path are set per job.
CORE_OPTIONS: tuple[dict[str, object], ...] = tuple(
    json.loads((Path(__file__).parents[1] / "core_options.json").read_text()))
_PY_TYPES = {"str": str, "int": int, "float": float, "flag": bool}


def run_options() -> list[dict[str, object]]:
    return [o for o in CORE_OPTIONS if o["scope"] in ("run", "hidden")]


def _core_options_class() -> type:
    def typed(o: dict[str, object]) -> object:
        return _PY_TYPES[str(o["type"])](o["default"])

    fields = [(str(o["field"]), _PY_TYPES[str(o["type"])], field(default=typed(o)))
              for o in [*run_options(),
                        *(o for o in CORE_OPTIONS if o["field"] in ("transport", "path"))]]

    def argv(self) -> list[str]:
        """The core's command line for these options (defaults included,
        so that a record's header says everything)."""
        out: list[str] = []
        for o in CORE_OPTIONS:
            f = str(o["field"])
            if not hasattr(self, f):
                continue
            v = getattr(self, f)
            if o["type"] == "flag":
                out += [f"--{o['name']}"] if v else []
            elif o["scope"] == "hidden" and v == o["default"]:
                continue
            else:
                out += [f"--{o['name']}", repr(v) if isinstance(v, float) else str(v)]
        return out

    return make_dataclass("CoreOptions", fields, frozen=True, namespace={
        "argv": argv, "__doc__": "Options handed to the core, the same for every job of a "
                                 "sweep: the core's own table (core_options.json)."})


CoreOptions = _core_options_class()


@dataclass(frozen=True)
class Job:
    core: Core
    bench: str
    place: Placement
    opts: CoreOptions
    cluster: Cluster = field(default_factory=Local, compare=False)
    settings: tuple[tuple[str, str], ...] = ()  # the user's behaviour-changing environment
    rep: int = 1  # repetition: the round of the sweep this job belongs to
    # settings handed over explicitly (--settings, tune): a job whose read-back
    # disagrees fails; the environment's own are only warned about
    strict: bool = field(default=False, compare=False)
    # (window, sizes): this configuration's job measured again at the window
    # another configuration of the sweep was narrowed to (equal_windows); the
    # configuration stays the one planned
    again_at: tuple[int, str] | None = field(default=None, compare=False)

    def core_opts(self) -> CoreOptions:
        """The options the core runs with: the planned ones, or those of a
        measurement again at a common window."""
        if self.again_at is None:
            return self.opts
        window, sizes = self.again_at
        return replace(self.opts, window=window, sizes=sizes)

    @property
    def np(self) -> int:
        return self.place.np

    @property
    def config(self) -> Configuration:
        opts = asdict(self.opts)
        opts["param"] = without_swept(self.opts.param, self.core)
        extra: tuple[tuple[str, object], ...] = ()
        if self.core.impl.cc:
            extra += (("cc", self.core.impl.cc),)  # the C compiler the wrapper drove
        if self.opts.path != "host" and gpu_standin():
            extra += (("gpu", "stand-in"),)  # host memory standing in (testing)
        if self.opts.path == "staged-pipelined":  # the chunk changes what is measured
            extra += (("stage_chunk", self.opts.stage_chunk or "256K"),)
        return Configuration(mpi=self.core.impl.name, mpi_identity=self.core.identity,
                             transport=self.opts.transport, buffer=self.opts.path,
                             params=params_of(opts), settings=self.settings,
                             cluster=self.cluster.label, nodes=self.place.nodes,
                             ppn=self.place.ppn, extra=extra)

    @property
    def label(self) -> str:
        c = self.config
        where = "" if self.cluster.kind == "local" else (
            f" on {self.cluster.label} ({self.place.nodes}x{self.place.ppn})")
        what = " ".join(v for k, v in c.parts().items()
                        if v and k in ("mpi", "transport", "buffer", "params", "settings"))
        rep = f" #{self.rep}" if self.rep > 1 else ""
        names = self.bench.split(",")
        benches = self.bench if len(names) <= 3 else f"{len(names)} benchmarks"
        return f"{what} {benches} np={self.np}{where}{rep}"

    def plan_key(self) -> str:
        """What makes two jobs the same measurement, for --resume: the
        configuration, the benchmark, how it samples and the repetition."""
        how = {k: v for k, v in asdict(self.opts).items()
               if k not in PARAM_DEFAULTS and k not in LATER_PARAMS}
        key = {"config": self.config.key, "bench": self.bench, "sampling": how, "rep": self.rep}
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]


def _swept(core: Core) -> set[str]:
    """The parameters applications sweep instead of message sizes (N)."""
    return {str(b["size_param"]) for b in core.benches if b.get("size_param")}


def without_swept(spec: str, core: Core) -> str:
    """Applications' parameters less the swept one (matmul's N): its values
    are the sizes of the records, not part of what identifies them."""
    swept = _swept(core)
    items = [x for x in spec.split(";") if x and x.split("=", 1)[0] not in swept]
    return ";".join(sorted(items))


def param_variants(spec: str, core: Core) -> list[str]:
    """A parameter given a list that is not the swept one (jacobi's
    mode=blocking,overlap) makes one job per value: the combinations of all
    such lists, each a configuration of its own."""
    swept = _swept(core)
    choices: list[list[str]] = []
    seen: set[str] = set()
    for item in (x for x in spec.split(";") if x):
        key, _, value = item.partition("=")
        if key in seen:
            raise CommscopeError(f"--param gives {key} twice ('{spec}'): a list is "
                                 f"{key}=A,B")
        seen.add(key)
        values = value.split(",") if key not in swept else [value]
        choices.append([f"{key}={v}" for v in values])
    return [";".join(c) for c in itertools.product(*choices)] if choices else [spec]


def resolve_benches(core: Core, names: Sequence[str]) -> list[str]:
    """Benchmark names, with groups: `p2p`, `loggp`, `coll`, `coll-sends`
    (and `all`), as the core's own table groups them."""
    out: list[str] = []
    groups = {str(b["group"]) for b in core.benches}
    for n in names:
        if n == "all":
            picked = core.bench_names()
        elif n in groups:
            picked = [str(b["name"]) for b in core.benches if b["group"] == n]
        else:
            picked = [n]
        out.extend(p for p in picked if p not in out)
    return out


def placements(cluster: Cluster, nps: Sequence[int], nodes: Sequence[int],
               ppns: Sequence[int]) -> list[Placement]:
    """nodes x processes per node.  With --ppn, every --nodes (default: the
    cluster's) times it; otherwise every --np spread over --nodes (default:
    as many of the cluster's nodes as there are ranks, one rank each)."""
    if ppns and nps:
        raise CommscopeError("give --np or --ppn, not both (np = nodes x ppn)")
    out: list[Placement] = []
    if ppns:
        for n in nodes or [cluster.size() or 1]:
            out.extend(Placement(n, p) for p in ppns)
        return out
    for np_ in nps or [2]:
        for n in nodes or [cluster.default_nodes(np_)]:
            if np_ % n:
                raise CommscopeError(f"--np {np_} does not divide over {n} nodes")
            out.append(Placement(n, np_ // n))
    return out


# Where a benchmark's buffers live and what moves them: host memory over
# MPI, or device memory by one of the GPU paths (core/harness/path.c).
GPU_PATHS = ("staged", "staged-pageable", "staged-pipelined", "cuda-aware", "ipc", "nccl")
PATHS = ("host", *GPU_PATHS)


def gpu_standin() -> bool:
    """Testing only: host memory stands in for the device on the GPU paths
    (COMMSCOPE_GPU_STANDIN=host, which core/harness/path.c reads too)."""
    return os.environ.get("COMMSCOPE_GPU_STANDIN") == "host"


def gpu_path_runs(core: Core, bench: str, path: str) -> bool:
    """Does `bench` run on GPU path `path` (ipc: point-to-point only)?"""
    b = core.bench(bench)
    return bool(b.get("gpu")) and not (path == "ipc" and b.get("timing") == "max")


def gpu_benches(core: Core, path: str) -> list[str]:
    return [n for n in core.bench_names() if gpu_path_runs(core, n, path)]


def expand(cores: Sequence[Core], benches: Sequence[str], nps: Sequence[int],
           opts: CoreOptions, cluster: Cluster | None = None,
           places: Sequence[Placement] | None = None) -> list[Job]:
    """One job per implementation x placement, running every benchmark of
    the sweep in one launch (a launch costs 0.3-0.6 s here, more than most
    benchmarks' sizes together), checked up front so a sweep never starts
    with a job that cannot run.  `nps` alone means one node of the local
    machine."""
    cluster = cluster or Local()
    places = list(places) if places is not None else [Placement(1, n) for n in nps]
    jobs: list[Job] = []
    for core in cores:
        for place in places:
            cluster.check(core.impl, place)
        known = core.bench_names()
        names = resolve_benches(core, benches)
        for bench in names:
            if bench not in known:
                raise CommscopeError(f"unknown benchmark '{bench}' (choose from "
                                     f"{', '.join(known)})")
            if opts.transport != "mpi" and not core.bench(bench).get("any_transport"):
                raise CommscopeError(f"benchmark {bench} runs over MPI only, not --transport "
                                     f"{opts.transport}")
            if opts.path == "host" and core.bench(bench).get("gpu_only"):
                raise CommscopeError(f"benchmark {bench} runs on a GPU path (--path staged, "
                                     f"staged-pageable, staged-pipelined, cuda-aware or nccl)")
            if opts.path != "host" and not gpu_path_runs(core, bench, opts.path):
                raise CommscopeError(f"benchmark {bench} has no --path {opts.path} (GPU paths "
                                     f"run {', '.join(gpu_benches(core, opts.path))})")
        for place in places:
            np_ = place.np
            for bench in names:
                min_np = int(core.bench(bench)["min_np"])  # type: ignore[arg-type]
                if np_ < min_np:
                    raise CommscopeError(f"benchmark {bench} needs at least {min_np} processes, "
                                         f"got --np {np_}")
                if (core.bench(bench).get("rooted") and not opts.rotate_root
                        and opts.root >= np_):
                    raise CommscopeError(f"root {opts.root} is outside the communicator of "
                                         f"{np_} processes ({bench})")
            if opts.transport != "mpi" and place.nodes != 1:
                raise CommscopeError(f"--transport {opts.transport} is a shared-memory "
                                     "channel: it runs on one node")
            jobs.append(Job(core, ",".join(names), place, opts, cluster))
    return jobs


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


class Progress:
    """A progress bar on a terminal, one line per job elsewhere."""

    def __init__(self, total: int, stream=None, enabled: bool = True) -> None:
        stream = sys.stderr if stream is None else stream
        self.total, self.done, self.stream, self.enabled = total, 0, stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.t0 = time.monotonic()

    def start(self, label: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            el = time.monotonic() - self.t0
            eta = el / self.done * (self.total - self.done) if self.done else 0
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] "
                              f"{self.done}/{self.total} {label:<40.40} eta {eta:4.0f}s")
            self.stream.flush()

    def end(self, label: str, status: str, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
        self.stream.write(f"[{self.done}/{self.total}] {label}: {status}{note}\n")
        self.stream.flush()


# the lines of UCX's protocol tables ("[time] [host:pid:tid]   | 0..92 | ...")
_UCX_TABLE_LINE = re.compile(r"^\[[^\]]*\] \[[^\]]*\]\s+[|+].*\n?", re.M)


def _stderr_tail(path: Path, limit: int = 4000) -> str:
    """The end of a job's stderr, less UCX's protocol tables (read apart)."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return _UCX_TABLE_LINE.sub("", data.decode(errors="replace"))[-limit:]


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
    elif (outcome.exit_code == 7 and parsed.footer is not None
          and parsed.footer.get("status") == "skipped"):
        status = SKIPPED  # a GPU path this machine cannot run, with the reason
        msg = f"skipped: {parsed.footer.get('reason') or 'no reason given'}"
    elif outcome.exit_code == 3 or any(not r.valid for r in parsed.results):
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
        env = {**os.environ, **impl.env, **launch.env, **settings}
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
            round_pos=round_pos)
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
        if refused and job.strict and status == OK:
            status, msg = FAILED, "settings not taken: " + "; ".join(refused)
        elif refused:
            tail += "\nwarning: " + "; ".join(refused)
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
            outcomes += _measure_again(equal_windows(done), store, sweep_id, timeout_s, policy,
                                       progress)
    finally:
        store.end_sweep(sweep_id)
    return outcomes


def equal_windows(outcomes: Sequence[JobOutcome]) -> list[tuple[JobOutcome, Job]]:
    """Where the time bound narrowed one configuration's window at a size
    and not another's, the jobs to measure the wider ones again at the
    narrowest window, so that every configuration compared at one size
    (one benchmark, process count and placement) ran the same window.  One
    job per configuration, window and run of consecutive sizes of its
    grid.  Configurations planned with different windows (--param
    window=...) are different measurements and are left as they are."""
    ran: dict[tuple[str, int, str, int, int, int], list[tuple[int, int]]] = {}
    for i, o in enumerate(outcomes):
        if o.status != OK:
            continue
        for r in o.parsed.results:
            if r.window:
                key = (r.bench, o.job.np, o.job.cluster.label, o.job.place.nodes,
                       o.job.opts.window, r.size_bytes)
                ran.setdefault(key, []).append((i, r.window))
    wider: dict[tuple[int, int, str], set[int]] = {}
    for (bench, *_, size), seen in ran.items():
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
