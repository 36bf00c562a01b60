from __future__ import annotations

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
