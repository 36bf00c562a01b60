"""commscope profile: a program commscope did not write, its MPI calls
counted on every rank by the PMPI library (core/profile/cs_profile.c).

The counts are checked against a program of ours with a known sequence of
calls (tests/c/profiled.c), under each Debian MPI; the faults (a program
that exits early, crashes, hangs, is not MPI, is not there) each end in a
recorded profile or one line; and hpcc, a real MPI program from Debian
that nobody here wrote, is profiled as a user would.  Noise policy: counts,
sizes, statuses and what is stored are asserted, never a time."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope import cli
from commscope.analysis import profile as prof
from commscope.measure import profile as measure
from commscope.store.db import Store
from tests.conftest import mpi_processes
from tests.helpers import ROOT


def _rank(rank: int, calls: list[tuple[str, int, int, int, int, float]], finalized=True):
    return {"rank": rank, "size": 2, "finalized": finalized, "wall_s": 2.0, "mpi_s": 0.5,
            "calls": [{"call": c, "comm_size": cs, "bucket": b, "n": n, "bytes": by,
                       "total_s": t, "min_s": t / n, "max_s": t / n}
                      for c, cs, b, n, by, t in calls]}


def test_the_summary_sums_ranks_per_call_size_and_communicator():
    ranks = [_rank(0, [("MPI_Init", 2, 0, 1, 0, 0.3), ("MPI_Send", 2, 4, 10, 80, 0.001),
                       ("MPI_Allreduce", 2, 14, 5, 40960, 0.2)]),
             _rank(1, [("MPI_Recv", 2, 4, 10, 80, 0.002), ("MPI_Allreduce", 2, 14, 5, 40960,
                                                             0.1),
                       ("MPI_Waitall", 0, 0, 2, 0, 0.05)], finalized=False)]
    s = prof.summarize(ranks)
    assert [(h.call, h.calls, h.ranks) for h in s.hot] == [
        ("MPI_Allreduce", 10, 2), ("MPI_Waitall", 2, 1), ("MPI_Recv", 10, 1),
        ("MPI_Send", 10, 1)]
    assert [h.call for h in s.setup] == ["MPI_Init"]  # apart: not the program's communication
    ar = s.hot[0]
    assert ar.sizes == "8 KiB" and ar.mean_us == pytest.approx(30000.0) and ar.bytes == 81920
    assert s.unfinished == (1,) and s.mpi_share == pytest.approx(0.25)
    text = prof.text(s, top=2)
    assert "time inside MPI between MPI_Init and MPI_Finalize: 25.0%" in text
    assert "ended without MPI_Finalize: rank(s) 1" in text
    assert "... and 2 more" in text
    line = next(x for x in text.splitlines() if x.startswith("MPI_Waitall"))
    assert line.split()[1:4] == ["1", "-", "-"]  # one rank, no communicator, no bytes


def test_each_node_s_share_inside_mpi_and_the_ranks_a_cluster_lost():
    """Fixed ranks of a profile over three nodes: each node's share of its
    ranks' time inside MPI; no line where the ranks ran on one node (or did
    not say); ranks whose files did not come back are counted and said."""
    from commscope.cli.profile import missing_note

    ranks = [_rank(r, [("MPI_Send", 2, 4, 10, 80, share)]) for r, share in
             ((0, 0.1), (1, 0.3), (2, 0.5), (3, 0.5))]
    for r, host, mpi in zip(ranks, ("a-n0", "a-n0", "a-n1", "a-n2"), (0.2, 0.6, 1.0, 1.0),
                            strict=True):
        r["host"], r["mpi_s"] = host, mpi  # of 2 s each
    text = prof.text(prof.summarize(ranks))
    assert "per node, time inside MPI: a-n0 20% (2 ranks), a-n1 50% (1 rank), a-n2 50% " \
        "(1 rank)" in text, text
    for r in ranks:
        r["host"] = "vm"
    assert "per node" not in prof.text(prof.summarize(ranks))
    assert missing_note(ranks, 4, Path("/shared/run")) == ""
    assert missing_note(ranks[:1], 4, Path("/home/u/run")) == (
        "note: 3 of 4 ranks wrote no profile: their node does not see /home/u/run (run from a "
        "folder every node shares); the figures are of the others")


def test_hot_calls_are_set_against_the_benchmark_at_their_message():
    """Fixed data: a program's allreduce of 6 KiB, interpolated between the
    benchmark's 4 and 8 KiB; a send that took 100x the latency: it waited;
    a wait has no benchmark; what is missing is one command."""
    from commscope.analysis.series import Config, Point

    ranks = [_rank(r, [("MPI_Allreduce", 2, 13, 10, 10 * 6144, 10 * 30e-6),
                       ("MPI_Send", 2, 4, 4, 32, 4 * 50e-6),
                       ("MPI_Waitall", 0, 0, 3, 0, 3 * 5e-6),
                       ("MPI_Bcast", 2, 9, 2, 800, 2 * 2e-6)]) for r in (0, 1)]
    mine = Config("openmpi", 2, "local", impl="openmpi", key="openmpi")
    other = Config("mpich", 2, "local", impl="mpich", key="mpich")
    tuned = Config("openmpi X=1", 2, "local", impl="openmpi", settings=(("X", "1"),),
                   key="openmpi X=1")
    series = {(mine, "allreduce"): {4096: Point(4096, 20.0, 19, 21),
                                    8192: Point(8192, 40.0, 39, 41)},
              # measured beside other work only: a figure, marked, not a missing one
              (mine, "latency"): {8: Point(8, 0.5, 0.4, 0.6, flagged=True),
                                  16: Point(16, 0.5, 0.4, 0.6)},
              (other, "bcast"): {256: Point(256, 1.0, 1, 1), 512: Point(512, 1.0, 1, 1)},
              (tuned, "allreduce"): {4096: Point(4096, 1.0, 1, 1), 8192: Point(8192, 1.0, 1, 1)},
              (tuned, "bcast"): {256: Point(256, 1.0, 1, 1), 512: Point(512, 1.0, 1, 1)}}
    # a barrier rank 0 spends 100x as long in as rank 1, its fastest call as the benchmark's
    ranks[0]["calls"].append({"call": "MPI_Barrier", "comm_size": 2, "bucket": 0, "n": 4,
                              "bytes": 0, "total_s": 4e-3, "min_s": 1e-6, "max_s": 3e-3})
    ranks[1]["calls"].append({"call": "MPI_Barrier", "comm_size": 2, "bucket": 0, "n": 4,
                              "bytes": 0, "total_s": 4e-5, "min_s": 1e-6, "max_s": 2e-5})
    ranks[0]["calls"].append({"call": "MPI_Sendrecv", "comm_size": 2, "bucket": 4, "n": 4,
                              "bytes": 32, "total_s": 4e-5, "min_s": 1e-5, "max_s": 1e-5})
    series[(mine, "barrier")] = {0: Point(0, 1.0, 0.9, 1.1)}
    rows = {a.hot.call: a for a in prof.against(prof.summarize(ranks), "openmpi", series)}
    bar = rows["MPI_Barrier"]
    assert bar.verdict == "slower than benchmarked" and bar.evidence == (
        "rank 0 spent 4.00 ms in it, rank 1 0.04 ms: the ranks arrive at it apart; its "
        "fastest call took 1.00 us (the benchmark's median 1.00)"), bar.evidence
    # an exchange both ways is set against no one-way benchmark
    assert rows["MPI_Sendrecv"].bench_us is None and "an exchange both ways" in (
        rows["MPI_Sendrecv"].missing)
    ar = rows["MPI_Allreduce"]
    assert ar.bench_us == pytest.approx(30.0) and ar.ratio == pytest.approx(1.0)  # not tuned's
    assert ar.verdict == "as benchmarked" and ar.per_rank == 10
    send = rows["MPI_Send"]
    assert send.ratio == pytest.approx(100.0) and send.verdict == "slower than benchmarked"
    assert send.busy and not rows["MPI_Allreduce"].busy
    # what the profile says of it: both ranks spent alike, so no "apart"; none as fast
    assert send.evidence == ""
    assert rows["MPI_Waitall"].bench == "" and "no benchmark times it alone" in (
        rows["MPI_Waitall"].missing)
    # neither mpich's bcast nor openmpi's under other settings is openmpi's own: missing,
    # and the one command that measures it
    assert rows["MPI_Bcast"].bench_us is None
    cmd = prof.measure_command(list(rows.values()), "openmpi", "my db.db")
    assert cmd == ("commscope run --db 'my db.db' --mpi openmpi --np 2 --bench bcast "
                   "--sizes 256:512 --repeat 3 --no-advise")
    text = prof.against_text(list(rows.values()))
    assert "slower than benchmarked (latency, openmpi, measured beside other work)" in text
    assert "no bcast stored for openmpi" in text


def test_why_a_call_has_no_benchmark_is_said_for_what_it_is():
    """A non-blocking start's time is the start's, not a transfer; a v, w
    or scan collective has no benchmark here; a wait is a wait."""
    for call in ("MPI_Iscan", "MPI_Ibarrier", "MPI_Isend", "MPI_Startall", "MPI_Imrecv"):
        assert prof.no_bench(call).startswith("a non-blocking start"), call
    for call in ("MPI_Alltoallw", "MPI_Scan", "MPI_Gatherv"):
        assert "no benchmark here times this collective" in prof.no_bench(call), call
    assert "persistent" in prof.no_bench("MPI_Recv_init")
    for call in ("MPI_Wait", "MPI_Iprobe", "MPI_Mprobe"):
        assert prof.no_bench(call) == prof.NO_BENCH[""], call
    # one-sided, its MPI_R* starts included (not taken for non-blocking collectives)
    for call in ("MPI_Put", "MPI_Rget", "MPI_Win_fence", "MPI_Fetch_and_op"):
        assert prof.no_bench(call).startswith("one-sided"), call


def test_a_program_run_across_nodes_is_set_against_the_benchmarks_of_those_nodes():
    """A profile taken on two emulated nodes: its world allreduce is set
    against the allreduce measured on those nodes, not on this machine; a
    call on a smaller communicator against nothing (how its ranks lie on the
    nodes is the program's); what is missing is measured there."""
    from commscope.analysis.series import Config, Point

    ranks = [_rank(r, [("MPI_Allreduce", 4, 13, 10, 10 * 6144, 10 * 30e-6),
                       ("MPI_Bcast", 4, 9, 2, 800, 2 * 2e-6),
                       ("MPI_Reduce", 2, 9, 2, 800, 2 * 2e-6)]) for r in range(4)]
    here = Config("openmpi", 4, "local", impl="openmpi", key="openmpi")
    there = Config("openmpi", 4, "emu:a 2 nodes", impl="openmpi", key="openmpi")
    series = {(here, "allreduce"): {4096: Point(4096, 2.0, 1.9, 2.1),
                                    8192: Point(8192, 4.0, 3.9, 4.1)},
              (there, "allreduce"): {4096: Point(4096, 20.0, 19, 21),
                                     8192: Point(8192, 40.0, 39, 41)},
              (here, "bcast"): {512: Point(512, 1.0, 0.9, 1.1), 1024: Point(1024, 1.0, 0.9, 1.1)},
              (here, "reduce"): {512: Point(512, 1.0, 0.9, 1.1), 1024: Point(1024, 1.0, 0.9, 1.1)}}
    where = prof.Where.of({"cluster": "emu:a", "nodes": 2, "ppn": 2})
    assert where.place == "emu:a 2 nodes" and where.np() == 4
    rows = {a.hot.call: a for a in prof.against(prof.summarize(ranks), "openmpi", series, where)}
    assert rows["MPI_Allreduce"].bench_us == pytest.approx(30.0)  # the nodes', not 3.0 here
    assert rows["MPI_Bcast"].bench_us is None and "on emu:a 2 nodes" in rows["MPI_Bcast"].missing
    assert rows["MPI_Reduce"].bench_us is None and "not known here" in rows["MPI_Reduce"].missing
    cmd = prof.measure_command(list(rows.values()), "openmpi", "d.db", where)
    assert cmd == ("commscope run --db d.db --mpi openmpi --cluster emu:a --nodes 2 --ppn 2 "
                   "--bench bcast --sizes 256:512 --repeat 3 --no-advise")
    # a profile of this machine: the local series, as before
    assert prof.Where.of({}) == prof.Where()
    local = {a.hot.call: a for a in prof.against(prof.summarize(ranks), "openmpi", series)}
    assert local["MPI_Allreduce"].bench_us == pytest.approx(3.0)


def _built(impl, tmp_path: Path) -> Path:
    exe = tmp_path / f"profiled-{impl.name}"
    subprocess.run([impl.mpicc, "-O2", "-g", "-o", str(exe),
                    str(ROOT / "tests" / "c" / "profiled.c")], check=True, capture_output=True)
    return exe


def _profile(capsys, db: Path, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["profile", "--db", str(db), *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _calls(ranks, rank: int) -> dict[tuple[str, int], tuple[int, int]]:
    r = next(x for x in ranks if x["rank"] == rank)
    return {(c["call"], c["bucket"]): (c["n"], c["bytes"]) for c in r["calls"]}


def test_the_known_sequence_is_counted_under_each_mpi(impls, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, impl in sorted(impls.items()):
        exe = _built(impl, tmp_path)
        db = tmp_path / f"{name}.db"
        # arguments reach the program unchanged: spaces, quotes, a dollar, a glob
        odd = ["a b", "it's", '"q"', "$HOME", "*"]
        rc, out, err = _profile(capsys, db, "--np", "2", "--", str(exe), "ok", *odd)
        assert rc == 0, (out, err)
        assert f"under {name}, 2 processes: ok" in out, out
        (row,) = Store(db, create=False).profiles()
        assert row["status"] == "ok" and row["mpi_name"] == name and row["exit_code"] == 0
        assert [x.removeprefix("arg[").removesuffix("]")
                for x in row["stdout_tail"].splitlines() if x.startswith("arg[")] == odd
        ranks = json.loads(row["data"])["ranks"]
        assert sorted(r["rank"] for r in ranks) == [0, 1] and all(r["finalized"] for r in ranks)
        r0, r1 = _calls(ranks, 0), _calls(ranks, 1)
        assert r0[("MPI_Send", 4)] == (10, 80) and ("MPI_Recv", 4) not in r0
        assert r1[("MPI_Recv", 4)] == (10, 80)
        for r in (r0, r1):
            assert r[("MPI_Allreduce", 14)] == (5, 5 * 8192)
            assert r[("MPI_Bcast", 9)] == (3, 3 * 400)
            assert r[("MPI_Barrier", 0)] == (2, 0)
            assert r[("MPI_Isend", 10)] == (2, 2 * 512) and r[("MPI_Irecv", 10)] == (2, 2 * 512)
            assert r[("MPI_Waitall", 0)] == (4, 0)
            assert r[("MPI_Init", 0)] == (1, 0)
            # persistent requests where they are set up, and each start with its messages
            assert r[("MPI_Send_init", 8)] == (1, 128) and r[("MPI_Recv_init", 8)] == (1, 128)
            assert r[("MPI_Startall", 9)] == (2, 512)
            # the other non-blocking collectives and alltoallw, completed by waits
            assert r[("MPI_Igather", 5)] == (1, 16) and r[("MPI_Ialltoallv", 5)] == (1, 24)
            assert r[("MPI_Iscan", 5)] == (1, 16) and r[("MPI_Alltoallw", 5)] == (1, 16)
        # a ready and a buffered non-blocking send, each completed by a wait
        assert r0[("MPI_Irsend", 5)] == (1, 24) and r0[("MPI_Ibsend", 5)] == (1, 24)
        assert r0[("MPI_Wait", 0)] == (5, 0) and r1[("MPI_Wait", 0)] == (4, 0)
        assert r1[("MPI_Irecv", 5)] == (1, 24) and r1[("MPI_Recv", 5)] == (1, 24)
        # a matched probe's receive at the 20 B that arrived (room for 32)
        assert r0[("MPI_Send", 5)] == (1, 20)
        assert r1[("MPI_Mprobe", 0)] == (1, 0) and r1[("MPI_Mrecv", 5)] == (1, 20)
        assert "MPI_Allreduce" in out and "time inside MPI" in out
        # where the program made them: the source lines of its calls (built with -g)
        src = (ROOT / "tests" / "c" / "profiled.c").read_text().splitlines()
        # the first line calling it by its MPI_ name (the "pmpi" mode's PMPI_Send is not it)
        line = {c: next(i for i, x in enumerate(src, 1)
                        if re.search(rf"(?<!P){c}\(", x) and "helper" not in x)
                for c in ("MPI_Send", "MPI_Allreduce", "MPI_Bcast")}
        sites = {(x.call, x.calls, x.ranks) for x in prof.sites(ranks)}
        assert {("MPI_Send", 10, 1), ("MPI_Allreduce", 10, 2), ("MPI_Bcast", 6, 2)} <= sites
        for c, n in line.items():
            assert re.search(rf"main \(profiled\.c:{n}\)\s+{c}\s", out), (c, n, out)
        assert cli.main(["show", "--db", str(db), "--profile", "last"]) == 0
        shown = capsys.readouterr().out
        assert shown.startswith("profile 1: profiled-") and "MPI_Bcast" in shown
        assert f"main (profiled.c:{line['MPI_Send']})" in shown  # the stored sites, shown
        assert cli.main(["report", "--db", str(db), "--out", str(tmp_path / f"r-{name}")]) == 0
        page = (tmp_path / f"r-{name}" / "index.html").read_text()
        assert f"<td>main (profiled.c:{line['MPI_Allreduce']})</td><td>MPI_Allreduce" in page
        # asking for the other implementation is refused, naming the right one
        other = next((n for n in impls if n != name), None)
        if other:
            rc, out, err = _profile(capsys, db, "--mpi", other, "--", str(exe))
            assert rc != 0 and f"linked against {name}'s MPI" in err and "Traceback" not in err
    assert not mpi_processes()


def test_a_rank_that_ends_early_crashes_or_hangs_is_recorded(impls, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    impl = impls.get("openmpi") or next(iter(impls.values()))
    exe = _built(impl, tmp_path)
    db = tmp_path / "p.db"
    rc, out, err = _profile(capsys, db, "--", str(exe), "exit")
    assert rc == 1 and ": failed (exited with" in out, (out, err)
    ranks = json.loads(Store(db, create=False).profiles()[-1]["data"])["ranks"]
    r1 = next(r for r in ranks if r["rank"] == 1)
    # what it recorded until it left is kept, and said to be unfinished
    assert not r1["finalized"] and _calls(ranks, 1)[("MPI_Allreduce", 14)] == (5, 40960)
    rc, out, err = _profile(capsys, db, "--", str(exe), "crash")
    assert rc == 1 and ": failed" in out, (out, err)
    ranks = json.loads(Store(db, create=False).profiles()[-1]["data"])["ranks"]
    assert any(r["rank"] == 1 and not r["finalized"] and r["signal"] for r in ranks), ranks
    # a program's own handler still runs: the profiler's is chained before it
    rc, out, err = _profile(capsys, db, "--", str(exe), "ownterm")
    assert rc == 1 and ": failed" in out, (out, err)
    row = Store(db, create=False).profiles()[-1]
    assert "own handler ran" in row["stdout_tail"], row["stdout_tail"]
    ranks = json.loads(row["data"])["ranks"]
    assert any(r["rank"] == 1 and r["signal"] == 15 and not r["finalized"] for r in ranks)
    rc, out, err = _profile(capsys, db, "--timeout", "8", "--", str(exe), "hang")
    assert rc == 1 and ": timeout (killed after 8 s (its whole process group))" in out, out
    rows = Store(db, create=False).profiles()
    assert [r["status"] for r in rows] == ["failed", "failed", "failed", "timeout"]
    assert not mpi_processes()


def test_a_check_interrupted_or_terminated_keeps_the_profile(impls, tmp_path, capsys,
                                                             monkeypatch):
    """The program's profile is stored whole before the user's check runs; a
    check that cannot be run is refused before anything runs; SIGTERM to
    commscope ends it as Ctrl-C does (the job killed, the profile recorded)."""
    import os
    import signal
    import sys
    import time

    monkeypatch.chdir(tmp_path)
    impl = impls.get("openmpi") or next(iter(impls.values()))
    exe = _built(impl, tmp_path)
    db = tmp_path / "c.db"
    for check, said in (("no-such-cmd-xyz", "no program that can be run here"),
                        (str(tmp_path), "no program that can be run here"),
                        ("grep -q 'unclosed", "No closing quotation")):
        rc, out, err = _profile(capsys, db, "--check", check, "--", str(exe))
        assert rc != 0 and said in err and len(err.strip().splitlines()) == 1, err
    assert not db.exists() or not Store(db, create=False).profiles()  # nothing ran
    # the check is interrupted: the program's profile is kept, whole
    cmd = [sys.executable, "-m", "commscope.cli", "profile", "--db", str(db), "--check",
           "sleep 60", "--", str(exe)]
    for n, sig in enumerate((signal.SIGINT, signal.SIGTERM), 1):
        # Ctrl-C's own disposition: a suite started in the background by a
        # shell (`make test &`) hands SIG_IGN down, and Python then keeps it
        p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 150  # beside other work the profile takes longer
        rows: list = []
        while time.monotonic() < deadline:  # until this run's check is running
            rows = Store(db, create=False).profiles() if db.exists() else []
            if len(rows) == n and rows[-1]["status"] == "ok":
                break
            time.sleep(0.2)
        # a busy run once found no profile 'ok' within 60 s: say what there was
        assert len(rows) == n and rows[-1]["status"] == "ok", (
            [dict(r) for r in rows], p.poll(), p.stderr.read() if p.poll() is not None else "")
        time.sleep(0.5)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        assert p.returncode == (130 if sig == signal.SIGINT else 143), err
        row = Store(db, create=False).profiles()[-1]
        assert row["status"] == "ok" and row["checked"] is None, dict(row)
        assert json.loads(row["data"])["ranks"], "the profile lost its ranks"
    # SIGTERM while the program runs: the job killed with its group, the profile recorded
    p = subprocess.Popen([*cmd[:6], "--timeout", "60", "--", str(exe), "hang"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    os.kill(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "interrupted by SIGTERM" in err, err
    assert Store(db, create=False).profiles()[-1]["status"] == "interrupted"
    assert not mpi_processes()


def test_what_cannot_be_profiled_is_one_line(impls, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "p.db"
    Store(db).close()  # a store, which --fresh must never remove
    script = tmp_path / "notexec"
    script.write_text("#!/bin/sh\n")
    for argv, said in ((["--", "./missing"], "no program at"),
                       (["--", "no-such-program"], "no program 'no-such-program' on PATH"),
                       (["--", str(script)], "is not an executable program"),
                       (["--", str(tmp_path)], "is not an executable program"),
                       (["--", "true"], "is not dynamically linked against an MPI library"),
                       ([], "name the program after --"),
                       (["--mpi", "nosuch", "--", "true"], "nosuch"),
                       (["--mpi", ",", "--", "true"], "--mpi names one implementation"),
                       (["--rounds", "3", "--", "true"], "--rounds goes with --verify"),
                       (["--fresh", "/etc/hostname", "--", "true"], "only files inside"),
                       (["--fresh", "p.db", "--", "true"], "is a database")):
        rc, out, err = _profile(capsys, db, *argv)
        assert rc != 0 and said in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.skipif(shutil.which("hpcc") is None, reason="Debian's hpcc is not installed "
                    "(make test installs it)")
def test_hpcc_nobody_here_wrote_is_profiled_as_a_user_would(impls, tmp_path, capsys,
                                                            monkeypatch):
    """HPC Challenge at N=600 on a 1 x 2 grid: seconds.  It reads hpccinf.txt
    from the folder it runs in and writes hpccoutf.txt there.  Noise policy:
    counts and statuses only; the benchmarks `analyze app` asks for, run
    beside other work, are flagged noisy and still set against the program
    (marked), never asked for again."""
    if "openmpi" not in impls:
        pytest.skip("Debian's hpcc links Open MPI")
    example = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt")
    lines = example.read_text().splitlines()
    lines[5] = "600          Ns"
    lines[10] = "1            Ps"
    (tmp_path / "hpccinf.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "p.db"
    rc, out, err = _profile(capsys, db, "--np", "2", "--timeout", "300", "--", "hpcc")
    assert rc == 0, (out, err)
    assert "hpcc under openmpi, 2 processes: ok" in out
    report = (tmp_path / "hpccoutf.txt").read_text()
    # hpcc ran to its end and checked its own results; whether its RandomAccess check
    # says "(passed)" (it tolerates 1% of lost updates) is hpcc's verdict, not the
    # profiler's: beside a compile on both cores the report once had no "(passed)"
    assert "End of LatencyBandwidth section." in report and "errors in" in report
    ranks = json.loads(Store(db, create=False).profiles()[-1]["data"])["ranks"]
    s = prof.summarize(ranks)
    calls = {h.call for h in s.hot}
    # PTRANS and b_eff exchange with MPI_Sendrecv; RandomAccess and FFT use alltoall
    assert {"MPI_Sendrecv", "MPI_Alltoall", "MPI_Allreduce", "MPI_Bcast"} <= calls, calls
    assert s.hot[0].total_s >= s.hot[-1].total_s and s.ranks == 2
    # its hot calls against the benchmarks: first what is missing, as one command
    assert cli.main(["analyze", "app", "--db", str(db)]) == 0
    said = capsys.readouterr().out
    cmd = next(x for x in said.splitlines() if x.startswith("to measure what is missing: "))
    argv = shlex.split(cmd.split(": ", 1)[1])
    benches = argv[argv.index("--bench") + 1].split(",")
    listed = {x.split()[0] for x in said.splitlines() if x.startswith("MPI_")}
    # noise policy: which calls are hot enough to be listed moves with the load, so the
    # command asks for the benchmarks of the calls listed, whichever they are (MPI_Sendrecv
    # is set against none: with MPI_Send and MPI_Recv not listed, latency is not asked for)
    assert argv[:2] == ["commscope", "run"] and benches, argv
    assert set(benches) == {prof.BENCH_OF[c] for c in listed if c in prof.BENCH_OF}, (
        benches, listed)
    assert cli.main(argv[1:]) == 0
    capsys.readouterr()
    assert cli.main(["analyze", "app", "--db", str(db)]) == 0
    said = capsys.readouterr().out
    assert "to measure what is missing" not in said, said
    assert "no setting for openmpi established in" in said  # no diagnosed sweep in this store
    table = said.split("verdict (benchmark)\n")[1].splitlines()
    # the rows set against a benchmark (a non-blocking start's, hot enough to be
    # listed on a slow run, is set against none and says why in other words)
    measured = [x for x in table if x.startswith("MPI_") and "benchmarked (" in x]
    # and every other row says why it has no benchmark, in the words no_bench gives
    for x in table:
        if x.startswith("MPI_") and x not in measured:
            assert prof.no_bench(x.split()[0]) in x, x
    # each set against Open MPI's own benchmark (marked where measured beside other work)
    assert measured and all(re.search(r"\((latency|bcast|reduce|allreduce|alltoall|barrier), "
                                      r"openmpi(, measured beside other work)?\)", x)
                            for x in measured), said
    assert not mpi_processes()


def test_a_setting_is_faster_for_the_program_only_where_the_rounds_say_so():
    fast = prof.Verified("a.env", (0.80, 0.82, 0.79, 0.81, 0.80), (0.7, 0.7, 0.7, 0.7, 0.7))
    assert fast.verdict == "faster for this program"
    slow = prof.Verified("b.env", (1.20, 1.22, 1.19, 1.21, 1.20), ())
    assert slow.verdict == "slower for this program"
    noisy = prof.Verified("c.env", (0.70, 1.30, 0.90, 1.10, 0.95), ())
    assert noisy.verdict == "not told apart from the defaults"
    assert prof.Verified("d.env", (0.5,), ()).verdict == "too few rounds to tell"
    # faster, but its output failed the user's check once: no advice
    broke = prof.Verified("e.env", fast.wall, fast.mpi, broke_check=1)
    assert broke.verdict == "breaks the program: its check failed on 1 run(s); not advice"
    text = prof.verify_text([fast, broke], 5)
    assert "a.env: the program's time 0.800 (" in text and "time in MPI 0.700" in text


def test_verify_runs_settings_against_the_defaults_in_rounds(impls, tmp_path, capsys,
                                                             monkeypatch):
    """Noise policy: which way a harmless setting goes is not asserted; that
    the rounds ran interleaved, were stored as one batch, and that a
    setting under which the program fails is no advice, is."""
    if "openmpi" not in impls:
        pytest.skip("the settings are Open MPI's")
    monkeypatch.chdir(tmp_path)
    exe = _built(impls["openmpi"], tmp_path)
    (tmp_path / "eager.env").write_text("OMPI_MCA_btl_vader_eager_limit=65536\n")
    (tmp_path / "broken.env").write_text("OMPI_MCA_btl=self\n")  # two ranks cannot talk
    db = tmp_path / "v.db"
    rc, out, err = _profile(capsys, db, "--verify", "eager.env", "--verify", "broken.env",
                            "--rounds", "3", "--check", "true", "--", str(exe))
    assert rc == 0, (out, err)
    rows = Store(db, create=False).profiles()
    assert len(rows) == 9 and {r["batch"] for r in rows} == {rows[0]["id"]}
    assert [r["round"] for r in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # the order rotates: each round starts with another arm
    firsts = [json.loads(rows[i]["settings"]) for i in (0, 3, 6)]
    assert len({json.dumps(f, sort_keys=True) for f in firsts}) == 3
    assert ("broken.env: the program's time -, time in MPI -: breaks the program: 3 run(s) "
            "failed") in out
    line = next(x for x in out.splitlines() if x.startswith("  eager.env: "))
    assert any(v in line for v in ("faster for this program", "slower for this program",
                                   "not told apart from the defaults")), line
    assert all(r["checked"] == 1 for r in rows if r["status"] == "ok")
    assert not mpi_processes()


def test_the_diagnosis_settings_that_act_on_a_programs_hot_calls():
    ranks = [_rank(r, [("MPI_Alltoall", 2, 14, 10, 10 * 8208, 1e-4),
                       ("MPI_Send", 2, 4, 10, 80, 1e-5),
                       ("MPI_Isend", 2, 13, 4, 4 * 6000, 1e-5),
                       ("MPI_Barrier", 2, 0, 3, 0, 1e-5)]) for r in (0, 1)]
    hot = prof.summarize(ranks).hot
    found = [prof.Established("mpich", "alltoall", (8192, 16384, 32768),
                              (("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", "pairwise"),), "a"),
             prof.Established("mpich", "bw", (4096, 8192), (("X", "1"),), "b"),
             prof.Established("mpich", "barrier", (0,), (("Y", "1"),), "c"),
             prof.Established("openmpi", "alltoall", (8192,), (("Z", "1"),), "d")]
    got = {(h.call, e.said) for h, e in prof.touching(hot, "mpich", found)}
    # alltoall at 8 KiB: in; the 6000 B isend lies between 4 and 8 KiB: in; bw's setting may
    # act on the 8 KiB alltoall too (built on the same point-to-point messages); the 8 B
    # send: not at bw's sizes; the barrier: in; openmpi's setting: not this program's MPI
    assert got == {("MPI_Alltoall", "a"), ("MPI_Isend", "b"), ("MPI_Alltoall", "b"),
                   ("MPI_Barrier", "c")}, got
    # the most they could save: their share of the time in MPI and between Init and Finalize
    part = prof.share([h for h in hot if h.call in ("MPI_Alltoall", "MPI_Isend")],
                      prof.summarize(ranks))
    assert part is not None and part[0] == pytest.approx((2e-4 + 2e-5) / 1.0)


def test_the_missing_command_covers_empty_messages():
    """A program's 0-byte broadcasts: the command that measures what is
    missing starts at 0 B (it had started at 1 and never covered them)."""
    h = prof.Hot("MPI_Bcast", 2, 0, 4, 2, 1e-5, 1e-6, 1e-5, 0)
    a = prof.Against(h, "bcast", 0, 2, 2.5, None, missing="none stored")
    assert prof.measure_command([a], "openmpi", "d.db").endswith(
        "--bench bcast --sizes 0:2 --repeat 3 --no-advise")


def test_a_profiled_program_is_named_printably_everywhere():
    """Arguments reach the program as given (bytes that are no UTF-8, an
    escape sequence); shown, in the terminal, show --profile and the report,
    they are quoted and escaped (the report had failed on them)."""
    row = {"program": "/some/where/pt", "argv": json.dumps(["ok", "a b", "\udcff\x1b[31m"])}
    assert prof.named(row) == "pt ok 'a b' '\\xff\\x1b[31m'"


def test_call_sites_sum_over_ranks_and_say_where_unresolved():
    """Fixed rank files: a site is a call at one place of one object, summed
    over the ranks that made it; one with no debugging information is named
    by its object and offset; a site the profiler had no room for is said."""
    ranks = [{"rank": 0, "sites_lost": 2, "sites": [
                 {"call": "MPI_Send", "object": "/x/app", "offset": 4660, "n": 3, "bytes": 24,
                  "total_s": 0.002},
                 {"call": "MPI_Bcast", "object": "/x/app", "offset": 4700, "n": 1, "bytes": 8,
                  "total_s": 0.001}]},
             {"rank": 1, "sites": [
                 {"call": "MPI_Send", "object": "/x/app", "offset": 4660, "n": 2, "bytes": 16,
                  "total_s": 0.003}]},
             {"rank": 2}]  # an older profiler's file: no sites
    found = prof.sites(ranks)
    assert [(s.call, s.calls, s.ranks, round(s.total_s, 6)) for s in found] == [
        ("MPI_Send", 5, 2, 0.005), ("MPI_Bcast", 1, 1, 0.001)]
    text = prof.sites_text(found, {("/x/app", 4700): "main (app.c:9)"}, 0.006, lost=2)
    assert "app+0x1234" in text and "main (app.c:9)" in text and "83.3%" in text
    assert "2 call(s) found no room" in text
    assert prof.sites_text([], {}, 1.0) == ""
    gone = [prof.Site("MPI_Send", "/x/app (deleted)", 16, 1, 1, 0.001, 8)]
    text = prof.sites_text(gone, {}, 0.001, unmapped=3)
    assert "app (replaced since)+0x10" in text and "3 call(s) made from code in no file" in text


def test_a_call_in_a_helper_is_told_apart_by_its_callers_with_stack(impls, tmp_path, capsys,
                                                                     monkeypatch):
    """--stack 2: the helper's one MPI_Allreduce line, reached from two
    lines of main (2 and 3 calls a rank), is two sites, each with the line
    that called the helper; by default it is one site of 5 calls a rank."""
    monkeypatch.chdir(tmp_path)
    impl = impls.get("openmpi") or next(iter(impls.values()))
    exe = _built(impl, tmp_path)
    src = (ROOT / "tests" / "c" / "profiled.c").read_text().splitlines()
    helper = next(i for i, x in enumerate(src, 1) if "helper's line" in x)
    first = next(i for i, x in enumerate(src, 1) if "/* first caller */" in x)
    second = next(i for i, x in enumerate(src, 1) if "/* second caller */" in x)
    rc, out, err = _profile(capsys, tmp_path / "s.db", "--np", "2", "--stack", "2", "--",
                            str(exe), "stack")
    assert rc == 0, (out, err)
    ranks = json.loads(Store(tmp_path / "s.db", create=False).profiles()[-1]["data"])["ranks"]
    places = measure.resolve_sites(prof.all_frames(ranks))
    got = {prof.site_where(x, places): x.calls for x in prof.sites(ranks, places)
           if x.call == "MPI_Allreduce"}
    at = f"reduce_in_helper (profiled.c:{helper})"
    assert got == {f"{at} < main (profiled.c:{first})": 4,
                   f"{at} < main (profiled.c:{second})": 6}, got
    # the terminal: the site, then the caller beneath it
    assert re.search(rf"{re.escape(at)}\s+MPI_Allreduce\s+2\s+4\s.*\n  < main "
                     rf"\(profiled\.c:{first}\)", out), out
    rc, out, err = _profile(capsys, tmp_path / "d.db", "--np", "2", "--", str(exe), "stack")
    assert rc == 0, (out, err)
    ranks = json.loads(Store(tmp_path / "d.db", create=False).profiles()[-1]["data"])["ranks"]
    (one,) = [x for x in prof.sites(ranks) if x.call == "MPI_Allreduce"]
    assert one.calls == 10 and one.callers == () and "  < main" not in out


def test_call_sites_resolve_in_a_program_linked_without_pie(impls, tmp_path, capsys,
                                                            monkeypatch):
    """Linked at 0x400000 (-no-pie, common in HPC builds): a site's offset in
    the file is not the address addr2line reads; through the program's
    loadable segments the lines still resolve."""
    monkeypatch.chdir(tmp_path)
    impl = impls.get("openmpi") or next(iter(impls.values()))
    exe = tmp_path / "nopie"
    subprocess.run([impl.mpicc, "-O2", "-g", "-no-pie", "-o", str(exe),
                    str(ROOT / "tests" / "c" / "profiled.c")], check=True, capture_output=True)
    src = (ROOT / "tests" / "c" / "profiled.c").read_text().splitlines()
    n = next(i for i, x in enumerate(src, 1) if "MPI_Allreduce(" in x and "helper" not in x)
    rc, out, err = _profile(capsys, tmp_path / "np.db", "--np", "2", "--", str(exe))
    assert rc == 0, (out, err)
    assert re.search(rf"main \(profiled\.c:{n}\)\s+MPI_Allreduce\s", out), out


def test_analyze_app_measure_runs_what_the_calls_miss(impls, tmp_path, capsys, monkeypatch):
    """A store with a profile and no benchmark: analyze app names the run
    that would measure what the hot calls miss; with --measure it runs it
    into the same store and sets every call against a benchmark figure."""
    monkeypatch.chdir(tmp_path)
    impl = impls.get("openmpi") or next(iter(impls.values()))
    exe = _built(impl, tmp_path)
    db = tmp_path / "m.db"
    assert _profile(capsys, db, "--np", "2", "--", str(exe))[0] == 0
    assert cli.main(["analyze", "app", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    cmd = next(x for x in out.splitlines() if x.startswith("to measure what is missing: "))
    assert shlex.split(cmd.split(": ", 1)[1])[-1] == "--no-advise"  # the command alone
    assert "analyze app --measure" in out
    assert cli.main(["analyze", "app", "--db", str(db), "--measure"]) == 0
    out = capsys.readouterr().out
    assert "measuring what is missing: commscope run" in out
    assert "to measure what is missing" not in out.split("its hottest calls")[1]
    table = out.split("its hottest calls")[1]
    for call in ("MPI_Allreduce", "MPI_Bcast", "MPI_Send", "MPI_Barrier"):
        line = next(x for x in table.splitlines() if x.startswith(call))
        assert "benchmarked" in line, line  # a figure to set it against, either way
    assert {r["bench"] for r in Store(db, create=False).result_rows()} >= {
        "allreduce", "bcast", "latency", "barrier"}


def test_a_cluster_profile_is_refused_before_anything_runs(tmp_path, monkeypatch):
    """--cluster slurm where no srun is on PATH, --nodes without a cluster,
    --np that does not spread over the nodes, a cluster name mistyped: one
    line each, before the store is touched (the review found an internal
    error and a profile left 'interrupted' for the first)."""
    from types import SimpleNamespace

    from commscope.cli import profile as cli_profile
    from commscope.errors import CommscopeError

    impl = SimpleNamespace(family="mpich", name="mpich", variant="")
    monkeypatch.setattr(cli_profile.shutil, "which", lambda name: None)
    with pytest.raises(CommscopeError, match="no srun on this machine's PATH"):
        cli_profile._placed("slurm", None, 2, impl, tmp_path)
    with pytest.raises(CommscopeError, match="--nodes goes with --cluster"):
        cli_profile._placed("local", 2, 2, impl, tmp_path)
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    with pytest.raises(CommscopeError, match="--np 3 does not spread evenly over 2 node"):
        cli_profile._placed("slurm:mpirun", None, 3, impl, tmp_path)
    with pytest.raises(CommscopeError, match="bad --cluster"):
        cli_profile._placed("slurmm", None, 2, impl, tmp_path)


def test_every_call_the_profiler_counts_is_a_transfer_or_said_not_to_be():
    """The calls core/profile/cs_profile.c counts, against the lists a
    setting's share is drawn from: a send or receive missing from P2P_CALLS
    (MPI_Bsend, MPI_Rsend and MPI_Sendrecv_replace once were) would leave
    its time out of what a point-to-point setting acts on."""
    src = (ROOT / "core/profile/cs_profile.c").read_text()
    block = re.search(r"#define CALLS\(X\)(.*?)\n\n", src, re.S)
    assert block is not None
    counted = {f"MPI_{n}" for n in re.findall(r"X\((\w+)\)", block.group(1))}
    no_transfer = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Barrier", "MPI_Ibarrier",
                   "MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe", "MPI_Wait",
                   "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall",
                   "MPI_Testany", "MPI_Testsome"}
    # one-sided calls: neither a point-to-point setting's nor a collective's share
    one_sided = set(prof.ONE_SIDED) | {c for c in counted if c.startswith("MPI_Win_")}
    assert set(prof.ONE_SIDED) <= counted and "MPI_Win_fence" in one_sided
    assert len(counted) > 60
    assert counted - no_transfer - one_sided == set(prof.P2P_CALLS) | set(prof.COLL_CALLS)
    assert {"MPI_Bsend", "MPI_Ibsend", "MPI_Irsend"} <= set(prof._calls_of("latency"))


@pytest.mark.parametrize("module", ["mpi", "mpi_f08"])
def test_a_fortran_programs_calls_are_counted_once_under_each_mpi(impls, tmp_path, capsys,
                                                                   monkeypatch, module):
    """tests/c/profiled.f90 (3 sends and 3 receives a rank, one allreduce of
    one double, one barrier): Open MPI's Fortran bindings call PMPI_ directly
    and MPICH's the C MPI_ functions (its mpi_f08 ones PMPI_ where there is
    no buffer); each call is counted once under either, at its size, and
    sited in the binding's library."""
    monkeypatch.chdir(tmp_path)
    src = (ROOT / "tests" / "c" / "profiled.f90").read_text()
    if module == "mpi_f08":
        src = src.replace("  use mpi\n", "  use mpi_f08\n").replace(
            "integer :: status(MPI_STATUS_SIZE)", "type(MPI_Status) :: status")
        assert "use mpi_f08" in src and "type(MPI_Status)" in src
    (tmp_path / "profiled.f90").write_text(src)
    tried = 0
    for name, impl in sorted(impls.items()):
        fc = Path(impl.mpicc).with_name(Path(impl.mpicc).name.replace("mpicc", "mpifort"))
        if not fc.exists():
            continue
        exe = tmp_path / f"pf-{name}"
        subprocess.run([str(fc), "-O2", "-g", "-o", str(exe), str(tmp_path / "profiled.f90")],
                       check=True, capture_output=True)
        db = tmp_path / f"{name}.db"
        rc, out, err = _profile(capsys, db, "--np", "2", "--", str(exe))
        assert rc == 0 and f"under {name}, 2 processes: ok" in out, (out, err)
        (row,) = Store(db, create=False).profiles()
        ranks = json.loads(row["data"])["ranks"]
        for r in (_calls(ranks, 0), _calls(ranks, 1)):
            assert r[("MPI_Send", 11)] == (3, 3 * 1024) and r[("MPI_Recv", 11)] == (3, 3 * 1024)
            assert r[("MPI_Allreduce", 4)] == (1, 8) and r[("MPI_Barrier", 0)] == (1, 0)
            assert r[("MPI_Init", 0)] == (1, 0), r
        # each call sited in the Fortran binding that made it, not in libmpi
        sites = {(s["call"], Path(s["object"]).name.split(".so")[0]) for x in ranks
                 for s in x["sites"]}
        binding = {"openmpi": "libmpi_mpifh", "mpich": "libmpichfort"}.get(name)
        if binding:
            assert sites == {(c, binding) for c in ("MPI_Send", "MPI_Recv", "MPI_Allreduce",
                                                    "MPI_Barrier")}, sites
        tried += 1
    if not tried:
        pytest.skip("no Fortran MPI wrapper (mpifort) beside the MPIs' mpicc")
    # make test installs both Debian MPIs' Fortran wrappers (gfortran with them)
    assert tried == len(impls), f"{tried} of {len(impls)} MPIs had an mpifort"


def _each_mpi(impls, tmp_path: Path, capsys, mode: str):
    """profiled.c in `mode` under each MPI, 2 ranks: each run's ranks' profiles."""
    for name, impl in sorted(impls.items()):
        exe = _built(impl, tmp_path)
        db = tmp_path / f"{name}-{mode}.db"
        rc, out, err = _profile(capsys, db, "--np", "2", "--", str(exe), mode)
        assert rc == 0 and f"under {name}, 2 processes: ok" in out, (out, err)
        yield json.loads(Store(db, create=False).profiles()[0]["data"])["ranks"]


def test_a_pmpi_call_not_from_a_fortran_binding_is_not_the_programs(impls, tmp_path, capsys,
                                                                     monkeypatch):
    """profiled.c "pmpi": a message through PMPI_Send and PMPI_Recv, as a tool
    stacked on PMPI (or the library's own MPI-IO) calls them, then one
    MPI_Barrier: the barrier is counted, the PMPI_ pair is not (only the
    Fortran bindings' PMPI_ calls are the program's)."""
    monkeypatch.chdir(tmp_path)
    for ranks in _each_mpi(impls, tmp_path, capsys, "pmpi"):
        for r in (_calls(ranks, 0), _calls(ranks, 1)):
            assert r[("MPI_Barrier", 0)] == (1, 0), r
            assert not {c for c, _ in r} & {"MPI_Send", "MPI_Recv"}, r


def test_one_sided_calls_are_counted_with_the_bytes_they_move(impls, tmp_path, capsys,
                                                              monkeypatch):
    """profiled.c "rma": between fences 3 puts of 16 doubles and a get, under
    a lock an accumulate and a fetch-and-op of one double, each rank to the
    next; every call counted once, at the bytes it moves, under each MPI."""
    monkeypatch.chdir(tmp_path)
    for ranks in _each_mpi(impls, tmp_path, capsys, "rma"):
        for r in (_calls(ranks, 0), _calls(ranks, 1)):
            assert r[("MPI_Put", 8)] == (3, 3 * 128) and r[("MPI_Get", 8)] == (1, 128), r
            assert r[("MPI_Win_fence", 0)] == (3, 0)
            assert r[("MPI_Accumulate", 4)] == (1, 8) and r[("MPI_Fetch_and_op", 4)] == (1, 8)
            assert r[("MPI_Win_lock", 0)] == (1, 0) and r[("MPI_Win_unlock", 0)] == (1, 0)
