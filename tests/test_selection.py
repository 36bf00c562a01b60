"""Open MPI coll_tuned rules files: written from tuning outcomes with known
answers, and read by Open MPI itself in a real run (the file's choice
changes what MPI_Bcast does at the sizes it names, and only there)."""

from __future__ import annotations

import pytest

from commscope import cli, selection
from commscope.store import Store
from commscope.tune import Candidate, Effect, Outcome, with_rules

BCAST = {"coll_tuned_bcast_algorithm": {
    "value": "ignore", "enum": ["ignore", "basic_linear", "chain", "pipeline"],
    "enum_values": [0, 1, 2, 3]},
    "coll_tuned_alltoall_algorithm": {
    "value": "ignore", "enum": ["ignore", "basic_linear", "pairwise"],
    "enum_values": [0, 1, 2]}}


def outcome(coll: str, alg: str, ratios: dict[int, float], bench: str | None = None) -> Outcome:
    cand = Candidate((("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
                      (f"OMPI_MCA_coll_tuned_{coll}_algorithm", alg)))
    return Outcome(cand, effects=[Effect(bench or coll, s, r, r * 0.97, r * 1.03, 6)
                                  for s, r in ratios.items()])


SIZES = [1 << k for k in range(0, 21, 2)]  # 1 B .. 1 MiB


def test_choices_become_ranges_and_the_rules_file_says_them():
    # chain wins from 64 KiB on (1.5x), pipeline wins from 256 KiB by more
    # (2x) and takes those sizes; basic_linear wins at small sizes; a
    # bcast algorithm's "win" on allreduce is not a choice
    chain = outcome("bcast", "chain", {s: (1.5 if s >= 65536 else 1.0) for s in SIZES})
    pipe = outcome("bcast", "pipeline", {s: (2.0 if s >= 262144 else 1.0) for s in SIZES})
    lin = outcome("bcast", "basic_linear", {s: (1.3 if s <= 16 else 0.9) for s in SIZES})
    noise = outcome("bcast", "pipeline", {s: 3.0 for s in SIZES}, bench="allreduce")
    a2a = outcome("alltoall", "pairwise", {s: (1.2 if 256 <= s <= 4096 else 1.0) for s in SIZES})
    cs = selection.choices([chain, pipe, lin, noise, a2a], BCAST)
    got = [(c.coll, c.lo, c.hi, c.alg, c.value) for c in cs]
    assert got == [("alltoall", 256, 4096, "pairwise", 2),
                   ("bcast", 1, 16, "basic_linear", 1),
                   ("bcast", 65536, 65536, "chain", 2),
                   ("bcast", 262144, 1048576, "pipeline", 3)], got
    text = selection.openmpi_rules(cs, 4)
    numbers = [line.split("#")[0].split() for line in text.splitlines()]
    numbers = [x for x in numbers if x]
    # two collectives, alltoall (3) first: its sizes are per-rank blocks
    # times 4 ranks; then bcast (7) with the fixed decision between choices
    assert numbers == [["2"],
                       ["3"], ["1"], ["4"], ["3"],
                       ["0", "0", "0", "0"], ["1024", "2", "0", "0"], ["16388", "0", "0", "0"],
                       ["7"], ["1"], ["4"], ["7"],
                       ["0", "0", "0", "0"],
                       ["1", "1", "0", "0"], ["17", "0", "0", "0"],
                       # chain won at 64 KiB alone: unmeasured sizes above go back
                       # to Open MPI's decision until pipeline's range starts
                       ["65536", "2", "0", "0"], ["65537", "0", "0", "0"],
                       ["262144", "3", "0", "0"], ["1048577", "0", "0", "0"]], numbers


def test_an_algorithm_open_mpi_does_not_list_is_refused():
    o = outcome("bcast", "warp_drive", {s: 2.0 for s in SIZES})
    with pytest.raises(Exception, match="does not list 'warp_drive'"):
        selection.choices([o], BCAST)


@pytest.mark.mpi
def test_open_mpi_reads_the_rules_file_and_applies_it_where_it_says(tmp_path, cores, capsys):
    """A rules file that sends MPI_Bcast from 64 KiB up to the pipeline
    algorithm in 64-byte segments (thousands of steps per call): Open MPI
    must take it at 1 MiB (many times slower than its own choice, in every
    one of three alternating rounds) and not at 4 KiB, below the rule.
    The written comments and layout are what Open MPI parsed."""
    if "openmpi" not in cores:
        pytest.skip("needs Debian's Open MPI")
    rules = tmp_path / "bcast.rules"
    rules.write_text(selection.openmpi_rules(
        [selection.Choice("bcast", 65536, 1 << 20, "pipeline", 3, 1.0, segsize=64)], 2))
    env = tmp_path / "rules.env"  # as `commscope tune --write` writes it
    env.write_text(with_rules(None, rules, cores["openmpi"]))
    assert env.read_text().splitlines()[-2:] == [
        "export OMPI_MCA_coll_tuned_use_dynamic_rules=1",
        f"export OMPI_MCA_coll_tuned_dynamic_rules_filename={rules}"]
    db = tmp_path / "r.db"
    common = ["run", "--db", str(db), "--mpi", "openmpi", "--bench", "bcast", "--sizes",
              "4K:1M", "--factor", "256", "--min-samples", "8", "--time-cap", "0.3",
              "--no-probe", "--quiet"]
    for _ in range(3):
        assert cli.main(common) == 0, capsys.readouterr().err
        assert cli.main([*common, "--settings", str(env)]) == 0, capsys.readouterr().err
    rows = Store(db).result_rows(latest=False)
    assert all(r["valid"] for r in rows)
    by: dict[tuple[bool, int], list[float]] = {}
    for r in rows:
        tuned = "dynamic_rules_filename" in (r["config"] or "")
        by.setdefault((tuned, r["size_bytes"]), []).append(r["median_us"])
    assert all(len(v) == 3 for v in by.values()) and len(by) == 4, by
    slower = [t / d for t, d in zip(by[(True, 1 << 20)], by[(False, 1 << 20)], strict=True)]
    assert min(slower) > 3.0, slower  # about 15-20x here
    below = sorted(t / d for t, d in zip(by[(True, 4096)], by[(False, 4096)], strict=True))
    assert below[1] < 2.0, below  # the median round: no rule below 64 KiB
