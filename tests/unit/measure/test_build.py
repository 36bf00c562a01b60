"""Compiler variants: the same implementation's wrapper driving another C
compiler (--cc) is another build of the core and another configuration, so
the same MPI built with two compilers can be compared in one sweep."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from commscope.errors import CommscopeError
from commscope.measure import build, mpi
from commscope.store.db import Store
from tests.helpers import one_line_error, run


def test_each_family_is_told_through_its_own_variable():
    for family, var in (("openmpi", "OMPI_CC"), ("mpich", "MPICH_CC"), ("intel", "I_MPI_CC")):
        impl = mpi.MpiImpl("x", family, "/x/mpicc", "/x/mpiexec", "user", {"A": "1"})
        v = mpi.with_compiler(impl, "gcc")
        assert v.cc == "gcc" and v.env == {"A": "1", var: "gcc"}
        assert impl.env == {"A": "1"}  # the original is unchanged


@pytest.mark.parametrize("cc,needle", [("no-such-cc-xyz", "compiler not found: no-such-cc-xyz"),
                                       ("gcc -O0", "not a compiler name or path")])
def test_a_bad_compiler_is_one_line(capsys, cc, needle):
    rc, _, err = run(capsys, "build", "--cc", cc)
    one_line_error(rc, err, needle)


needs_clang = pytest.mark.skipif(not shutil.which("clang"), reason="clang not installed")


@pytest.mark.mpi
@needs_clang
def test_a_wrapper_that_ignores_the_compiler_is_refused(impls):
    impl = mpi.with_compiler(next(iter(impls.values())), "clang")
    deaf = dataclasses.replace(impl, env={})  # the variable never reaches the wrapper
    with pytest.raises(CommscopeError, match="wrapper ignored --cc clang .*built by gcc"):
        build.build(deaf, force=True)


@pytest.mark.mpi
@needs_clang
def test_gcc_and_clang_side_by_side(capsys, tmp_path, impls):
    db = tmp_path / "cc.db"
    names = sorted(impls)
    rc, out, err = run(capsys, "run", "--no-advise",
                       "--db", str(db), "--mpi", ",".join(names), "--cc",
                       "gcc,clang", "--bench", "latency,allreduce", "--sizes", "8:4K",
                       "--factor", "8", "--min-samples", "5", "--time-cap", "0.1", "--no-probe",
                       "--no-advise", "--show")
    assert rc == 0, err
    for n in names:  # one column per implementation and compiler
        assert f"{n} cc=clang" in out and f"{n} cc=gcc" in out
    store = Store(db, create=False)
    runs = store.runs()
    # one launch per implementation and compiler runs both benchmarks
    assert len(runs) == 2 * len(names) and all(r["status"] == "ok" for r in runs)
    seen = {}
    for r in runs:
        cfg = json.loads(r["config"])
        cc = cfg["extra"]["cc"]
        compiler = json.loads(r["header"])["compiler"]
        assert compiler.startswith({"gcc": "gcc 1", "clang": "clang 1"}[cc]), compiler
        seen.setdefault((cfg["mpi"], cc), set()).add(r["config_key"])
    assert sorted(seen) == sorted((n, c) for n in names for c in ("clang", "gcc"))
    # one configuration per implementation and compiler, none shared
    assert all(len(ks) == 1 for ks in seen.values())
    assert len({k for ks in seen.values() for k in ks}) == len(seen)
    rows = store.result_rows()
    assert len(rows) == 2 * len(names) * 2 * 4 and all(r["valid"] for r in rows)  # 8 B to 4 KiB
