"""What several test files share: where the fixtures are (a fixture that is
missing fails, it never reads as empty), the command line run in-process,
a store of the golden records, stand-in implementations and cores, the
core launched for real, and a diagnosis's fixed rounds.  Nothing here is a
test; `conftest.py` holds the pytest fixtures."""

from __future__ import annotations

import json
import math
import random
import stat
import subprocess
from pathlib import Path

import pytest

from commscope import cli
from commscope.analysis import diagnosis as dg
from commscope.measure.build import Core
from commscope.measure.mpi import MpiImpl

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
C_DIR = TESTS / "c"  # C programs the tests build (a profiled program, the stats driver)


def golden(*parts: str) -> Path:
    """A fixture under tests/golden/: a missing one fails where it is named
    (at collection, for a module's constant), never reads as no records."""
    p = TESTS.joinpath("golden", *parts)
    if not p.exists():
        pytest.fail(f"fixture {p} is missing", pytrace=False)
    return p


RECORDS = golden("records_v1.jsonl")  # latency and bw at 8 and 64 B, as the core wrote them


# -- the command line, in-process ------------------------------------------------------
def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str, needle: str) -> None:
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("commscope") and needle in lines[0], err


def fake_wrapper(bin_: Path, says: str, show: str,
                 otherwise: str = "exit 1") -> Path:
    """An mpicc in `bin_` that answers -v with `says` and -show with
    `show`, and does `otherwise` when asked to compile; an mpiexec beside
    it that fails."""
    bin_.mkdir(parents=True)
    cc = bin_ / "mpicc"
    cc.write_text(f'#!/bin/sh\ncase "$1" in\n  -v) echo "{says}"; exit 0;;\n'
                  f'  -show|--version) echo "{show}"; exit 0;;\nesac\n{otherwise}\n')
    launcher = bin_ / "mpiexec"
    launcher.write_text("#!/bin/sh\nexit 1\n")
    for p in (cc, launcher):
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return cc


# -- stores without MPI ----------------------------------------------------------------
def info(**kw):
    """A run's RunInfo as a launch would describe it, with `kw` changed."""
    from commscope.store.db import RunInfo

    base = dict(plan_key="k1", bench="latency", np=2, sizes="8:64", mpi_name="openmpi",
                mpi_family="openmpi", mpi_version="Open MPI v4.1.4", mpi_identity="abc",
                cluster="local", launch_argv=["mpirun", "-n", "2", "cs-core"],
                env={"OMPI_MCA_x": "1"}, machine={"hostname": "h", "n_cores": 2},
                options={"sizes": "8:64"}, oversubscribed=False)
    base.update(kw)
    return RunInfo(**base)


def result(bench: str, size: int, t: float, **kw):
    """A converged record of `bench` at `size` whose every time is t us."""
    from commscope.store.records import Result

    times = dict.fromkeys(("median_us", "mean_us", "min_us", "max_us", "p5_us", "p95_us",
                           "ci_lo_us", "ci_hi_us", "ci_us"), t)
    return Result(bench=bench, size_bytes=size, np=2, valid=True, n_samples=5, batch=1,
                  n_iters=5, **times, mb_per_s=1.0, rate_per_s=1.0, converged=True,
                  stop="converged", **kw)


def golden_store(path: Path, runs: int = 1, flags: tuple[bool, ...] = (False,) * 4) -> Path:
    """A real store with the golden records (latency and bw at 8 and 64 B),
    written without MPI; `flags`: which were measured on a busy machine."""
    from commscope.store.db import OK, Store
    from commscope.store.records import parse_file

    s = Store(path)
    parsed = parse_file(RECORDS)
    for k in range(runs):
        sweep = s.begin_sweep(["commscope", "run"], [{"k": k}])
        rid = s.begin_run(info(plan_key=f"k{k}"), sweep)
        s.finish_run(rid, OK, exit_code=0, signal=None, stderr_tail="", header=parsed.header,
                     results=parsed.results, flags=list(flags), noise={"valid": True})
    s.close()
    return path


# -- stand-in implementations and cores (nothing is built or launched) -----------------
OMPI = MpiImpl("openmpi", "openmpi", "/usr/bin/mpicc.openmpi", "/usr/bin/mpirun.openmpi",
               "debian")
MPICH = MpiImpl("mpich", "mpich", "/usr/bin/mpicc.mpich", "/usr/bin/mpiexec.mpich", "debian")
IMPI = MpiImpl("intel-pypi", "intel", "/x/bin/mpicc", "/x/bin/mpiexec", "pypi")
BENCHES = (
    {"name": "latency", "group": "p2p", "min_np": 2, "any_transport": True},
    {"name": "bw", "group": "p2p", "min_np": 2, "any_transport": True},
    {"name": "bcast", "group": "coll", "min_np": 2, "rooted": True},
)


def stub_core(impl: MpiImpl, benches: tuple[dict, ...] = BENCHES) -> Core:
    """A core as a build would describe it, for planning: never run."""
    return Core(impl, Path("/cache/cs-core"), "id-" + impl.name, {"mpi_library": "x"}, benches)


# -- the core built without MPI ---------------------------------------------------------
def core_without_mpi(out_dir: Path) -> Path:
    """The core's sources compiled by the plain C compiler against a
    stand-in mpi.h (tests/c/mpi_stub), the MPI functions left unresolved:
    it answers what needs no MPI (--list --json, --expand-sizes), so the
    core's own facts are read where no MPI is installed.  Skips where
    there is no C compiler: no core could be built there at all."""
    import shutil

    from commscope.measure import build

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler: the core cannot be built here")
    core = build.core_dir()
    exe = out_dir / "cs-core-without-mpi"
    sources = [str(p) for p in build.core_sources(core) if p.suffix == ".c"]
    flags = [f for f in build.CFLAGS if f != "-O2"]  # facts, not speed: -O0 builds in a third
    subprocess.run([cc, *flags, '-DCS_VERSION="stub"', f"-I{C_DIR / 'mpi_stub'}",
                    f"-I{core / 'harness'}", f"-I{core / 'gpu'}",
                    f"-I{build.channel_dir(core)}", *sources, "-o", str(exe), "-lm",
                    "-no-pie", "-Wl,--unresolved-symbols=ignore-all"],
                   check=True, capture_output=True, text=True, timeout=300)
    return exe


# -- the core launched for real --------------------------------------------------------
QUICK = ["--min-samples", "5", "--min-time", "0", "--time-cap", "0.05", "--warmup", "1"]


def core_run(core, tmp_path, *args: str) -> tuple[int, list[dict], str]:
    """The core under the MPI's own launcher, 2 ranks: exit, records, stderr."""
    from commscope.measure.cluster import Local, Placement
    from commscope.measure.mpi import environ as mpi_environ

    out = tmp_path / "records.jsonl"
    launch = Local().launch(core.impl, Placement(1, 2), str(core.exe),
                            [*args, *QUICK, "--output", str(out)], tmp_path, 2, True)
    p = subprocess.run(launch.argv, capture_output=True, text=True, timeout=300,
                       env=mpi_environ(core.impl.env), check=False)
    recs = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    return p.returncode, recs, p.stderr


# -- a diagnosis's fixed rounds --------------------------------------------------------
SLOW, FAST = "k-mpich", "k-openmpi"  # the arms' keys
GAP_SIZES = (64, 128, 256, 512)


def rounds_of(times: dict[str, dict[int, float]], bench: str = "bcast", n: int = 6,
              noise: float = 0.03, seed: int = 1, floor: float = 200.0) -> dg.Rounds:
    """Rounds of arms: arm -> size -> its true time, each round's figure
    within +-noise of it."""
    rng = random.Random(seed)
    out = dg.Rounds()
    for r in range(1, n + 1):
        for arm, by in times.items():
            out.figures.setdefault(arm, {})[r] = {
                (bench, s): (t * math.exp(rng.uniform(-noise, noise)), floor, None)
                for s, t in by.items()}
    return out


def gap_of(sizes=GAP_SIZES, kind="implementation", call="bcast", screened=None) -> dg.Gap:
    """A gap of SLOW against FAST at `sizes` (those screened: all, or `screened`)."""
    pts = tuple(dg.GapPoint(s, ((SLOW, call, s, 1.0),), ((FAST, call, s, 1.0),),
                            screened is None or s in screened) for s in sizes)
    return dg.Gap(f"{kind}:{call}:{SLOW}>{FAST}", kind, call, SLOW, FAST, pts,
                  f"{call}: mpich slower than openmpi", 5.0, np=2)


def diagnosis_of(outcomes, checks=()) -> dg.Diagnosis:
    return dg.Diagnosis(1, 60.0, labels={SLOW: "mpich", FAST: "openmpi"},
                        impls={SLOW: "mpich", FAST: "openmpi"}, outcomes=list(outcomes),
                        checks=list(checks), status="complete")


def stored_row(d=None, **kw) -> dict:
    """A record row as Store.result_rows gives one: every key it carries
    (store.db.row_keys), None where `d` and `kw` give no value."""
    from commscope.store.db import row_keys

    return {**dict.fromkeys(row_keys()), **(d or {}), **kw}


def points_of(store, mode: str | None = "dominant") -> list:
    """A store's points as `show` and `report` read them (analysis/point.py):
    its records combined over their runs, the usual machine mode kept."""
    from commscope.analysis.repeats import aggregate

    return aggregate(store.result_rows(), mode=mode)


def stored_point(d=None, **kw):
    """A point (analysis/point.py) with the given fields, None elsewhere: a
    record row as stored_row gives one, nothing combined."""
    from commscope.analysis.point import point

    return point(stored_row(d, **kw))
