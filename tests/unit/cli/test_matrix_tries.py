"""matrix's second tries set against their first (cli/matrix.py)."""

from __future__ import annotations

from commscope.cli.matrix import second_tries


def test_a_second_try_measured_again_narrower_still_pairs_with_its_first():
    """run_sweep gives one outcome per job, then one per window it measured
    again narrower: beside other work a Slurm matrix's second try was, and
    pairing the lists whole ended the command in an internal error."""
    first, second = ["a1", "b1"], ["a2", "b2", "b2 narrower"]
    assert second_tries(first, second) == [("a1", "a2"), ("b1", "b2")]
    assert second_tries([], []) == []
