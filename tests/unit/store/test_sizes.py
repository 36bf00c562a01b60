from __future__ import annotations

import json
import subprocess

import pytest

from commscope.errors import CommscopeError
from commscope.store.sizes import expand_sizes, human, parse_size


def test_parse_size_units():
    assert parse_size("8") == 8
    assert parse_size("64K") == 65536
    assert parse_size("4M") == 4 << 20
    assert parse_size("1MiB") == 1 << 20
    assert parse_size("2kb") == 2048


def test_default_range_is_1_to_4m_in_powers_of_two():
    sizes = expand_sizes("1:4M")
    assert sizes[0] == 1 and sizes[-1] == 4 << 20 and len(sizes) == 23


def test_zero_and_factor():
    assert expand_sizes("0:16", 4) == [0, 1, 4, 16]
    assert expand_sizes("8") == [8]


@pytest.mark.parametrize("spec", ["4M:1", "abc", "1:x", "", "1:2:3", "-1", "2G"])
def test_bad_specs(spec):
    with pytest.raises(CommscopeError):
        expand_sizes(spec)


def test_human():
    assert [human(s) for s in (8, 1024, 4 << 20, 1536)] == ["8", "1K", "4M", "1536"]


SIZE_SPECS = ("8", "0", "0:8", "1:4M", "64K", "64k", "64KiB", "64kib", "64KB", "4Mi", "8Kb",
              "8B", "8iB", " 8", "8 ", "1:1536M", "1:2G", "2G", "1G", "1:1G", "4M:1", "", ":",
              "1:", "1:2:3", "x", "-1", "+1", "1.5K", "0x10", "\u0663", "1T", "1:1099511627776",
              "99999999999999999999999", "1024:1024")


def test_the_python_side_size_grammar_is_the_cores(bare_core):
    """store/sizes.py refuses what the core refuses and expands what it
    expands, asked of the core itself (`cs-core --expand-sizes`, no MPI: the
    core built without one)."""
    differ = []
    # and a factor that wrapped the core's size_t around past its limit (16 GiB + 1, then 1 GiB)
    for spec, factor in [*((s, f) for s in SIZE_SPECS for f in (2, 3)),
                         ("17179869185:1099511627776", 1 << 30), ("1:1G", 1 << 30)]:
        p = subprocess.run([str(bare_core), "--expand-sizes", "--sizes", spec, "--factor",
                            str(factor)], capture_output=True, text=True, timeout=30, check=False)
        theirs = json.loads(p.stdout)["sizes"] if p.returncode == 0 else None
        try:
            ours = expand_sizes(spec, factor)
        except CommscopeError:
            ours = None
        if ours != theirs:
            differ.append((spec, factor, ours, theirs, p.stderr.strip()))
    assert not differ, differ
