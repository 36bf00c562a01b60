"""The tuning advisor: its decisions on synthetic measurements (a setting
that wins only above a size, a gain inside the noise, a sure loser pruned, a
broken setting, the budget), its search space from an implementation's own
control variables, and a real search for each Debian MPI."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from commscope.advise import search, tune_text
from commscope.errors import CommscopeError
from commscope.measure.plan import CoreOptions
from commscope.measure.progress import Progress
from tests.helpers import run

SIZES = [1 << k for k in range(10, 23, 2)]  # 1 KiB .. 4 MiB
A = search.Candidate((("OMPI_MCA_x", "a"),), "a")
B = search.Candidate((("OMPI_MCA_x", "b"),), "b")


def fake(times, jitter=0.02, seed=3, broken=()):
    """A measure() whose median time per size is times[candidate](size),
    times (1 +- jitter) at random per job; the calls it got, in order."""
    rng = random.Random(seed)
    calls = []

    def measure(job, store, sweep, pos, **_):
        c = next(c for c in times if c.settings == job.settings)
        calls.append((job.rep, c))
        if c in broken:
            return search.Measured(False, len(calls), "failed: exit code 15 (Invalid value)", {})
        return search.Measured(True, len(calls), "", {
            ("bw", s): times[c](s) * (1 + rng.uniform(-jitter, jitter)) for s in SIZES})
    return measure, calls


class Store:
    def begin_sweep(self, argv, plan, purpose=None):
        return 1

    def end_sweep(self, sweep):
        pass


def run_search(core, cands, times, rounds=4, **kw):
    measure, calls = fake(times, **{k: kw.pop(k) for k in ("jitter", "broken", "seed")
                                    if k in kw})
    out = search.search(core, ["bw"], CoreOptions(sizes="1K:4M", factor=4.0), cands, Store(),
                        rounds=rounds, budget_s=kw.pop("budget_s", 1e9), argv=[], timeout_s=60,
                        policy=None,
                        progress=kw.pop("progress", None) or Progress(0, enabled=False),
                        measure=measure, extra_rounds=kw.pop("extra_rounds", 0))
    return out, calls


@pytest.fixture(scope="module")
def core(cores):
    return cores[sorted(cores)[0]]


def test_a_setting_that_wins_only_above_a_size_is_reported_with_that_range(core):
    times = {search.DEFAULT: lambda s: 10.0 + s / 1e4,
             A: lambda s: 10.0 + s / 1e4 if s < 65536 else 5.0 + s / 2e4}
    (o,), _ = run_search(core, [A], times)
    assert [(b, lo, hi) for b, lo, hi, _ in o.ranges("wins")] == [("bw", 65536, 4 << 20)]
    assert o.ranges("loses") == []
    assert all(e.lo > 1.0 for e in o.effects if e.size >= 65536)
    text = tune_text.report(core, [o], 4)
    assert "faster  bw 64 KiB-4 MiB" in text and "recommendation: OMPI_MCA_x=a" in text
    assert "slower at no measured size" in text
    st = tune_text.settings_text(o, core)
    assert st.splitlines()[-1] == "export OMPI_MCA_x=a" and "# faster: bw 64 KiB-4 MiB" in st


def test_a_gain_inside_the_between_round_noise_is_not_a_winner(core):
    times = {search.DEFAULT: lambda s: 10.0, A: lambda s: 10.0 / 1.03}
    (o,), _ = run_search(core, [A], times, jitter=0.10)
    assert o.ranges("wins") == [] and search.best([o]) is None
    assert "keep the defaults" in tune_text.report(core, [o], 4)
    # the same 3% with tight rounds is real but under the 5% that counts
    (o,), _ = run_search(core, [A], times, jitter=0.001)
    assert all(e.lo > 1.0 for e in o.effects) and o.ranges("wins") == []


def test_a_sure_loser_stops_after_the_third_round_and_a_broken_setting_at_once(core):
    times = {search.DEFAULT: lambda s: 10.0, A: lambda s: 25.0, B: lambda s: 9.0}
    (a, b), calls = run_search(core, [A, B], times, rounds=6, broken=(B,))
    assert a.state == "pruned" and "after round 3" in a.reason
    assert [r for r, c in calls if c == A] == [1, 2, 3]
    assert b.state == "broken" and "Invalid value" in b.reason
    assert [r for r, c in calls if c == B] == [1]
    assert [r for r, c in calls if c == search.DEFAULT] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(CommscopeError, match="default configuration failed"):
        run_search(core, [A], times, broken=(search.DEFAULT,))


def test_only_close_contenders_run_the_extra_rounds(core):
    """After four rounds, a 10% gain inside 8% jitter is not yet told
    apart; it (and the default) run on, alone, until it is.  A sure winner
    and a sure loser are decided and run no more."""
    c = search.Candidate((("OMPI_MCA_x", "c"),), "c")
    times = {search.DEFAULT: lambda s: 10.0, A: lambda s: 10.0 / 1.10, B: lambda s: 20.0,
             c: lambda s: 5.0}
    (a, b, cc), calls = run_search(core, [A, B, c], times, rounds=4, extra_rounds=8, jitter=0.08)
    ran = {x: [r for r, y in calls if y == x] for x in times}
    assert ran[B] == [1, 2, 3] and ran[c] == [1, 2, 3, 4], ran  # B pruned after three
    assert max(ran[A]) > 4 and ran[A] == ran[search.DEFAULT], ran
    assert a.ranges("wins") and not search.close(a), a.effects  # decided in the extra rounds
    assert all(e.n == len(ran[A]) for e in a.effects)
    # without extra rounds the same gain stays undecided
    (a4, *_), _ = run_search(core, [A, B, c], times, rounds=4, jitter=0.08)
    assert search.close(a4) and not a4.ranges("wins"), a4.effects


def _counts(text):
    """(done, total) of each progress line, in order."""
    import re

    return [tuple(map(int, m.groups())) for m in re.finditer(r"^\[(\d+)/(\d+)\] ", text, re.M)]


def test_the_progress_counts_every_job_of_the_search(core):
    """tune's progress: candidates and the default times the rounds, not
    [5/0]; fewer as candidates are pruned or break, more for extra rounds;
    a second search on the same progress (together, validate, advise) adds
    its own."""
    import io

    times = {search.DEFAULT: lambda s: 10.0, A: lambda s: 25.0, B: lambda s: 9.0}
    out = io.StringIO()
    progress = Progress(0, stream=out)
    _, calls = run_search(core, [A, B], times, rounds=6, broken=(B,), progress=progress)
    counts = _counts(out.getvalue())
    assert len(counts) == len(calls) == 10  # A pruned after 3 rounds, B broken in the first
    assert counts[0] == (1, 3 * 6)  # planned: two candidates and the default, six rounds
    assert [d for d, _ in counts] == list(range(1, 11)) and counts[-1] == (10, 10), counts
    assert all(d <= t for d, t in counts)
    # extra rounds for the close contender: the total grows with them
    c = search.Candidate((("OMPI_MCA_x", "c"),), "c")
    times = {search.DEFAULT: lambda s: 10.0, A: lambda s: 10.0 / 1.10, B: lambda s: 20.0,
             c: lambda s: 5.0}
    _, more = run_search(core, [A, B, c], times, rounds=4, extra_rounds=8, jitter=0.08,
                     progress=progress)
    counts = _counts(out.getvalue())[10:]
    assert len(more) > 4 * 4 - 1 and counts[0] == (11, 10 + 4 * 4), counts
    assert counts[-1] == (10 + len(more), 10 + len(more)), counts
    assert max(t for _, t in counts) == 10 + len(more)


def test_a_search_beyond_its_budget_is_refused_before_any_job(core):
    times = {search.DEFAULT: lambda s: 10.0, A: lambda s: 9.0}
    opts = CoreOptions(sizes="1K:4M", factor=4.0)
    need = 2 * 4 * search.estimate_s(opts, ["bw"])
    with pytest.raises(CommscopeError, match="more than --budget"):
        run_search(core, [A], times, budget_s=need - 1)
    _, calls = run_search(core, [A], times, budget_s=need + 1)
    assert len(calls) == 8


def test_the_search_space_comes_from_the_implementations_variables(monkeypatch):
    from commscope.measure import provenance

    monkeypatch.setattr(provenance, "n_cores", lambda: 2)
    bind = "COMMSCOPE_BIND=none"  # the launcher binds each rank to a core by default

    def fake_core(family, variant=""):
        return SimpleNamespace(impl=SimpleNamespace(family=family, name=family, variant=variant),
                               bench=lambda b: {"group": "p2p" if b == "bw" else "coll"})
    cv = {"btl_vader_single_copy_mechanism": {"value": "cma",
                                              "enum": ["cma", "emulated", "none"]},
          "btl_vader_eager_limit": {"value": "4096"},
          "coll_tuned_bcast_algorithm": {"value": "ignore", "enum": ["ignore", "chain"]}}
    labels = [c.label for c in search.space(fake_core("openmpi"), cv, ["bw", "bcast"])]
    assert labels == [
        "OMPI_MCA_btl_vader_single_copy_mechanism=emulated",
        "OMPI_MCA_btl_vader_single_copy_mechanism=none",
        "OMPI_MCA_btl_vader_eager_limit=2048", "OMPI_MCA_btl_vader_eager_limit=16384",
        "OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_bcast_algorithm=chain",
        bind]
    assert [c.label for c in search.space(fake_core("openmpi"), cv, ["allreduce"])] == [bind]
    mp = {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": {"value": "0"},
          "MPIR_CVAR_DEVICE_COLLECTIVES": {"value": "2"}}
    # MPICH: the names its selection tables hold, less those a single node cannot use
    got = [c.label for c in search.space(fake_core("mpich"), mp, ["bcast"], {
        "bcast": ("binomial", "smp", "tree"), "reduce": ("binomial",)})]
    assert got == ["MPIR_CVAR_DEVICE_COLLECTIVES=none", "MPIR_CVAR_BCAST_INTRA_ALGORITHM=binomial",
                   "MPIR_CVAR_BCAST_INTRA_ALGORITHM=tree", bind]
    # Intel MPI: the numbers Intel MPI itself accepted, for the collectives asked
    got = [c.label for c in search.space(fake_core("intel"), {}, ["bcast", "bw"],
                                       {"bcast": [1, 2, 3], "allreduce": [1, 2]})]
    assert got == ["I_MPI_ADJUST_BCAST=1", "I_MPI_ADJUST_BCAST=2", "I_MPI_ADJUST_BCAST=3", bind]
    # MVAPICH2: its own tables' numbers, not MPICH's variables or UCX's, whatever it lists
    got = [c.label for c in search.space(fake_core("mpich", "mvapich2"), mp, ["alltoall", "bw"],
                                       {"alltoall": ("pairwise",)})]
    assert got == ["MV2_USE_SHMEM_COLL=0", *(f"MV2_ALLTOALL_TUNING={v}" for v in "0123"), bind]
    monkeypatch.setattr(provenance, "n_cores", lambda: 1)  # one core: nothing to bind
    assert [c.label for c in search.space(fake_core("openmpi"), cv, ["allreduce"])] == []


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_a_short_real_search(capsys, tmp_path, cores, family):
    if family not in cores:
        pytest.skip(f"{family} not installed")
    out = tmp_path / "tuned.env"
    rc, text, err = run(capsys, "tune", "--db", str(tmp_path / "t.db"), "--mpi", family,
                        "--bench", "bw", "--sizes", "1M", "--rounds", "3", "--extra-rounds", "1",
                        "--time-cap", "0.05",
                        "--write", str(out), "--quiet")
    assert rc == 0, err
    cv = search.read_cvars(cores[family])
    n = len(search.space(cores[family], cv, ["bw"]))
    assert n >= 3
    assert text.startswith(f"{family}: {n} candidate(s) against the default, 3 interleaved")
    assert text.count("\n  ") >= n and "recommendation:" in text
    assert out.exists() == ("recommendation: keep the defaults" not in text)


def test_tune_bad_input_is_one_line(capsys, tmp_path):
    for argv, needle in ((["--mpi", "lam"], "unknown MPI implementation"),
                         (["--mpi", "openmpi", "--bench", "nope"], "unknown benchmark"),
                         (["--mpi", "openmpi", "--validate", "bw"], "--validate takes"),
                         (["--mpi", "openmpi", "--rounds", "2"], "outside"),
                         (["--mpi", "openmpi", "--budget", "5"], "more than --budget")):
        rc, _, err = run(capsys, "tune", "--db", str(tmp_path / "t.db"), "--quiet", *argv)
        assert rc != 0 and len(err.strip().splitlines()) == 1 and needle in err, err


def _bcast_wins(alg):
    """A search() whose candidate forcing `alg` won bcast from 64 KiB to
    256 KiB; the labels it was handed."""
    searched = []

    def fake_search(core, benches, opts, cands, store, **_):
        searched.extend(c.label for c in cands)
        return [search.Outcome(c, effects=[
            search.Effect("bcast", s, 1.5 if 65536 <= s <= 262144 and alg in c.label else 1.0,
                          1.4 if 65536 <= s <= 262144 and alg in c.label else 0.9, 1.6, 5)
            for s in SIZES]) for c in cands]
    return fake_search, searched


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_tune_write_puts_per_size_choices_in_the_implementations_own_file(
        capsys, tmp_path, cores, family, monkeypatch):
    """The search's measurements stand in (a bcast algorithm that won from
    64 KiB to 256 KiB); everything else is real: the implementation's
    variables and algorithm names, the file beside the settings, and the
    settings naming it."""
    import json

    from commscope.advise import selection

    if family not in cores:
        pytest.skip(f"{family} not installed")
    alg = {"openmpi": "chain", "mpich": "scatter_ring_allgather"}[family]
    fake, searched = _bcast_wins(alg)
    monkeypatch.setattr(search, "search", fake)
    out = tmp_path / "tuned.env"
    rc, text, err = run(capsys, "tune", "--db", str(tmp_path / "t.db"), "--mpi", family,
                        "--bench", "bcast", "--write", str(out), "--validate", "matmul",
                        "--validate-param", "N=64", "--quiet")
    assert rc == 0, err
    assert any(alg in label for label in searched), searched
    side = out.with_suffix({"openmpi": ".rules", "mpich": ".json"}[family])
    names = {"openmpi": "OMPI_MCA_coll_tuned_dynamic_rules_filename",
             "mpich": selection.MPICH_JSON_CVAR}
    exports = [x for x in out.read_text().splitlines() if x.startswith("export ")]
    assert f"export {names[family]}={side.resolve()}" in exports, exports
    # what is handed over was measured again, together, against the default,
    # and is what the application validates
    assert "the settings handed over, measured together against the default" in text, text
    assert sum(str(side.resolve()) in label for label in searched) == 2, searched
    assert f"validating {[x for x in searched if str(side.resolve()) in x][0]} against" in text
    if family == "mpich":
        tree = json.loads(side.read_text())["collective=bcast"]["comm_type=intra"]
        assert tree["avg_msg_size<=262144"] == {f"algorithm=MPIR_Bcast_intra_{alg}": {}}, tree
    else:
        assert "65536 2 0 0  # chain" in side.read_text()


def test_a_selection_file_mpich_does_not_take_is_not_handed_over(capsys, tmp_path, cores,
                                                                  monkeypatch):
    """The written file runs in a check job first: one MPICH cannot parse
    (here an algorithm it lacks) fails it, and the settings leave it out."""
    from commscope.advise import selection

    if "mpich" not in cores:
        pytest.skip("mpich not installed")
    fake, _ = _bcast_wins("scatter_ring_allgather")
    monkeypatch.setattr(search, "search", fake)
    good = selection.mpich_json
    monkeypatch.setattr(selection, "mpich_json", lambda *a: good(*a).replace(
        "_intra_scatter_ring_allgather", "_intra_warp_drive"))
    out = tmp_path / "tuned.env"
    rc, text, err = run(capsys, "tune", "--db", str(tmp_path / "t.db"), "--mpi", "mpich",
                        "--bench", "bcast", "--write", str(out), "--quiet")
    assert rc == 1, (text, err)
    assert f"mpich did not take {out.with_suffix('.json')} in a check job" in err, err
    assert selection.MPICH_JSON_CVAR not in out.read_text()
    assert "MPIR_CVAR_BCAST_INTRA_ALGORITHM=scatter_ring_allgather" in out.read_text()


def test_a_binding_winner_says_how_to_launch_with_it():
    core = SimpleNamespace(impl=SimpleNamespace(family="openmpi", name="openmpi", variant=""))
    w = search.Outcome(search.Candidate((("COMMSCOPE_BIND", "none"),)), effects=[
        search.Effect("bw", s, 1.5, 1.3, 1.7, 5) for s in SIZES])
    text = tune_text.settings_text(w, core)
    assert ("# COMMSCOPE_BIND=none: outside commscope, launch with --bind-to none --map-by core"
            in text.splitlines()), text
    assert text.endswith("export COMMSCOPE_BIND=none\n")


def test_rounds_taken_across_machine_modes_pair_nothing():
    # the host moved the vCPUs in round 2 (floor 60 -> 250 ns) for the
    # candidate only: that round's ratio is the host's, not the setting's
    key = ("bw", 4096)
    cand = {1: {key: 0.5}, 2: {key: 2.0}, 3: {key: 0.5}, 4: {key: 0.5}}
    base = {r: {key: 2.0} for r in cand}
    floors = {1: {key: 60.0}, 2: {key: 250.0}, 3: {key: 58.0}, 4: {key: 61.0}}
    base_floors = {r: {key: 60.0} for r in cand}
    (e,) = search.effects(cand, base, floors, base_floors)
    assert e.n == 3 and e.ratio == 4.0 and e.wins
    # without floors every round pairs, as before
    (e,) = search.effects(cand, base)
    assert e.n == 4


def test_effects_asked_in_one_mode_pair_only_its_rounds():
    # rounds 1-2 in the 250 ns mode, where this setting slowed the size down;
    # rounds 3-5 at 60 ns, where it halved the time
    key = ("bw", 8192)
    cand = {1: {key: 4.0}, 2: {key: 4.5}, 3: {key: 1.0}, 4: {key: 1.1}, 5: {key: 0.9}}
    base = {1: {key: 2.5}, 2: {key: 3.0}, 3: {key: 2.0}, 4: {key: 2.2}, 5: {key: 1.8}}
    fl = {r: {key: 250.0 if r <= 2 else 60.0} for r in cand}
    (e,) = search.effects(cand, base, fl, fl, mode_ns=61.0)
    assert e.n == 3 and e.ratio == 2.0 and e.wins
    (e,) = search.effects(cand, base, fl, fl, mode_ns=255.0)
    assert e.n == 2 and e.ratio < 1



def test_settings_handed_to_a_shell_run_nothing(tmp_path):
    """A candidate's value is quoted in the export lines `tune --write` and
    `--apply` print: a shell that sources them sets the variable and runs
    nothing, and `run --settings` reads the same value back."""
    import subprocess

    from commscope.measure import settings

    evil = f"$(touch {tmp_path}/pwned)"
    line = tune_text.export_line("OMPI_MCA_x", evil)
    got = subprocess.run(["sh", "-c", f'{line}; printf %s "$OMPI_MCA_x"'], capture_output=True,
                         text=True, check=True).stdout
    assert got == evil and not (tmp_path / "pwned").exists()
    assert settings.parse_text(line) == (("OMPI_MCA_x", evil),)
    assert tune_text.export_line("OMPI_MCA_y", "16384") == "export OMPI_MCA_y=16384"


def test_tune_help_names_its_own_option_for_repetitions(capsys):
    """The core's help for --target-ci says repetitions come from --repeat;
    tune has no --repeat: its help says --rounds."""
    from commscope.cli.parser import make_parser

    with pytest.raises(SystemExit):
        make_parser().parse_args(["tune", "--help"])
    out = capsys.readouterr().out
    assert "--repeat" not in out and "(--rounds)" in out
