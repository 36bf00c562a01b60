"""Experiments: arms of one library whose settings cannot reach each
other's benchmarks share a job (advise/experiment.py), and each arm gets
back only its own benchmarks' figures."""

from __future__ import annotations

from types import SimpleNamespace

from commscope.advise import experiment as ex
from commscope.measure.cluster import Placement
from commscope.measure.plan import CoreOptions

MPICH = SimpleNamespace(impl=SimpleNamespace(name="mpich"))
OMPI = SimpleNamespace(impl=SimpleNamespace(name="openmpi"))
OPTS = CoreOptions(sizes="1:4M", factor=2)
FALLBACK = ("MPIR_CVAR_COLLECTIVE_FALLBACK", "error")


def _arm(name, bench, *settings, core=MPICH):
    return ex.Arm(name, core, Placement(1, 2), OPTS, tuple(sorted(settings)),
                  ((f"{bench}@8:64", "1:4M", 2),), strict=bool(settings))


def _alg(call, var, alg="x"):
    return _arm(f"mpich|{call}={alg}", call, (f"MPIR_CVAR_{var}_INTRA_ALGORITHM", alg), FALLBACK)


def test_a_setting_shares_a_job_only_where_the_sources_bound_what_it_changes():
    assert ex.scope("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM") == {"alltoall"}
    assert ex.scope("MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM") == {"reduce_scatter"}
    assert ex.scope("MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM") == {"allreduce"}
    assert ex.scope("OMPI_MCA_coll_tuned_allgather_algorithm") == {"allgather"}
    assert ex.scope("I_MPI_ADJUST_ALLTOALL") == {"alltoall"}
    # a collective others are built from reaches them (Open MPI's allreduce nonoverlapping)
    assert ex.scope("OMPI_MCA_coll_tuned_bcast_algorithm") == {
        "bcast", "allreduce", "allgather", "barrier"}
    assert ex.scope("MPIR_CVAR_REDUCE_INTRA_ALGORITHM") == {"reduce", "allreduce",
                                                             "reduce_scatter"}
    # a barrier (every timed call is followed by one), a switch of every collective, a
    # point-to-point limit, the fallback probe: any benchmark
    for var in ("MPIR_CVAR_BARRIER_INTRA_ALGORITHM", "MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE",
                "MPIR_CVAR_DEVICE_COLLECTIVES", "OMPI_MCA_btl_vader_eager_limit",
                "MPIR_CVAR_COLLECTIVE_FALLBACK"):
        assert ex.scope(var) is None, var


def test_algorithms_of_different_calls_share_a_job_and_nothing_else_does():
    a2a, rs, ar = (_alg("alltoall", "ALLTOALL"), _alg("reduce_scatter", "REDUCE_SCATTER_BLOCK"),
                   _alg("allreduce", "ALLREDUCE"))
    a2a2 = _alg("alltoall", "ALLTOALL", "y")  # the same call: another job
    bc = _alg("bcast", "BCAST")  # allreduce is built from bcast: not beside allreduce
    base = _arm("mpich", "alltoall")  # the default, on a call a setting changes: alone
    bar = _alg("barrier", "BARRIER")  # a barrier follows every timed call: alone
    eager = _arm("mpich|eager", "reduce", ("MPIR_CVAR_CH4_EAGER_MAX", "65536"))
    other = _arm("openmpi|alltoall=2", "allgather",
                 ("OMPI_MCA_coll_tuned_allgather_algorithm", "2"), core=OMPI)
    nofb = _arm("mpich|allgather=ring", "allgather",
                ("MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM", "ring"))  # no fallback probe
    got = ex.packs([a2a, rs, a2a2, bc, base, ar, bar, eager, other, nofb])
    names = [[a.name for a in p] for p in got]
    # bcast joins the first job; allreduce, built from bcast, cannot: it joins the next
    assert names == [[a2a.name, rs.name, bc.name], [a2a2.name, ar.name], [base.name],
                     [bar.name], [eager.name], [other.name], [nofb.name]]
    job = ex.joined(got[0])
    assert job.jobs == (("alltoall@8:64,reduce_scatter@8:64,bcast@8:64", "1:4M", 2),)
    assert dict(job.settings) == {**dict(a2a.settings), **dict(rs.settings), **dict(bc.settings)}
    # an arm whose shared job failed runs alone from then on
    assert [[a.name for a in p] for p in ex.packs([a2a, rs, ar], alone={rs.name})] == [
        [a2a.name, ar.name], [rs.name]]


def test_a_shared_job_hands_each_arm_its_own_figures_and_the_one_that_failed_it_goes_alone(
        monkeypatch):
    a2a, rs = _alg("alltoall", "ALLTOALL"), _alg("reduce_scatter", "REDUCE_SCATTER_BLOCK")
    # an algorithm that cannot apply fails every job it is in (MPICH's alltoall
    # pairwise_sendrecv_replace without MPI_IN_PLACE, under COLLECTIVE_FALLBACK=error)
    bad = _alg("allgather", "ALLGATHER", "cannot")
    jobs: list[tuple[str, tuple]] = []

    def run_job(job, store, sweep_id, *, timeout_s, policy):
        jobs.append((job.bench, job.settings))
        fail = ("MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM", "cannot") in job.settings
        return SimpleNamespace(run_id=len(jobs), status="failed" if fail else "ok",
                               message="")

    def figures(store, run_id, rounds):
        bench = jobs[run_id - 1][0]
        return {(b.split("@")[0], 8): (float(run_id), 100.0, None) for b in bench.split(",")}

    monkeypatch.setattr(ex, "run_job", run_job)
    monkeypatch.setattr(ex, "_figures", figures)
    got = ex.run([a2a, rs, bad], None, sweep_id=None, trial="explain", clock=ex.Clock(1e18),
                 rounds=3, policy=None)
    # round 1: the shared job fails, then each alone in the same round; round 2: the two
    # that ran well alone share again, the one that failed runs alone and breaks
    assert [b for b, _ in jobs] == [
        "alltoall@8:64,reduce_scatter@8:64,allgather@8:64",
        "alltoall@8:64", "reduce_scatter@8:64", "allgather@8:64",
        "allgather@8:64", "alltoall@8:64,reduce_scatter@8:64",
        "alltoall@8:64,reduce_scatter@8:64"]
    assert jobs[0][1] == tuple(sorted({*a2a.settings, *rs.settings, *bad.settings}))
    assert set(got.figures[a2a.name]) == {1, 2, 3} and set(got.figures[rs.name]) == {1, 2, 3}
    for arm, bench in ((a2a, "alltoall"), (rs, "reduce_scatter")):
        for figs in got.figures[arm.name].values():
            assert set(figs) == {(bench, 8)}
    assert set(got.broken) == {bad.name} and bad.name not in got.figures


def test_the_check_of_a_file_takes_again_the_rounds_a_jump_of_the_host_left_unpaired(
        monkeypatch):
    from commscope.advise import diagnose as dx
    from commscope.analysis import diagnosis as dg

    core = SimpleNamespace(impl=OMPI.impl, benches=[])
    base = _arm("openmpi", "bw", core=core)
    test = _arm("openmpi|eager", "bw", ("OMPI_MCA_btl_vader_eager_limit", "4096"), core=core)
    fc = dg.FileCheck("openmpi", test.name, test.settings, ("bw",))
    jobs: list[str] = []

    def run_job(job, store, sweep_id, *, timeout_s, policy):
        jobs.append(job.bench)
        return SimpleNamespace(run_id=len(jobs), status="ok", message="")

    def figures(store, run_id, rounds):
        # the host jumps between its modes during rounds 1 and 3: the two arms'
        # figures of those rounds carry floors 4x apart
        r = (run_id + 1) // 2
        floor = 275.0 if run_id % 2 == 0 and r in (1, 3) else 60.0
        return {("bw", 8): (100.0, floor, None)}

    monkeypatch.setattr(ex, "run_job", run_job)
    monkeypatch.setattr(ex, "_figures", figures)
    got = ex.run([base, test], None, sweep_id=None, trial="check", clock=ex.Clock(1e18),
                 rounds=dx.CHECK_MAX, policy=None, active=dx.paired_until(fc, base.name,
                                                                         (base, test)))
    done = dg.check_file(fc, got, base.name)
    # 6 rounds: 2 unpaired, then the 4 the check asks for
    assert len(jobs) == 12 and got.stopped == "decided"
    assert done.rounds == dx.CHECK_ROUNDS[1] and done.effects[0][1].dropped == 2
    assert done.passed


def test_a_checked_file_that_can_be_judged_gives_its_time_to_the_next_file(monkeypatch):
    """The check goes on to 4 rounds paired where the host jumped; once 3 are
    (enough to judge it), it stops where the next file needs the time left,
    and only then."""
    from commscope.advise import diagnose as dx
    from commscope.analysis import diagnosis as dg

    core = SimpleNamespace(impl=OMPI.impl, benches=[])
    base = _arm("openmpi", "bw", core=core)
    test = _arm("openmpi|eager", "bw", ("OMPI_MCA_btl_vader_eager_limit", "4096"), core=core)
    fc = dg.FileCheck("openmpi", test.name, test.settings, ("bw",))

    def rounds(n: int, jumped: set[int]) -> dg.Rounds:
        out = dg.Rounds()
        for r in range(1, n + 1):
            for arm in (base.name, test.name):
                floor = 275.0 if arm == test.name and r in jumped else 60.0
                out.figures.setdefault(arm, {})[r] = {("bw", 8): (100.0, floor, None)}
        return out

    three = rounds(4, {2})  # 3 paired of 4
    for need, wanted in ((False, True), (True, False)):
        active = dx.paired_until(fc, base.name, (base, test), lambda n=need: n)
        assert (active(three, 4) is not None) == wanted, need
    # fewer than 3 paired: it goes on whatever the next file needs
    two = rounds(3, {2})
    assert dx.paired_until(fc, base.name, (base, test), lambda: True)(two, 3) is not None
    # 4 paired: done either way
    assert dx.paired_until(fc, base.name, (base, test), lambda: False)(rounds(4, set()), 4) is None
