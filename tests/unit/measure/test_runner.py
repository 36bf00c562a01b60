"""Equal windows in one sweep: where the time bound narrowed one
configuration's bw window at a size and not another's, the wider one is
measured again at the narrowest window, and the analysis reads that.

The launches are replaced by a stand-in that stores what a core would
have recorded for chosen windows (a real Store, the real sweep loop), so
the windows each configuration "narrows to" are fixed: a real run's
windows depend on the machine's speed."""

from __future__ import annotations

import json
from dataclasses import replace

from commscope import cli
from commscope.measure import runner
from commscope.measure.build import Core
from commscope.measure.mpi import MpiImpl
from commscope.measure.plan import CoreOptions, expand
from commscope.measure.progress import Progress
from commscope.measure.runner import JobOutcome, NoisePolicy
from commscope.store.db import OK, RunInfo, Store
from commscope.store.sizes import expand_sizes
from tests.helpers import MPICH, OMPI, result, stub_core

BENCHES = ({"name": "bw", "group": "p2p", "min_np": 2, "any_transport": True},
           {"name": "latency", "group": "p2p", "min_np": 2, "any_transport": True})

# what the time bound would leave each library at each size (64: not narrowed)
NATURAL = {"openmpi": {1 << 20: 64, 1 << 22: 16, 1 << 24: 4},
           "mpich": {1 << 20: 64, 1 << 22: 8, 1 << 24: 4}}


def core(impl: MpiImpl) -> Core:
    return stub_core(impl, BENCHES)


def standin(launched: list, natural=lambda job, size: NATURAL[job.core.impl.name][size]):
    def run_job(job, store, sweep_id, *, timeout_s, policy, attempt=1, workdir=None,
                round_pos=None):
        opts = job.core_opts()
        launched.append((job.core.impl.name, job.bench, opts.sizes, opts.window))
        results = []
        for b in job.bench.split(","):
            for s in expand_sizes(opts.sizes, opts.factor):
                w = min(opts.window, natural(job, s)) if b == "bw" else None
                results.append(result(b, s, 10.0 * (w or 1), window=w))
        info = RunInfo(plan_key=job.plan_key(), bench=job.bench, np=job.np, sizes=opts.sizes,
                       mpi_name=job.core.impl.name, mpi_family=job.core.impl.family,
                       mpi_version="v", mpi_identity=job.core.identity, cluster="local",
                       launch_argv=[], env={}, machine={}, options={}, oversubscribed=False,
                       config=job.config, repetition=job.rep)
        rid = store.begin_run(info, sweep_id)
        store.finish_run(rid, OK, exit_code=0, signal=None, stderr_tail="", header=None,
                         results=results, flags=[False] * len(results), noise={})
        return JobOutcome(job, rid, OK, runner.Parsed(results=results), [False] * len(results))
    return run_job


def sweep(tmp_path, monkeypatch, opts: CoreOptions, *extra_opts: CoreOptions, repeat: int = 1,
          **standin_kw):
    launched: list = []
    monkeypatch.setattr(runner, "run_job", standin(launched, **standin_kw))
    jobs = expand([core(OMPI), core(MPICH)], ["bw", "latency"], [2], opts)
    for o in extra_opts:
        jobs += expand([core(OMPI)], ["bw", "latency"], [2], o)
    store = Store(tmp_path / "s.db")
    runner.run_sweep(jobs, store, argv=["run"], resume=False, timeout_s=60,
                     policy=NoisePolicy(), progress=Progress(len(jobs), enabled=False),
                     repeat=repeat)
    return store, launched


def windows(store: Store, **kw) -> dict[tuple[str, int], list[int]]:
    out: dict[tuple[str, int], list[int]] = {}
    for r in store.result_rows(**kw):
        if r["bench"] == "bw":
            out.setdefault((r["mpi_name"], r["size_bytes"]), []).append(r["window"])
    return out


def test_the_wider_window_is_measured_again_at_the_narrowest(tmp_path, monkeypatch, capsys):
    store, launched = sweep(tmp_path, monkeypatch, CoreOptions(sizes="1M:16M", factor=4))
    # Open MPI ran 16 at 4 MiB where MPICH was narrowed to 8: bw alone, that
    # size alone, window 8; nothing else again (1 MiB and 16 MiB were equal)
    assert launched[2:] == [("openmpi", "bw", str(1 << 22), 8)]
    seen = windows(store)
    assert seen[("openmpi", 1 << 22)] == [8] and seen[("mpich", 1 << 22)] == [8]
    assert all(len(w) == 1 for w in seen.values())  # one record a size and library
    assert len({w[0] for (_, s), w in seen.items() if s == 1 << 22}) == 1
    # the first record stays stored, marked, and is shown with --all
    assert windows(store, narrowed=True)[("openmpi", 1 << 22)] == [16, 8]
    marked = store.db.execute("SELECT bench, size_bytes, narrowed_in FROM results "
                              "WHERE narrowed_in IS NOT NULL").fetchall()
    assert [(b, s) for b, s, _ in marked] == [("bw", 1 << 22)]
    assert marked[0][2] == store.db.execute("SELECT max(id) FROM runs").fetchone()[0]
    # export --all hands both over, the first naming the run that measured it again
    assert cli.main(["export", "--db", str(tmp_path / "s.db"), "--all", "--format", "json",
                     "--bench", "bw", "--mpi", "openmpi"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["size_bytes"] == 1 << 22]
    assert sorted((r["window"], r["narrowed_in"]) for r in rows) == [(8, None),
                                                                     (16, marked[0][2])]


def test_the_rounds_of_repeat_run_the_same_window(tmp_path, monkeypatch):
    """--repeat 2 where the second round's time bound narrowed both
    libraries further at 4 MiB (a slower machine mode): within each round
    they agreed, across the rounds they did not; the first round's records
    at that size are measured again at the second's window, and every
    figure of the size combines runs of one window."""
    def natural(job, size):
        return {1 << 20: 64, 1 << 22: 16 if job.rep == 1 else 8}[size]

    store, launched = sweep(tmp_path, monkeypatch, CoreOptions(sizes="1M:4M", factor=4),
                            repeat=2, natural=natural)
    assert sorted(launched[4:]) == [("mpich", "bw", str(1 << 22), 8),
                                    ("openmpi", "bw", str(1 << 22), 8)], launched
    seen: dict[tuple[str, int], list[int]] = {}
    for r in store.result_rows(latest=False):
        if r["bench"] == "bw":
            seen.setdefault((r["mpi_name"], r["size_bytes"]), []).append(r["window"])
    assert seen == {("openmpi", 1 << 20): [64, 64], ("mpich", 1 << 20): [64, 64],
                    ("openmpi", 1 << 22): [8, 8], ("mpich", 1 << 22): [8, 8]}, seen
    # the first round's records stay stored, marked as measured again
    assert sorted(r["window"] for r in store.result_rows(latest=False, narrowed=True)
                  if r["bench"] == "bw" and r["size_bytes"] == 1 << 22) == [8, 8, 8, 8, 16, 16]


def test_windows_planned_apart_stay_apart(tmp_path, monkeypatch):
    """--param window=8 beside the default is two measurements, not one
    narrowed: nothing is measured again for it."""
    store, launched = sweep(tmp_path, monkeypatch, CoreOptions(sizes="1M", factor=4),
                            CoreOptions(sizes="1M", factor=4, window=8))
    assert len(launched) == 3
    assert sorted(w for ws in windows(store).values() for w in ws) == [8, 64, 64]


def test_runs_of_sizes_become_one_job_each():
    assert runner._consecutive([4, 16, 256], [1, 4, 16, 64, 256]) == [(4, 16), (256, 256)]
    job = expand([core(OMPI)], ["bw"], [2], CoreOptions())[0]
    again = replace(job, again_at=(8, "4:16"))
    assert again.config == job.config and again.plan_key() == job.plan_key()
    assert (again.core_opts().window, again.core_opts().sizes) == (8, "4:16")
