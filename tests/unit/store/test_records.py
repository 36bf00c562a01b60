"""Parsing the core's records, against a golden file the real core wrote."""

from __future__ import annotations

import pytest

from commscope.analysis.stats import summarize
from commscope.errors import CommscopeError
from commscope.store.records import parse_file, parse_lines
from tests.helpers import RECORDS


def golden_results() -> list:
    """The golden file's results, never none: parse_file gives an empty
    parse for a missing file, and a loop over nothing passed for a renamed
    fixture."""
    assert RECORDS.is_file(), f"{RECORDS} is missing"
    got = parse_file(RECORDS).results
    assert len(got) == 4, got
    return got


def test_golden_file_parses_completely():
    p = parse_file(RECORDS)
    assert p.header is not None and p.footer is not None and p.bad_lines == 0
    assert p.header.np == 2 and p.header.mpi_library.startswith("Open MPI")
    assert p.header.options["bench"] == "latency,bw"
    assert [(r.bench, r.size_bytes) for r in p.results] == [
        ("latency", 8), ("latency", 64), ("bw", 8), ("bw", 64)]
    assert all(r.valid for r in p.results)


def test_golden_summary_matches_its_raw_samples():
    """The core's statistics are reproducible from the raw samples it kept."""
    for r in golden_results():
        assert r.raw_us is not None and len(r.raw_us) == r.n_samples
        s = summarize(r.raw_us)
        assert s.median == pytest.approx(r.median_us, rel=1e-5)
        assert s.ci_lo == pytest.approx(r.ci_lo_us, rel=1e-5)
        assert s.p95 == pytest.approx(r.p95_us, rel=1e-5)
        assert r.n_iters == r.n_samples * r.batch


def test_bandwidth_derives_from_median():
    for r in golden_results():
        if r.bench == "bw":
            assert r.mb_per_s == pytest.approx(r.size_bytes / r.median_us, rel=1e-4)
            assert r.rate_per_s == pytest.approx(1e6 / r.median_us, rel=1e-4)
        else:
            assert r.mb_per_s is None


def test_truncated_stream_keeps_complete_records():
    lines = RECORDS.read_text().splitlines()
    cut = lines[:3] + [lines[3][: len(lines[3]) // 2]]  # killed mid-write
    p = parse_lines(cut)
    assert len(p.results) == 2 and p.bad_lines == 1 and p.footer is None


def test_newer_schema_is_refused():
    line = RECORDS.read_text().splitlines()[0].replace('"schema":1', '"schema":99')
    with pytest.raises(CommscopeError, match="newer"):
        parse_lines([line])
