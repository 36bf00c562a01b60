"""GPU paths without a GPU: the CUDA sources compile for Hopper and as
generic PTX, the core builds with and without CUDA, every GPU path reports
itself skipped with the driver's reason, and the staged and CUDA-aware
paths' logic runs, validated, with host memory standing in for the device."""

from __future__ import annotations

import json
import os
import sqlite3
import struct
import subprocess
import sys

import pytest

from commscope.measure import build, runner
from commscope.measure.mpi import environ
from commscope.store.db import Store
from commscope.store.records import parse_file
from tests.helpers import one_line_error, run

NVCC = build.nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")


def _sees_gpu(core: build.Core) -> bool:
    return bool(build.gpu_info(core).get("devices"))


@needs_nvcc
def test_the_cuda_sources_compile_for_sm90_and_as_generic_ptx(tmp_path):
    """The build's own flags, with nvcc keeping its intermediate files: a
    Hopper cubin and PTX that any later device compiles at load time."""
    core = build.core_dir()
    p = subprocess.run([str(NVCC), "-c", *build.NVCC_FLAGS, "--keep", "--keep-dir",
                        str(tmp_path), f"-I{core / 'gpu'}", str(core / "gpu" / "gpu.cu"), "-o",
                        str(tmp_path / "gpu.o")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    cubins = list(tmp_path.glob("*.cubin"))
    assert len(cubins) == 1, cubins
    elf = cubins[0].read_bytes()
    # a CUDA ELF's e_flags carry the SM version in bits 8-15
    assert elf[:4] == b"\x7fELF" and (struct.unpack_from("<I", elf, 48)[0] >> 8) & 0xFF == 90
    generic = (tmp_path / "gpu.compute_75.ptx").read_text()
    assert ".target sm_75" in generic
    assert "jacobi_kernel" in generic and "col_kernel" in generic


@needs_nvcc
def test_the_core_builds_with_and_without_cuda(impls, monkeypatch):
    impl = impls[sorted(impls)[0]]
    with_cuda = build.build(impl)
    monkeypatch.setenv("COMMSCOPE_CUDA", "0")
    without = build.build(impl)
    assert with_cuda.exe != without.exe  # CUDA is part of the build's key
    assert build.gpu_info(with_cuda)["cuda_built"] is True
    info = build.gpu_info(without)
    assert info["cuda_built"] is False and info["devices"] == 0
    assert "built without CUDA" in str(info["reason"])
    meta = json.loads((with_cuda.exe.parent / "meta.json").read_text())
    assert meta["cuda"] == build.cuda_version(NVCC)
    gpu_o = [a for a in meta["argv"] if a.endswith(".o")]
    # one object for every build of these sources (no MPI in it), linked by each
    assert len(gpu_o) == 1 and os.path.basename(gpu_o[0]).startswith("gpu-")
    monkeypatch.delenv("COMMSCOPE_CUDA")
    other = build.build(impls[sorted(impls)[-1]])
    assert gpu_o[0] in json.loads((other.exe.parent / "meta.json").read_text())["argv"]


def test_a_sweep_over_every_path_skips_the_gpu_ones_with_the_drivers_reason(
        capsys, tmp_path, cores):
    family = sorted(cores)[0]
    if _sees_gpu(cores[family]):
        pytest.skip("this machine has a GPU")
    reason = str(build.gpu_info(cores[family])["reason"])
    assert reason
    db = tmp_path / "g.db"
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(db), "--mpi", family, "--path", "all",
                     "--bench", "latency,allreduce", "--sizes", "8", "--time-cap", "0.05",
                     "--no-probe", "--quiet")
    assert rc == 0, err
    store = Store(db)
    runs = {json.loads(r["config"])["buffer"]: r for r in store.runs()}
    store.close()
    assert sorted(runs) == sorted(["host", "staged", "staged-pageable", "staged-pipelined",
                                   "cuda-aware", "ipc", "nccl"])
    assert runs["host"]["status"] == "ok"
    for path in ("staged", "staged-pageable", "staged-pipelined", "cuda-aware", "ipc", "nccl"):
        r = runs[path]
        assert r["status"] == "skipped", (path, r["stderr_tail"])
        assert reason in r["stderr_tail"], r["stderr_tail"]
        assert r["bench"] == ("latency" if path == "ipc" else "latency,allreduce")
    assert err.count("skipped: rank 0: no GPU") == 6
    # the report lists them apart, with the reason, not as failures
    rc, _, err = run(capsys, "report", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Paths this machine could not run were skipped" in page
    assert page.count(reason) == 6, page.count(reason)  # one row per skipped path
    assert "Some jobs failed" not in page


def test_a_gpu_path_asked_for_by_name_without_a_gpu_is_one_line(capsys, tmp_path, cores):
    family = sorted(cores)[0]
    if _sees_gpu(cores[family]):
        pytest.skip("this machine has a GPU")
    base = ["run", "--db", str(tmp_path / "g.db"), "--mpi", family, "--sizes", "8",
            "--no-probe", "--quiet"]
    rc, _, err = run(capsys, *base, "--path", "nccl", "--bench", "latency")
    one_line_error(rc, err, "--path nccl: ")
    assert "sees no GPU" in err
    rc, _, err = run(capsys, *base, "--path", "pinned", "--bench", "latency")
    one_line_error(rc, err, "unknown --path 'pinned'")
    assert not (tmp_path / "g.db").exists() or not Store(tmp_path / "g.db").runs()


def test_the_core_refuses_a_benchmark_or_transport_a_gpu_path_lacks(cores):
    core = next(iter(cores.values()))
    for argv, says in ((["--bench", "gather", "--path", "staged"], "gather has no GPU path"),
                       (["--bench", "bcast", "--path", "ipc"], "ipc is point-to-point only"),
                       (["--bench", "latency", "--path", "staged", "--transport", "chan"],
                        "not with --transport chan"),
                       (["--bench", "latency", "--path", "pinned"], "--path must be host")):
        p = subprocess.run([str(core.exe), *argv, "--info"], capture_output=True, text=True)
        assert p.returncode == 2 and says in p.stderr, (argv, p.stderr)


def _mpirun(core: build.Core, np_: int, args: list[str], env: dict[str, str]):
    launcher = [core.impl.launcher, "-np", str(np_)]
    if core.impl.family == "openmpi":
        launcher += ["--allow-run-as-root", "--oversubscribe", "-x", "COMMSCOPE_GPU_STANDIN"]
    return subprocess.run([*launcher, str(core.exe), *args], capture_output=True, text=True,
                          timeout=120, env=environ(core.impl.env, env))


STANDIN = {"COMMSCOPE_GPU_STANDIN": "host"}
ALL_GPU = "latency,roundtrip,sendloop,bw,bibw,bcast,allreduce,alltoall"


@pytest.mark.parametrize("path,extra", [
    ("staged", []), ("staged-pageable", []), ("cuda-aware", []), ("staged-pipelined", []),
    # 1000-byte chunks: 5 for 4 KiB; 256 KiB would take 263, so 64 of 4 KiB
    ("staged-pipelined", ["--stage-chunk", "1000"])])
def test_the_paths_logic_moves_and_checks_every_message_with_host_memory_standing_in(
        tmp_path, cores, path, extra):
    """Every copy to and from the (stand-in) device, every window slot and
    every chunk checked: the records are valid, and say the device was a
    stand-in."""
    for family, core in sorted(cores.items()):
        out = tmp_path / f"{family}-{path}.jsonl"
        p = _mpirun(core, 2, ["--bench", ALL_GPU, "--sizes", "1:256K", "--factor", "64",
                              "--time-cap", "0.02", "--path", path, *extra, "--output",
                              str(out)], STANDIN)
        assert p.returncode == 0, p.stderr[-2000:]
        parsed = parse_file(out)
        assert parsed.footer and parsed.footer["status"] == "ok"
        hdr = json.loads(out.read_text().splitlines()[0])
        assert hdr["path"]["path"] == path and hdr["path"]["standin"] is True
        benches = {r.bench for r in parsed.results}
        assert benches == set(ALL_GPU.split(",")), benches
        assert all(r.valid for r in parsed.results)
        bw = [r for r in parsed.results if r.bench == "bw" and r.size_bytes == 262144]
        # a whole window checked, each message in its own slot (the window may be
        # narrowed to fit the time cap).  Noise policy: beside a busy core one
        # 256 KiB message once took past the 4 ms a 0.02 s cap leaves a window,
        # which narrowed to 1; then that size alone again, with room for a window
        assert bw and bw[0].window
        if bw[0].window == 1:
            print(f"{family} {path}: the window at 256 KiB narrowed to 1 (a message took "
                  "over 4 ms): measured again under a 0.5 s cap")
            again = tmp_path / f"{family}-{path}-bw.jsonl"
            p = _mpirun(core, 2, ["--bench", "bw", "--sizes", "256K", "--time-cap", "0.5",
                                  "--path", path, *extra, "--output", str(again)], STANDIN)
            assert p.returncode == 0, p.stderr[-2000:]
            bw = parse_file(again).results
        assert bw[0].valid and bw[0].window > 1, bw
        assert bw[0].checked_msgs >= bw[0].window


@pytest.mark.parametrize("bench,path", [("bw", "staged"), ("allreduce", "staged"),
                                        ("latency", "staged-pipelined"),
                                        ("bcast", "staged-pipelined")])
def test_a_corrupted_message_on_the_staged_path_is_caught(tmp_path, cores, bench, path):
    """The check reads the (stand-in) device buffer through its host view:
    a byte spoiled there after the transfer fails the record."""
    core = next(iter(cores.values()))
    out = tmp_path / "bad.jsonl"
    p = _mpirun(core, 2, ["--bench", bench, "--sizes", "4K", "--time-cap", "0.02", "--path",
                          path, "--stage-chunk", "1000", "--inject", "corrupt@4096", "--output",
                          str(out)], STANDIN)
    assert p.returncode != 0
    parsed = parse_file(out)
    assert [r.valid for r in parsed.results] == [False]
    assert "VALIDATION FAILED" in p.stderr


@pytest.mark.parametrize("path", ["ipc", "nccl"])
def test_ipc_and_nccl_need_a_real_gpu_not_a_stand_in(tmp_path, cores, path):
    core = next(iter(cores.values()))
    out = tmp_path / "s.jsonl"
    p = _mpirun(core, 2, ["--bench", "latency", "--sizes", "8", "--path", path, "--output",
                          str(out)], STANDIN)
    assert p.returncode != 0
    footer = parse_file(out).footer
    assert footer and footer["status"] == "skipped"
    assert "needs a real GPU" in footer["reason"]


def test_the_gpu_applications_skip_without_a_gpu_and_refuse_host_memory(capsys, tmp_path, cores):
    family = sorted(cores)[0]
    core = cores[family]
    if _sees_gpu(core):
        pytest.skip("this machine has a GPU")
    db = tmp_path / "a.db"
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(db), "--mpi", family, "--path", "all",
                     "--bench", "gpu_matmul,gpu_jacobi", "--param", "N=64", "--np", "4",
                     "--time-cap", "0.05", "--no-probe", "--quiet")
    assert rc == 0, err
    store = Store(db)
    runs = {json.loads(r["config"])["buffer"]: r for r in store.runs()}
    store.close()
    # no host job (they need a device), no ipc job (point-to-point only)
    assert sorted(runs) == ["cuda-aware", "nccl", "staged", "staged-pageable", "staged-pipelined"]
    assert all(r["status"] == "skipped" and "no GPU" in r["stderr_tail"] for r in runs.values())
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(db), "--mpi", family, "--bench", "gpu_jacobi",
                     "--param", "N=64", "--no-probe", "--quiet")
    one_line_error(rc, err, "gpu_jacobi runs on a GPU path")


def _results(out) -> list:
    parsed = parse_file(out)
    assert parsed.footer is not None
    return parsed.results


@pytest.mark.parametrize("path", ["staged", "staged-pipelined", "cuda-aware"])
def test_the_gpu_applications_move_multiply_and_check_on_the_stand_in(tmp_path, cores, path):
    """gpu_matmul and gpu_jacobi with host memory standing in for the device
    (their kernels as host loops): every grid shape at 2 and 4 ranks
    (oversubscribed here: correctness only), the product checked exactly and
    the grid bit for bit.  This caught gpu_matmul reading A's rows at the
    wrong place wherever a grid row had two ranks (py > 1)."""
    core = cores[sorted(cores)[0]]
    for np_, grid in [(2, ""), (2, ";px=1"), (4, ""), (4, ";px=1"), (4, ";py=1")]:
        out = tmp_path / f"{np_}{grid}.jsonl"
        p = _mpirun(core, np_, ["--bench", "gpu_matmul,gpu_jacobi", "--param", f"N=9{grid}",
                                "--path", path, "--time-cap", "0.02", "--output", str(out)],
                    STANDIN)
        assert p.returncode == 0, p.stderr[-2000:]
        got = {r.bench: r for r in _results(out)}
        assert sorted(got) == ["gpu_jacobi", "gpu_matmul"]
        assert all(r.valid for r in got.values()), [r.error for r in got.values()]


def test_gpu_jacobi_scales_weakly_as_the_cpu_jacobi_does(tmp_path, cores):
    """scale=weak: N per rank and side, so 4 ranks on a 2 x 2 grid solve an
    18 x 18 grid for N=9, checked against the serial sweeps of that grid."""
    core = cores[sorted(cores)[0]]
    out = tmp_path / "weak.jsonl"
    p = _mpirun(core, 4, ["--bench", "gpu_jacobi", "--param", "N=9;scale=weak", "--path",
                          "staged", "--time-cap", "0.02", "--output", str(out)], STANDIN)
    assert p.returncode == 0, p.stderr[-2000:]
    (r,) = _results(out)
    assert r.valid and "scale=weak" in r.params
    # each of the 4 ranks holds a 9 x 9 block: the stencil reads and writes it
    compute = r.phases["compute"]["bytes_ranks"]
    strong = tmp_path / "strong.jsonl"
    p = _mpirun(core, 4, ["--bench", "gpu_jacobi", "--param", "N=18", "--path", "staged",
                          "--time-cap", "0.02", "--output", str(strong)], STANDIN)
    assert p.returncode == 0, p.stderr[-2000:]
    assert _results(strong)[0].phases["compute"]["bytes_ranks"] == compute == [25920] * 4


@pytest.mark.parametrize("bench", ["gpu_matmul", "gpu_jacobi"])
def test_the_applications_corruption_hook_fails_validation_on_the_stand_in(tmp_path, cores,
                                                                            bench):
    """The last rank's data spoiled before it moves (gpu_matmul: C before it
    goes to rank 0, where it is checked): the record is invalid."""
    core = cores[sorted(cores)[0]]
    out = tmp_path / "bad.jsonl"
    p = _mpirun(core, 2, ["--bench", bench, "--param", "N=16", "--path", "staged",
                          "--time-cap", "0.02", "--inject", "corrupt@16", "--output", str(out)],
                STANDIN)
    assert p.returncode != 0
    assert [r.valid for r in _results(out)] == [False]
    assert "VALIDATION FAILED" in p.stderr


@pytest.mark.parametrize("path,copy", [("staged", "the copy to the device"),
                                       ("staged-pipelined", "the queued copy to the device")])
def test_a_failing_gpu_call_says_why_in_the_record(tmp_path, cores, monkeypatch, capsys, path,
                                                   copy):
    """A device copy that fails mid-run (acted out on the stand-in) ends the
    job, and its reason, not 'unknown error', is what the store keeps."""
    monkeypatch.setenv("COMMSCOPE_GPU_STANDIN", "host")
    family = sorted(cores)[0]
    db = tmp_path / "f.db"
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(db), "--mpi", family, "--bench", "latency",
                     "--sizes", "64", "--path", path, "--inject", "gpufail@64",
                     "--time-cap", "0.02", "--no-probe", "--quiet")
    assert rc == 1
    store = Store(db)
    (r,) = store.runs()
    store.close()
    assert r["status"] == "failed"
    assert (f"{path} failed in latency at 64 bytes (validation run): {copy} failed: injected "
            "failure") in r["stderr_tail"], r["stderr_tail"]
    assert "unknown error" not in r["stderr_tail"]


def test_a_rank_that_aborts_writes_its_reason_where_the_runner_reads_it(tmp_path, cores):
    """The launcher may drop a rank's last stderr lines when MPI_Abort tears
    the job down (MPICH's Hydra did in about a third of these jobs, and the
    store kept 'exit code 5'): the rank writes its reason into CS_ERROR_DIR."""
    core = cores[sorted(cores)[0]]
    where = tmp_path / "errs"
    where.mkdir()
    env = {**STANDIN, "CS_ERROR_DIR": str(where)}
    p = _mpirun(core, 2, ["--bench", "latency", "--sizes", "64", "--path", "staged",
                          "--inject", "gpufail@64", "--time-cap", "0.02",
                          "--output", str(tmp_path / "r.jsonl")], env)
    assert p.returncode != 0
    said = [x for f in where.glob("abort-*.err") for x in f.read_text().splitlines()]
    assert said and all("copy to the device failed: injected failure" in x for x in said), said
    assert runner._aborts(where) == said


def test_a_gpu_failure_cannot_be_acted_out_where_nothing_copies(capsys, tmp_path, cores):
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(tmp_path / "h.db"), "--mpi", sorted(cores)[0],
                     "--bench", "latency", "--inject", "gpufail@8", "--no-probe", "--quiet")
    one_line_error(rc, err, "--inject gpufail fails a staged or cuda-aware path's copy, not "
                            "--path host's")


@needs_nvcc
def test_a_header_installed_later_makes_another_gpu_object(tmp_path, monkeypatch):
    """NCCL's header from pip (site-packages/nvidia/nccl/include) is found and
    put on nvcc's path; which header was found, and its text, are part of the
    build's key, so a core built before it was there is not reused."""
    real = next(d for d in build._header_dirs(NVCC) if (d / "nccl.h").is_file())
    pip = tmp_path / "site" / "nvidia" / "nccl" / "include"
    pip.mkdir(parents=True)
    monkeypatch.setattr(build, "_header_dirs", lambda c: [tmp_path / "cuda", pip])
    (tmp_path / "cuda").mkdir()
    flags, none = build.cuda_headers(NVCC)
    assert flags == [] and none == "nccl=none cublas=none"
    (pip / "nccl.h").write_bytes((real / "nccl.h").read_bytes())
    flags, found = build.cuda_headers(NVCC)
    assert flags == [f"-I{pip}"] and found.startswith(f"nccl={pip}:")
    (pip / "nccl.h").write_bytes((real / "nccl.h").read_bytes() + b"\n")
    assert build.cuda_headers(NVCC)[1] != found
    assert build.cuda_headers(NVCC, ("nccl",)) == ([], none)


def test_an_oversized_gpu_matmul_is_refused_before_launch_with_the_figure(capsys, tmp_path,
                                                                           cores, monkeypatch):
    monkeypatch.setenv("COMMSCOPE_GPU_STANDIN", "host")  # past the 'no GPU' refusal
    family = sorted(cores)[0]
    rc, _, err = run(capsys, "run", "--no-advise", "--db", str(tmp_path / "o.db"), "--mpi", family,
                     "--bench", "gpu_matmul", "--param", "N=4096,20000", "--path", "staged",
                     "--no-probe", "--quiet")
    one_line_error(rc, err, "gpu_matmul N=20000 is refused: at most N=16384 is run; rank 0 "
                            "would hold 17.9 GiB of device memory")
    assert not (tmp_path / "o.db").exists() or not Store(tmp_path / "o.db").runs()


def test_cuda_aware_asked_of_an_mpi_built_without_cuda_is_one_line(capsys, tmp_path, cores):
    if "openmpi" not in cores:
        pytest.skip("Open MPI answers how it was built before MPI_Init; MPICH only inside a job")
    assert build.gpu_info(cores["openmpi"])["mpi_cuda_support"]["compile_time"] is False
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(tmp_path / "c.db"), "--mpi", "openmpi",
                     "--bench", "latency", "--path", "cuda-aware", "--no-probe", "--quiet")
    one_line_error(rc, err, "--path cuda-aware: openmpi (Open MPI v4.1")
    assert "was built without CUDA support" in err and "mpi install openmpi-cuda" in err


@needs_nvcc
def test_the_core_builds_without_the_nccl_and_cublas_headers_and_says_so(impls):
    """As a machine without NCCL's and cuBLAS's development files builds it:
    the core starts, and the nccl path and gpu_matmul say what is missing."""
    impl = impls[sorted(impls)[0]]
    full = build.build(impl)
    bare = build.build(impl, without=("nccl", "cublas"))
    assert bare.exe != full.exe
    info = build.gpu_info(bare)
    assert info["cuda_built"] is True
    assert "built without NCCL's header (nccl.h)" in info["nccl"]
    assert "built without cuBLAS's header (cublas_v2.h)" in info["cublas"]
    assert build.gpu_info(full)["nccl"] == "" and build.gpu_info(full)["cublas"] == ""


def test_the_gpu_bench_keeps_its_store_and_resumes_where_it_stopped(tmp_path, cores):
    """bench/gpu.py on the stand-in (--small): a phase's results and its
    completion stay in --store and come out in --out; a second call runs
    nothing that is done; a folder holding anything else is refused."""
    if "openmpi" not in cores:
        pytest.skip("the bench runs with Debian's Open MPI here")
    script = build.core_dir().parent / "bench" / "gpu.py"
    env = environ({"COMMSCOPE_GPU_STANDIN": "host"})
    store, out = tmp_path / "store", tmp_path / "out"

    def bench(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), "--small", "--mpi", "openmpi",
                               *argv], capture_output=True, text=True, timeout=300, env=env)

    p = bench("--store", str(store), "--out", str(out), "--only", "paths,matmul-2,cpu")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    done = json.loads((store / "progress.json").read_text())
    assert sorted(done) == ["cpu", "matmul-2", "paths"] and all(d["done"] for d in done.values())
    assert (out / "gpu.db").is_file() and (out / "progress.json").is_file()
    runs = Store(str(store / "gpu.db")).runs()
    # noise policy: where other processes took the CPU (a busy loop, another test under
    # pytest -n 2), a bw window narrows to the time cap and that size is measured again
    # at a common window, in a job of bw alone; each such job is one a record names
    again = {int(r["id"]) for r in runs if r["bench"] == "bw"}
    with sqlite3.connect(store / "gpu.db") as db:
        named = {n for (n,) in db.execute("SELECT DISTINCT narrowed_in FROM results WHERE "
                                          "narrowed_in IS NOT NULL")}
    assert again == named, (again, named)
    assert {r["bench"] for r in runs} - {"bw"} == {"latency,bw", "gpu_matmul", "matmul,jacobi"}
    # ipc and nccl need a real GPU: skipped, with the reason; everything else measured
    assert {r["status"] for r in runs if r["bench"] != "latency,bw"} == {"ok"}
    assert {json.loads(r["config"])["buffer"] for r in runs if r["status"] == "skipped"} == \
        {"ipc", "nccl"}
    # what comes back is drawn here: the report's GPU section
    rep = tmp_path / "report"
    q = subprocess.run([sys.executable, "-m", "commscope.cli", "report", "--db",
                        str(out / "gpu.db"), "--out", str(rep)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert q.returncode == 0, q.stderr[-2000:]
    assert "GPU buffers" in (rep / "index.html").read_text()
    p = bench("--store", str(store), "--only", "paths,matmul-2,cpu")
    assert p.returncode == 0 and "phase matmul-2:" not in p.stdout, p.stdout[-2000:]
    assert len(Store(str(store / "gpu.db")).runs()) == len(runs)  # nothing run twice
    assert "gpu_matmul  N=96" in p.stdout and "0 invalid record(s)" in p.stdout
    # what came back (read-only, as a device call's files land) goes on in another store
    for f in out.iterdir():
        f.chmod(0o444)
    again = tmp_path / "again"
    p = bench("--store", str(again), "--take", str(out))
    assert p.returncode == 0 and "phases done: paths, matmul-2, cpu" in p.stdout, p.stdout
    assert all((again / f).stat().st_mode & 0o200 for f in ("gpu.db", "progress.json"))
    p = bench("--store", str(again), "--only", "paths,matmul-2,cpu")
    assert p.returncode == 0 and "phase " not in p.stdout, p.stdout[-2000:]
    assert len(Store(str(again / "gpu.db")).runs()) == len(runs)
    # a budget too small for the next phase: stops before it, says how to go on
    p = bench("--store", str(store), "--only", "weak", "--budget", "10")
    assert p.returncode == 3 and "run again with the same --store" in p.stdout, p.stdout
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.db").write_text("")
    p = bench("--store", str(tmp_path / "other"))
    assert p.returncode == 2 and "not a store of this script" in p.stdout


@pytest.mark.parametrize("argv,says", [
    (["--store", ""], "argument --store: an empty value"),
    (["--pack", ""], "argument --pack: an empty value"),
    (["--store", "FILE"], "is not a folder"),
    (["--store", "DIR", "--take", "FILE"], "is not a folder"),
    (["--store", "DIR", "--only", "nope"], "unknown phase(s) nope"),
    (["--seeds", "--store", "DIR", "--budget", "-1"], "-1 is no budget"),
    (["--seeds", "--store", "DIR", "--budget", "nan"], "nan is no budget"),
    (["--seeds", "--store", "DIR", "--budget", "ten\xff"], "is not a number of seconds"),
])
def test_the_gpu_bench_refuses_bad_folders_in_one_line(tmp_path, argv, says):
    (tmp_path / "f").write_bytes(b"\x00\xff")
    argv = [str(tmp_path / "f") if x == "FILE" else str(tmp_path / "d") if x == "DIR" else x
            for x in argv]
    p = subprocess.run([sys.executable, str(build.core_dir().parent / "bench" / "gpu.py"),
                        *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and says in p.stderr.strip().splitlines()[-1], p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "d").exists()


def _gpu_bench():
    sys.path.insert(0, str(build.core_dir().parent / "bench"))
    try:
        import gpu  # bench/gpu.py
    finally:
        sys.path.pop(0)
    return gpu


def test_the_seeds_preflight_reads_nvidia_smi_and_says_what_a_setting_costs():
    gpu = _gpu_bench()
    text = ("NVIDIA H200, Default, Enabled, 143771 MiB, 580.159.03\n"
            "NVIDIA H100 80GB HBM3, Exclusive_Process, Disabled, 81559 MiB, 580.159.04\n"
            "No devices were found\n")
    gpus = gpu.parse_smi(text)
    assert [g["name"] for g in gpus] == ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    assert gpus[1]["compute_mode"] == "Exclusive_Process" and gpus[0]["driver_version"] == \
        "580.159.03"
    said = gpu.smi_verdicts(gpus)
    assert len(said) == 2 and all(s.startswith("GPU 1") for s in said), said
    assert "more than one rank" in said[0] and "persistence mode is off" in said[1]
    assert gpu.smi_verdicts(gpus[:1]) == []


def test_the_seeds_plan_fits_a_lease_each_phase_under_its_own_cap():
    """--seeds: every phase without the diagnosis, at a fixed window, with a
    timeout per job; caps that with the build and preflight end inside 8
    minutes; the largest matrix last; without CUDA support no cuda-aware."""
    gpu = _gpu_bench()
    plan = gpu.seeds_plan(small=False)
    assert [n for n, _, _ in plan] == ["smoke", "paths", "matmul", "weak", "rest"]
    assert sum(cap for _, cap, _ in plan) + 60 <= 8 * 60  # 60 s: build, preflight, copies

    def options(argv: list[str]) -> dict[str, str]:
        return {x: v for x, v in zip(argv, argv[1:], strict=False) if x.startswith("--")
                and not v.startswith("--")}

    for name, _, argv in plan:
        opt = options(argv)
        assert "--no-advise" in argv and opt.get("--window") == "64" and "--timeout" in argv
        assert "nccl" not in opt["--path"], name  # one GPU: NCCL refuses two ranks on it
    opt = {n: options(a) for n, _, a in plan}
    assert opt["paths"]["--sizes"] == "1:4M" and opt["paths"]["--repeat"] == "3"
    assert opt["paths"]["--path"] == "host,staged,cuda-aware"
    ns = [int(x) for x in opt["matmul"]["--param"].removeprefix("N=").split(",")]
    assert ns == sorted(ns) and ns[0] == 2000 and ns[-1] == 10000 and opt["matmul"]["--np"] == "4"
    assert opt["weak"]["--np"] == "1,2,4" and opt["weak"]["--param"] == "N=4096;scale=weak"
    # the time cap holds a window of 64 x 4 MiB at 2.7 GB/s: 5 windows (the core's
    # CS_MIN_SAMPLES_UNDER_CAP) fit, so no window narrows and nothing is relaunched
    cap = float(opt["paths"]["--time-cap"])
    assert 64 * (4 << 20) / 2.7e9 * 5 <= cap
    assert all("cuda-aware" not in a for n, _, a in gpu.seeds_plan(False, cuda_aware=False)
               if n != "smoke")


def test_the_seeds_run_on_the_stand_in_ends_with_every_figure(tmp_path, cores):
    """The one command of a lease, end to end on host memory standing in:
    the preflight first, every phase ok with every record checked, no window
    narrowed and nothing measured again, the figures and the store in --out."""
    if "openmpi" not in cores:
        pytest.skip("the bench runs with Debian's Open MPI here")
    store, out = tmp_path / "store", tmp_path / "out"
    p = subprocess.run([sys.executable, str(build.core_dir().parent / "bench" / "gpu.py"),
                        "--seeds", "--small", "--mpi", "openmpi", "--store", str(store),
                        "--out", str(out)], capture_output=True, text=True, timeout=300,
                       env=environ({"COMMSCOPE_GPU_STANDIN": "host"}))
    lines = p.stdout.splitlines()
    text = (out / "seeds.txt").read_text()
    assert lines.index(next(x for x in lines if x.startswith("kernel: "))) < \
        lines.index(next(x for x in lines if x.startswith("phase smoke")))
    for phase in ("smoke", "paths", "matmul", "weak"):
        assert f"phase {phase}: ok in " in text, text
    # rest: ipc needs a real GPU, stored as skipped with the reason
    assert "phase rest: exit 1" in text and "needs a real GPU" in text
    assert "0 failed job(s), 0 invalid record(s)" in text
    for figure in ("peak bw cuda-aware", "cuda-aware over staged at 64 KiB",
                   "gpu_matmul N=64 np=4 staged", "gpu_jacobi weak staged: np=1",
                   "note: ranks share one GPU"):
        assert figure in text, figure
    db = sqlite3.connect(out / "gpu.db")
    # noise policy: a window narrowed in a record flagged noisy (other processes used the
    # CPU while its size or its job ran: another test's job, pytest -n 2) is the harness
    # fitting the time cap on a busy machine; on a quiet one none narrows.  The job's
    # flag counts too: beside a busy loop and another test, 64 KiB narrowed to 1 in 9
    # records whose own size saw little of the others' CPU, their jobs much
    windows = {w for (w,) in db.execute(
        "SELECT DISTINCT s.window FROM results s JOIN runs r ON r.id = s.run_id WHERE "
        "s.bench = 'bw' AND json_extract(r.config, '$.buffer') IN ('host', 'staged', "
        "'cuda-aware') AND NOT (s.window < 64 AND s.flagged)")}
    # and a size measured again at a common window is one whose window narrowed so
    again = db.execute(
        "SELECT count(*) FROM results a WHERE a.narrowed_in IS NOT NULL AND NOT EXISTS ("
        "SELECT 1 FROM results b WHERE b.bench = a.bench AND b.size_bytes = a.size_bytes "
        "AND b.window < 64 AND b.flagged)").fetchone()
    paths_jobs = db.execute("SELECT count(*) FROM runs WHERE bench='latency,bw' AND "
                            "json_extract(config, '$.buffer') IN ('host', 'staged', "
                            "'cuda-aware')").fetchone()
    db.close()
    assert windows == {64} and again == (0,) and paths_jobs == (9,)  # 3 paths x 3 rounds
    assert (out / "smoke.db").is_file() and (out / "progress.json").is_file()
    q = subprocess.run([sys.executable, str(build.core_dir().parent / "bench" / "gpu.py"),
                        "--seeds", "--small", "--mpi", "openmpi", "--store", str(store)],
                       capture_output=True, text=True, timeout=60,
                       env=environ({"COMMSCOPE_GPU_STANDIN": "host"}))
    assert q.returncode == 2 and "a store folder of its own" in q.stdout


def test_werror_is_dropped_only_where_asked(monkeypatch):
    monkeypatch.delenv("COMMSCOPE_WERROR", raising=False)
    assert "-Werror" in build.cflags()
    monkeypatch.setenv("COMMSCOPE_WERROR", "0")
    assert "-Werror" not in build.cflags() and "-Wall" in build.cflags()


@pytest.mark.parametrize("layout", ["lib64", "lib", "targets/x86_64-linux/lib", "home",
                                    "pip"])
def test_cudart_is_found_where_each_toolkit_puts_it(tmp_path, monkeypatch, layout):
    root = tmp_path / "cuda"
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("")
    where = {"home": tmp_path / "home" / "lib64",
             "pip": tmp_path / "nvidia" / "cuda_runtime" / "lib"}.get(layout, root / layout)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    with pytest.raises(build.CommscopeError, match="no libcudart_static.a.*looked in"):
        build.cudart_dir(nvcc)
    where.mkdir(parents=True)
    (where / "libcudart_static.a").write_bytes(b"!<arch>\n")
    assert build.cudart_dir(nvcc) == where


def test_mps_is_told_from_the_processes_running(tmp_path):
    """MPS changed an H200's 1 B staged latency tenfold: a GPU path's
    configuration says whether its daemon ran."""
    from commscope.measure.plan import mps_running
    for pid, comm in (("1", "init\n"), ("77", "bash\n")):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "comm").write_text(comm)
    assert not mps_running(tmp_path)
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "comm").write_text("nvidia-cuda-mps\n")  # comm keeps 15 characters
    (tmp_path / "4242" / "stat").write_text("4242 (nvidia-cuda-mps) Z 1 4242 4242 0 -1\n")
    assert not mps_running(tmp_path), "a daemon that quit and was not reaped serves nobody"
    (tmp_path / "4243").mkdir()
    (tmp_path / "4243" / "comm").write_text("nvidia-cuda-mps\n")
    (tmp_path / "4243" / "stat").write_text("4243 (nvidia-cuda-mps) S 1 4243 4243 0 -1\n")
    assert mps_running(tmp_path)


def test_a_finding_never_sets_a_gpu_path_against_another_or_host_memory():
    """Where the data lives is the program's: 'prefer host to staged' is no
    advice (the GPU section compares paths)."""
    from commscope.analysis.findings import faster_implementation
    from commscope.analysis.series import Config, Point

    def series(scale: float) -> dict:
        return {s: Point(s, m * scale, m * scale * 0.99, m * scale * 1.01,
                         reps=(m * scale * 0.99, m * scale, m * scale * 1.01))
                for s, m in ((1, 1.0), (64, 1.2), (1024, 1.5))}

    host = Config("ompi", 2, "local", key="h", buffer="host", impl="ompi")
    staged = Config("ompi staged", 2, "local", key="s", buffer="staged", impl="ompi")
    data = {(host, "latency"): series(1.0), (staged, "latency"): series(150.0)}
    assert faster_implementation(data) == []
    other = Config("mpich", 2, "local", key="m", buffer="host", impl="mpich")
    data[(other, "latency")] = series(150.0)
    assert [f.kind for f in faster_implementation(data)] == ["faster"]


def test_a_device_stencils_rate_is_not_set_against_the_hosts_copy():
    """The job's copy is measured in host memory: an H200's stencil at
    2.8 TB/s read '= 160 x the copy ... came from cache'.  On a GPU path the
    rate stands alone; on host memory the comparison stays."""
    from commscope.analysis import apps
    ph = json.dumps({"compute": {"max_us": 2000.0, "ranks_us": [2000.0],
                                 "bytes_ranks": [5.37e9]}})
    row = {"phases": ph, "copy_gbs": 8.5, "config": json.dumps({"mpi": "m", "buffer": "staged"})}
    text = apps.memory_rate(row).text()
    assert "in device memory" in text and " x the copy" not in text, text
    row["config"] = json.dumps({"mpi": "m", "buffer": ""})
    assert " x the copy" in apps.memory_rate(row).text()


def test_a_gpu_paths_non_monotone_latency_names_no_threshold():
    """On an H200 without MPS, staged sends of 1 B-16 KiB took 152-162 us and
    64 KiB 34 us: the guideline is said, its catalogue cause is not."""
    from commscope.analysis import guidelines
    from commscope.analysis.series import Config, Point

    def pts(ms: dict[int, float]) -> dict:
        return {s: Point(s, m, m * 0.99, m * 1.01, reps=(m * 0.99, m, m * 1.01))
                for s, m in ms.items()}

    lat = {1: 152.0, 1024: 153.0, 16384: 161.0, 65536: 34.0, 262144: 67.0}
    for buffer, says in (("staged", "cause not established"), ("host", "mistuned")):
        cfg = Config("ompi", 2, "local", key=buffer, buffer=buffer, impl="ompi")
        res = guidelines.check({(cfg, "latency"): pts(lat)})
        found = [v for v in res.violations if v.guideline.startswith("monotony")]
        assert found and says in found[0].advice, (buffer, [v.advice for v in found])


def test_the_path_header_says_how_many_ranks_share_a_nodes_gpus(tmp_path, cores):
    """The core writes the ranks on rank 0's node and the GPUs it sees
    (none on the stand-in); the store keeps it with the run's header."""
    core = cores[sorted(cores)[0]]
    out = tmp_path / "r.jsonl"
    p = _mpirun(core, 2, ["--bench", "latency", "--sizes", "1:1", "--path", "staged",
                          "--time-cap", "0.02", "--output", str(out)], STANDIN)
    assert p.returncode == 0, p.stderr[-2000:]
    header = parse_file(out).header
    assert header.path["ranks_on_node"] == 2 and header.path["gpus"] == 0, header.path


def test_the_report_says_where_ranks_shared_a_gpu():
    """Fixed runs: more ranks on a node than GPUs is shared, as many is
    not, a header from before the core said is unknown; one rank and host
    memory are left out."""
    from commscope.report import sections

    def run(i, np_, path):
        hdr = json.dumps({"path": path} if path is not None else {})
        return {"id": i, "bench": "gpu_jacobi", "np": np_, "header": hdr}

    class Runs:
        def runs(self):
            return [run(1, 4, {"path": "staged", "ranks_on_node": 4, "gpus": 1}),
                    run(2, 4, {"path": "staged", "ranks_on_node": 4, "gpus": 4}),
                    run(3, 2, None), run(4, 1, {"path": "staged", "ranks_on_node": 1,
                                                 "gpus": 1}),
                    run(5, 2, {"path": "host"}), run(6, 4, {"path": "staged",
                                                            "ranks_on_node": 4, "gpus": 1})]

    assert sections.gpu_sharing(Runs(), {1, 2, 3, 4, 5}) == {"shared": 1, "own": 1,
                                                              "unknown": 1}


def test_the_leases_one_command_fits_a_device_call():
    """docs/gpu.md's command for a lease: one line of at most 2,000
    characters (the device tool's limit), running --seeds into $OUT."""
    doc = (build.core_dir().parent / "docs" / "gpu.md").read_text()
    lines = [ln.strip() for ln in doc.splitlines() if "bench/gpu.py --seeds" in ln
             and ln.strip().startswith("set -o pipefail;")]
    assert len(lines) == 1, lines
    assert len(lines[0]) <= 2000, len(lines[0])
    assert "--out $OUT" in lines[0] and "--cache .carry/cache" in lines[0]


def test_a_phase_is_judged_by_its_own_jobs(tmp_path):
    """The MPS lease's weak and rest phases each said '1 of N job(s) failed':
    the matmul job cut at its cap, counted again.  A phase's verdict reads
    the runs stored after it began."""
    gpu = _gpu_bench()
    db = tmp_path / "g.db"
    st = Store(str(db))
    ids = []
    for status in ("failed", "ok"):
        ids.append(st.db.execute(
            "INSERT INTO runs (started_at, status, plan_key, bench, np, sizes, mpi_name, "
            "mpi_family, launch_argv, stderr_tail) VALUES ('t', ?, 'k', 'gpu_jacobi', 2, '', "
            "'m', 'openmpi', '[]', 'interrupted by the user')", (status,)).lastrowid)
    st.db.commit()
    st.close()
    assert gpu.judge(db).startswith("1 of 2 job(s) failed")
    assert gpu.last_run(db) == ids[1]
    assert gpu.judge(db, after=ids[0]) == "no record"  # its one job ran; it stored no record
