"""A sweep's plan: the options handed to the core (its own table), the
jobs they expand into (one launch each: implementation x placement, every
benchmark of the sweep), and the checks a plan passes before any launch."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, make_dataclass, replace
from pathlib import Path

from ..errors import CommscopeError
from ..store import core_facts
from ..store.config import LATER_PARAMS, PARAM_DEFAULTS, Configuration, params_of
from .build import Core, check_options, gpu_info
from .cluster import Cluster, Local, Placement, local_only
from .mpi import bind_flags

# The core's option table (core/harness/options.c), as `cs-core --list
# --json` prints it; tests check this copy against every built core.  The
# options of scope "run" (and "hidden") are CoreOptions' fields and
# `commscope run`'s arguments; the transport and the GPU path are set per job.
CORE_OPTIONS: tuple[dict[str, object], ...] = core_facts.options()
_PY_TYPES = core_facts.TYPES


def run_options() -> list[dict[str, object]]:
    return [o for o in CORE_OPTIONS if o["scope"] in ("run", "hidden")]


def _core_options_class() -> type:
    fields = [(str(o["field"]), _PY_TYPES[str(o["type"])],
               field(default=core_facts.default(str(o["field"]))))
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
    # the diagnosis's experiment this job belongs to (stored with the run):
    # None for a job the sweep planned
    trial: str | None = field(default=None, compare=False)

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
        if self.opts.path != "host" and mps_here():
            # ranks sharing a GPU through MPS: on an H200, 1 B staged latency 16 us with
            # it, 152 us without (docs/gpu.md): another measurement, another configuration
            extra += (("mps", "on"),)
        if self.opts.path == "staged-pipelined":  # the chunk changes what is measured
            extra += (("stage_chunk", self.opts.stage_chunk or "256K"),)
        extra += self.cluster.config_extra()  # a pair of nodes (commscope matrix)
        return Configuration(mpi=self.core.impl.name, mpi_identity=self.core.identity,
                             transport=self.opts.transport, buffer=self.opts.path,
                             params=params_of(opts), settings=self.settings,
                             cluster=self.cluster.label, nodes=self.place.nodes,
                             ppn=self.place.ppn, extra=extra)

    @property
    def label(self) -> str:
        c = self.config
        pair = dict(c.extra).get("pair")  # commscope matrix: which two nodes
        where = (f" {pair}" if pair else "") if self.cluster.kind == "local" else (
            f" on {self.cluster.label} ({self.place.nodes}x{self.place.ppn})"
            + (f" {pair}" if pair else ""))
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
PATHS = core_facts.choices("path")  # host first, then the GPU paths (the core's table)
GPU_PATHS = PATHS[1:]


def mps_running(proc: Path = Path("/proc")) -> bool:
    """Whether NVIDIA's MPS control daemon runs here (nvidia-cuda-mps-control
    -d): CUDA processes then share the GPU through its server instead of
    time-slicing their own contexts.  A zombie of that name serves nobody
    and is not counted: on the H200's VM one sat beside the running daemon
    (left by its start-up, parent PID 1).  Whether that, or a daemon still
    exiting one second after its quit, labelled four runs mps=on that
    measured 150 us was not told apart (docs/gpu.md); a daemon still
    exiting reads as running."""
    for comm in proc.glob("[0-9]*/comm"):
        try:
            if not comm.read_text().startswith("nvidia-cuda-mps"):
                continue
            stat = (comm.parent / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        state = stat.rpartition(")")[2].split()[:1]  # the name may hold spaces and ')'
        if state and state[0] not in ("Z", "X"):
            return True
    return False


@functools.cache
def mps_here() -> bool:
    """mps_running(), asked once a process: every job of a sweep gets the
    same answer, and /proc is not read for each configuration built."""
    return mps_running()


def gpu_standin() -> bool:
    """Testing only: host memory stands in for the device on the GPU paths
    (COMMSCOPE_GPU_STANDIN=host, which core/harness/path.c reads too)."""
    return os.environ.get("COMMSCOPE_GPU_STANDIN") == "host"


def cuda_aware_forced() -> bool:
    """COMMSCOPE_FORCE_CUDA_AWARE=1: hand device pointers to an MPI that says
    it has no CUDA support (core/harness/path.c reads it too)."""
    return os.environ.get("COMMSCOPE_FORCE_CUDA_AWARE") == "1"


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


def plan_check(jobs: Sequence[Job]) -> None:
    """Applications judged before any launch at each job's process count,
    by the core's own rules (a grid that does not decompose, a value not
    allowed), and their memory where every rank runs on this machine (local
    runs and emulated clusters, whose nodes share it), and so the pools of
    --buffers cold and the memory --buffers evicted streams: one line, exit 2."""
    seen = set()
    for j in jobs:
        if bind := dict(j.settings).get("COMMSCOPE_BIND"):
            bind_flags(j.core.impl.family, bind)  # a value it does not know
            if j.cluster.kind != "local":
                local_only(bind, j.cluster.label)
        apps = [b for b in j.bench.split(",") if j.core.bench(b).get("size_param")]
        one_host = j.cluster.kind in ("local", "emu")
        if j.opts.buffers in ("cold", "evicted") and one_host:  # the pools are memory too
            apps = j.bench.split(",")
        key = (j.core.exe, tuple(apps), j.np, one_host, j.opts.param, j.opts.buffers,
               j.opts.cold_pool, j.opts.sizes)
        if not apps or key in seen:
            continue
        seen.add(key)
        check_options(j.core, ["--bench", ",".join(apps), *j.opts.argv(),
                               "--plan-np", str(j.np), *(["--plan-mem"] if one_host else [])])


# -- a sweep planned from a request: what `commscope run` asks for, as jobs --------------
PREDICTED = ("matmul", "summa", "jacobi")  # the applications analyze predict models


@dataclass(frozen=True)
class For:
    """--for APP,K=V;...;N=n1,n2: an application, its parameters as --param
    takes them, and the sizes N it is predicted at."""
    app: str
    spec: str
    ns: tuple[int, ...]


@dataclass(frozen=True)
class Request:
    """A sweep as asked for: the benchmarks named (none: the core's
    point-to-point, or only what --for needs), the cores built, where (the
    clusters and each one's placements), the GPU paths, the transports, the
    settings every job runs with, and the applications to predict."""
    cores: Sequence[Core]
    benches: Sequence[str]
    opts: CoreOptions
    clusters: Sequence[Cluster]
    places: dict[str, list[Placement]]
    paths: Sequence[str] = ()
    transports: Sequence[str] = ()
    settings: tuple[tuple[str, str], ...] = ()  # what this machine's environment sets
    settings_file: str | None = None  # --settings: read once the plan's other checks passed
    fors: Sequence[For] = ()
    given: frozenset[str] = frozenset()  # the options given at all (bench, path, transport)


@dataclass(frozen=True)
class Plan:
    jobs: list[Job]
    named_paths: frozenset[str]  # paths asked for by name: they must run


# what --for's predictions read of one application at one process count: (app, its
# sizes N, ranks, its parameters K=V;K=V, the last-level cache) -> the series each
# reads (each with bench, np, buffers and up_to): analysis.predict.needs, given by
# the command (planning reads no analysis)
Needs = Callable[[str, Sequence[int], int, str, int | None], Sequence]


def parse_for(text: str, core: Core) -> For:
    """--for APP,K=V;K=V: the application, its parameters as --param takes
    them, and its N values (a comma-separated list is the sweep)."""
    app, _, spec = text.partition(",")
    app = app.strip()
    if app not in PREDICTED or app not in core.bench_names():
        raise CommscopeError(f"--for: unknown application '{app}' (predicted: "
                             f"{', '.join(PREDICTED)})")
    known = [str(p["name"]) for p in core.bench(app)["params"]]  # type: ignore[union-attr]
    given: dict[str, str] = {}
    for item in (x.strip() for x in spec.split(";") if x.strip()):
        key, eq, value = item.partition("=")
        if not eq or key not in known:
            raise CommscopeError(f"--for {app}: unknown parameter '{key}' ({', '.join(known)})")
        given[key] = value
    if "N" not in given:
        raise CommscopeError(f"--for {app}: give its size, e.g. --for {app},N=2000")
    ns = []
    for v in given["N"].split(","):
        if not v.strip().isdigit() or int(v) < 1:
            raise CommscopeError(f"--for {app}: N must be positive whole numbers, got '{v}'")
        ns.append(int(v))
    return For(app, ";".join(f"{k}={v}" for k, v in given.items()), tuple(ns))


def build_plan(req: Request, needs: Needs) -> Plan:
    """The jobs of a sweep, every one judged by the core's rules before any
    launch: the benchmarks on each path, transport, parameter variant,
    cluster and placement; --for's applications and the series their
    predictions read (`needs`: what each prediction reads)."""
    cores, opts, fors = req.cores, req.opts, list(req.fors)
    if fors and {"path", "transport"} & req.given:
        raise CommscopeError("--for plans host runs over MPI: not with --path or --transport")
    benches = list(req.benches)
    if not benches and not fors:
        benches = [str(b["name"]) for b in cores[0].benches if b["group"] == "p2p"]
    if not benches:  # --for alone: its jobs are added below
        benches = [fors[0].app]
    paths = gpu_paths(list(req.paths), cores, req.clusters)
    on_path = {p: on for p, e in paths if (on := benches_on_path(cores[0], benches, p, e))}
    if not on_path:
        raise CommscopeError(f"none of {', '.join(benches)} runs on --path "
                             f"{', '.join(p for p, _ in paths)}")
    first = req.clusters[0]
    path0, picked = next(iter(on_path.items()))
    jobs = expand(cores, picked, [], replace(opts, path=path0), first, req.places[first.label])
    variants = param_variants(opts.param, cores[0])
    # the core's own rules for its options and parameters, before any launch
    for pv in variants:
        check_options(cores[0], ["--bench", jobs[0].bench,
                                 *replace(jobs[0].opts, param=pv).argv()])
    transports = list(req.transports) or ["mpi"]
    for t in transports:
        if t not in core_facts.choices("transport"):
            raise CommscopeError(f"unknown transport '{t}' "
                                 f"({', '.join(core_facts.choices('transport'))})")
    if any(p != "host" for p, _ in paths) and transports != ["mpi"]:
        raise CommscopeError("the GPU paths move data themselves: not with --transport "
                             + ",".join(t for t in transports if t != "mpi"))
    settings, strict = req.settings, False
    if req.settings_file:
        from .settings import parse_file

        if any(c.kind != "local" for c in req.clusters):
            raise CommscopeError("--settings applies to local runs only (the launchers of "
                                 "clusters would need each variable forwarded)")
        settings = tuple(sorted({**dict(settings),
                                 **dict(parse_file(req.settings_file))}.items()))
        strict = True  # each must be read back
    mine = {"settings": settings, "strict": strict}
    jobs = [replace(j, **mine) for cl in req.clusters for t in transports
            for path, on in on_path.items() for pv in variants
            for j in expand(cores, on, [], replace(opts, transport=t, param=pv, path=path), cl,
                            req.places[cl.label])] if "bench" in req.given or not fors else []
    jobs += [replace(j, **mine) for cl in req.clusters
             for j in for_apps(fors, cores, opts, cl, req.places[cl.label])]
    plan_check(jobs)
    series = [replace(j, **mine) for cl in req.clusters
              for j in for_series(fors, cores, opts, cl, req.places[cl.label], needs)]
    plan_check(series)  # cold pools are memory too
    return Plan(jobs + series, frozenset(p for p, every in paths if not every))


def gpu_paths(names: list[str], cores: Sequence[Core],
              clusters: Sequence[Cluster]) -> list[tuple[str, bool]]:
    """The GPU paths asked for, each with whether it came from 'all' (a
    sweep over every path: one this machine cannot run is recorded as
    skipped, with the reason).  A path named explicitly where this machine
    has no GPU is refused before any launch, with the driver's reason."""
    out: list[tuple[str, bool]] = []
    for n in names or ["host"]:
        if n == "all":
            out += [(p, True) for p in PATHS if (p, False) not in out]
        elif n in PATHS:
            out.append((n, False))
        else:
            raise CommscopeError(f"unknown --path '{n}' ({', '.join(PATHS)} or all)")
    explicit = [p for p, every in out if p != "host" and not every]
    if "cuda-aware" in explicit and not gpu_standin() and not cuda_aware_forced():
        for core in cores:  # how the library was built: the same on every node
            support = gpu_info(core).get("mpi_cuda_support")
            if isinstance(support, dict) and not support.get("compile_time"):
                which = core.mpi_version.splitlines()[0] if core.mpi_version else core.impl.mpicc
                raise CommscopeError(
                    f"--path cuda-aware: {core.impl.name} ({which}) was built without CUDA "
                    "support (its MPIX_CUDA_AWARE_SUPPORT is 0): build one with `commscope mpi "
                    "install openmpi-cuda`, add the site's with "
                    "`commscope mpi add PATH/TO/mpicc`, or set COMMSCOPE_FORCE_CUDA_AWARE=1 "
                    "to try anyway")
    if explicit and all(c.kind in ("local", "emu") for c in clusters):
        for core in cores:
            info = gpu_info(core)
            if not info.get("devices") and not gpu_standin():
                raise CommscopeError(f"--path {explicit[0]}: {core.impl.name}'s core sees no "
                                     f"GPU: {info.get('reason') or 'no device'}")
    seen: set[str] = set()
    return [(p, e) for p, e in out if not (p in seen or seen.add(p))]


def benches_on_path(core: Core, benches: list[str], path: str, every: bool) -> list[str]:
    """The benchmarks a job runs on `path`: as given, except that a sweep
    over every path runs on each path only those that run there (none: no
    job on that path)."""
    if not every:
        return benches
    names = resolve_benches(core, benches) if benches else []
    if path == "host":
        return [b for b in names if not core.bench(b).get("gpu_only")]
    return [b for b in names if gpu_path_runs(core, b, path)]


def for_apps(fors: Sequence[For], cores: Sequence[Core], opts: CoreOptions, cl: Cluster,
             places: Sequence[Placement]) -> list[Job]:
    """The applications of --for, on every placement."""
    return [j for pl in places for f in fors
            for pv in param_variants(f.spec, cores[0])
            for j in expand(cores, [f.app], [], replace(opts, param=pv), cl, [pl])]


def for_series(fors: Sequence[For], cores: Sequence[Core], opts: CoreOptions, cl: Cluster,
               places: Sequence[Placement], needs: Needs) -> list[Job]:
    """The series the predictions of --for read: each benchmark once per
    ranks and buffers, from the smallest size of --sizes to the largest
    message any phase moves.  The applications' values must have passed the
    core's rules (plan_check) first: they are planned with."""
    from ..store.sizes import expand_sizes
    from .probe import l3_bytes

    if not fors:
        return []
    llc = l3_bytes() if cl.kind in ("local", "emu") else None
    lo = expand_sizes(opts.sizes, opts.factor)[0]
    largest: dict[tuple[int, str], dict[str, int]] = {}  # (ranks, buffers) -> bench -> bytes
    for pl in places:
        for f in fors:
            for pv in param_variants(f.spec, cores[0]):
                for need in needs(f.app, f.ns, pl.np, pv, llc):
                    got = largest.setdefault((need.np, need.buffers), {})
                    got[need.bench] = max(got.get(need.bench, 0), need.up_to)
    jobs: list[Job] = []
    for (np_, buffers), benches in sorted(largest.items()):
        where = placements(cl, [np_], [], [])[0]
        for up in sorted(set(benches.values())):
            first, top, factor = for_sizes(lo, up, opts.factor)
            jobs += expand(cores, [b for b, u in benches.items() if u == up], [], replace(
                opts, sizes=f"{first}:{top}", factor=factor,
                buffers=buffers), cl, [where])
    return jobs


def for_sizes(lo: int, up: int, factor: int) -> tuple[int, int, int]:
    """A sweep for --for: from --sizes' smallest (at least 8 B: no phase
    moves less than a double) to the largest message `up`, which is a point
    of the grid, with at least two points to fit a model (so up to 32 B at
    least); --factor where its grid reaches `up` exactly, else 2."""
    top = max(up, 32)
    first = min(max(lo, 8), top // 4)
    for f in (factor, 2):
        s = top
        while s % f == 0 and s // f >= first:
            s //= f
        if s < top:
            return s, top, f
    return first, top, 2
