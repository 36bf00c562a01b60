"""The diagnosis for real: Open MPI with a 1 KiB shared-memory eager limit
(the configuration under study) beside Open MPI as it comes, two sweeps
diagnosed together as a user would set two runs side by side.  From 1 KiB
the smaller limit sends by rendezvous and its bandwidth is lower; the
diagnosis must confirm that gap in rounds of its own, try the eager limit
read back from the job (and the other mechanisms of that path), establish
the limit as the cause because raising it closed the gap, check the
settings file as a whole and hand it over.

Noise policy: the flag is off (--noise-max-cores 2, this machine's every
core): the test is about what the experiments establish.  With one core
busy beside it, eager against rendezvous at 1-2 KiB still differs by more
than two interleaved jobs of one round move; with both cores busy the ranks
share them with the load, and the limit once closed 0.27 of the gap (its
interval 0.01-0.45).  On a quiet machine the limit was established in
nine diagnoses of ten here (its interval's lower end closing 0.59-0.71
of the gap); in the tenth the limit's interval straddled half, and in a
CI run the confirmation rounds held no gap at all.
Where the two sweeps themselves ran beside other work (half a core or
more) and separated no bw gap, the diagnosis has nothing to measure
again: it must say so and conclude nothing, and no verdict is asserted.
So a diagnosis that does not establish the limit is run once more
(said, with what it printed); where other processes used half a core or
more during the second, the verdict is not asserted, only what the
diagnosis is made of: the limit tried, and not called the cause.  Twice
on a quiet machine is a failure.  Only the gaps of the configuration under
study count: the default's own 4 KiB limit makes a gap of its own, whose
trial closing once let a CI run pass this point with the 1 KiB limit's
trial undecided.  Its budget (240 s) leaves a busy machine
room: at 120 s a busy suite run's check of the settings file paired only
2 rounds; where other processes used half a core or more and the check
still lacks rounds, no file may be handed over, and the reason is said."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commscope import cli
from commscope.analysis import conclude
from commscope.analysis import diagnosis as dg
from commscope.measure import noise, settings
from commscope.store.db import Store
from tests.conftest import mpi_processes

pytestmark = pytest.mark.mpi


BUSY = 0.5  # cores other processes used on average: a busy machine (tests' noise policy)


def _busy_while(fn) -> float:
    """Run fn; the cores other processes used on average meanwhile."""
    t0, m0, w0 = os.times(), noise.mark(), time.monotonic()
    fn()
    t1 = os.times()
    ours = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    got = noise.job_noise(m0, noise.mark(), ours, time.monotonic() - w0)
    return float(got.get("other_cores") or 0.0) if got.get("valid") else 0.0


def test_a_small_eager_limit_is_confirmed_established_checked_and_handed_over(
        tmp_path, cores, capsys):
    if "openmpi" not in cores:
        pytest.skip("Debian's Open MPI is not installed")
    under_study = tmp_path / "small-eager.env"
    under_study.write_text("OMPI_MCA_btl_vader_eager_limit=1024\n")
    db = tmp_path / "s.db"
    sweep = ["--db", str(db), "--mpi", "openmpi", "--bench", "bw", "--sizes", "256:32K",
             "--repeat", "5", "--min-samples", "10", "--time-cap", "0.1",
             "--noise-max-cores", "2", "--no-advise"]
    rcs: list[int] = []
    swept_busy = max(
        _busy_while(lambda: rcs.append(cli.main(["run", *sweep]))),
        _busy_while(lambda: rcs.append(cli.main(["run", *sweep, "--settings",
                                                 str(under_study)]))))
    assert rcs == [0, 0]
    capsys.readouterr()
    store = Store(db)
    busy_or_jumping = False
    for attempt in (1, 2):
        busy = _busy_while(lambda: cli.main(["diagnose", "--db", str(db), "--sweep", "1,2",
                                             "--budget", "240", "--noise-max-cores", "2"]))
        out = capsys.readouterr().out
        d = dg.latest(store, [2])
        assert d is not None and d.status in ("complete", "partial"), out
        if swept_busy >= BUSY and not any(o.gap.call == "bw" for o in d.outcomes):
            # the sweeps ran beside other work (a busy suite run: other processes on 1.6
            # cores) and their screen separated no bw gap: the diagnosis has nothing to
            # measure again, and says so rather than naming a cause
            print(f"the sweeps ran while other processes used {swept_busy:.2f} cores and "
                  "separated no bw gap: the verdict is not asserted\n" + out)
            assert "confirmed no gap" in out and not conclude.conclusions(d), out
            return
        # the gaps of the configuration under study: the default configuration's own
        # limit (4 KiB) makes a gap at 4 KiB of its own whose trial may close while the
        # 1 KiB limit's does not (a CI run: the 4 KiB gap established, the 1 KiB one not)
        small = {a for a, name in d.labels.items() if "eager_limit=1024" in name}
        gaps = [o for o in d.outcomes
                if o.gap.call == "bw" and o.confirmed and o.gap.slow_arm in small]
        trials = [t for o in gaps for t in o.trials if t.hypothesis.id == "eager-limit"]
        if any(t.verdict == "closes" for t in trials):
            break
        # rounds the confirmation dropped as taken across a jump of the host between its
        # modes: a host flipping within rounds (2 of 5 at every size, 56 of the sweep's 80
        # figures in its slow state) left the gap unconfirmed and the trial unpaired
        jumps = max((x.dropped for o in d.outcomes if o.conf is not None
                     for x in o.conf.ratios), default=0)
        busy_or_jumping = busy >= BUSY or jumps >= 2
        print(f"attempt {attempt}: other processes used {busy:.2f} cores on average during the "
              f"diagnosis, the host jumped in {jumps} of a gap's rounds, and the eager limit "
              f"was not established ("
              f"{[(t.verdict, round(t.closed, 2)) for t in trials] or 'no gap confirmed'}): "
              + ("diagnosed again" if attempt == 1 else "busy or jumping again: the verdict "
                 "is not asserted, only what the diagnosis is made of" if busy_or_jumping else
                 "twice on a quiet machine: a failure"))
        print(out)  # shown with the failure: what the diagnosis measured and said
    if busy_or_jumping and not any(t.verdict == "closes" for t in trials):
        # what a busy machine leaves (with both cores busy the gap was once not
        # even confirmed), or a host jumping between its modes: the bw gap measured
        # again and, the limit not established, never said as the cause
        assert any(o.gap.call == "bw" for o in d.outcomes), out
        assert not any("the cause: Open MPI's shared-memory eager limit" in c.headline
                       for c in conclude.conclusions(d))
        return
    assert gaps, (out, [(o.gap.id, o.conf) for o in d.outcomes])
    assert trials and any(t.verdict == "closes" for t in trials), (out, trials)
    # the files with the eager limit: the configuration under study's, and (seen twice
    # beside busy loops) the default configuration's too, whose 4 KiB limit the classic
    # knob raises for bw at 4-32 KiB: each checked in a file of its own
    mine = [c for c in d.checks if any(k == "OMPI_MCA_btl_vader_eager_limit"
                                       for k, _ in c.settings)
            or any(kv.startswith("OMPI_MCA_btl_vader_eager_limit=") for kv, _ in c.left_out)]
    assert 1 <= len(mine) <= 2 and len({c.arm for c in mine}) == len(mine), (out, d.checks)
    fc = next((c for c in mine if c.arm in small), mine[0])
    jumps = max((x.dropped for _, x in fc.effects), default=0)
    if (busy >= BUSY or jumps) and not fc.passed \
            and fc.reason.startswith(("only ", "fewer than")):
        # beside other work the check of the file ran out of rounds (a busy suite run: "only
        # 2 round(s) were paired" at a 120 s budget), or the host jumped between its modes
        # in more of its rounds than the budget took again (a quiet CI host dropped 2 of 4
        # before the check took them again): then no file is handed over, and why
        assert not fc.file and "were paired" in fc.reason, fc
        return
    assert fc.passed and fc.file, fc
    handed = dict(settings.parse_file(fc.file))
    assert int(handed["OMPI_MCA_btl_vader_eager_limit"]) > 1024
    # checked on every benchmark of the sweep the limit changes: bw, the only one
    assert fc.benches == ("bw",) and fc.rounds >= 3
    # the experiments' runs stay in the newer sweep, marked, and are not its records
    trial = store.db.execute("SELECT count(*) FROM runs WHERE sweep_id=2 AND trial IS NOT "
                             "NULL").fetchone()[0]
    assert trial > 0
    assert all(r["trial"] is None for r in store.result_rows())
    assert {r["run_id"] for r in store.selection("sweep=2")} == {
        r[0] for r in store.db.execute("SELECT id FROM runs WHERE sweep_id=2 AND trial IS NULL "
                                       "AND status='ok'")}
    # the first screen: the setting, as the cause, with the check behind it
    assert cli.main(["analyze", "findings", "--db", str(db), "--all"]) == 0
    head = capsys.readouterr().out.split("Drawn from")[0]
    assert "set OMPI_MCA_btl_vader_eager_limit=" in head, head
    assert "the cause: Open MPI's shared-memory eager limit (1024 B)" in head, head
    assert conclude.conclusions(d)[0].kind == "setting"


def test_a_diagnosis_interrupted_keeps_what_it_measured_and_the_store_whole(tmp_path, cores):
    """Ctrl-C in the middle of the experiments: the job in flight is killed
    with its process group, every job that ended is stored, the diagnosis
    is stored as interrupted with what it had, and the store opens."""
    if not {"openmpi", "mpich"} <= set(cores):
        pytest.skip("needs Debian's Open MPI and MPICH (two libraries differ in collectives)")
    db = tmp_path / "s.db"
    assert cli.main(["run", "--db", str(db), "--mpi", "openmpi,mpich", "--bench",
                     "barrier,bcast,allreduce,scatter", "--sizes", "1:1K", "--repeat", "3",
                     "--noise-max-cores", "2", "--no-advise", "--quiet"]) == 0
    # where it stands if it does not end: SIGABRT makes Python print its stack
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).resolve().parents[2]),
           "PYTHONFAULTHANDLER": "1"}
    p = subprocess.Popen([sys.executable, "-m", "commscope.cli", "diagnose", "--db", str(db),
                          "--budget", "120", "--noise-max-cores", "2"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # a suite started in the background (`make test &`, a CI runner)
                         # ignores SIGINT, and Python keeps an ignored SIGINT ignored: the
                         # diagnosis then ran to its end (twice, exit 0)
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    store = Store(db)
    deadline = time.monotonic() + 60
    # until its experiments have stored a few runs and a job is in flight (a
    # diagnosis that ended first interrupts nothing: said, not passed)
    while time.monotonic() < deadline and p.poll() is None:
        done, flying = store.db.execute(
            "SELECT sum(status != 'running'), sum(status = 'running') FROM runs WHERE trial "
            "IS NOT NULL").fetchone()
        if (done or 0) >= 3 and flying:
            break
        time.sleep(0.05)
    assert p.poll() is None, ("the diagnosis ended before a job of its 4th was in flight",
                              p.communicate())
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:  # once, on a busy machine: where was it?
        p.send_signal(signal.SIGABRT)
        out, err = p.communicate(timeout=30)
        pytest.fail(f"the diagnosis did not end within 90 s of SIGINT:\n{out[-1500:]}\n"
                    f"{err[-4000:]}")
    assert p.returncode == 130, (out, err)
    assert "interrupted" in err
    (row,) = store.db.execute("SELECT status, data FROM diagnoses").fetchall()
    assert row[0] == "interrupted"
    d = dg.Diagnosis.from_json(row[1])
    assert d.status == "interrupted" and d.rounds.run_ids
    assert store.db.execute("SELECT count(*) FROM runs WHERE status='running'").fetchone()[0] == 0
    assert mpi_processes() == []
    # what it measured stays: its runs in the sweep, and the first screen says it was cut short
    assert store.db.execute("SELECT count(*) FROM runs WHERE trial IS NOT NULL").fetchone()[0] >= 3
    Store(db).close()


def test_a_zero_budget_runs_no_diagnosis(tmp_path, cores):
    m = sorted(cores)[0]
    db = tmp_path / "z.db"
    assert cli.main(["run", "--db", str(db), "--mpi", m, "--bench", "latency", "--sizes", "8:64",
                     "--quiet", "--advise-budget", "0"]) == 0
    store = Store(db)
    assert store.db.execute("SELECT count(*) FROM diagnoses").fetchone()[0] == 0
    assert store.db.execute("SELECT count(*) FROM runs WHERE trial IS NOT NULL").fetchone()[0] == 0
