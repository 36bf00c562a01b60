"""One source for each benchmark's facts (store/core_facts.py): what the core
publishes (core_benches.json, core_options.json) is what analysis and report
act on, and the helpers said once (the least change, runs of marks, a row's
configuration) behave as the copies they replaced.  Fixed data, no MPI."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from commscope.analysis import compare, crossover, findings, guidelines, headlines, series
from commscope.analysis.significance import MIN_CHANGE, MIN_FACTOR
from commscope.report import focus, tables
from commscope.store import core_facts, sizes
from commscope.store.config import (
    LATER_PARAMS,
    PARAM_DEFAULTS,
    Configuration,
    config_of,
    params_of,
    stored,
    what,
)
from commscope.store.records import Result
from tests.helpers import golden

GOLDEN = golden("behaviour", "store.sqlite")


# -- the core's facts ---------------------------------------------------------------
def test_bytes_per_op_gives_the_bytes_moved_per_byte_of_size():
    assert core_facts.bench("bw").per_size() == 1.0
    assert core_facts.bench("bibw").per_size() == 2.0
    assert core_facts.bench("gather").per_size(6) == 6.0
    assert core_facts.bench("sendloop").per_size() == 1.0
    assert core_facts.bench("latency").per_size() is None


def test_a_benchmark_the_table_does_not_know_is_read_as_a_time():
    b = core_facts.bench("old_one")
    assert (b.known, b.group, b.primary, b.figure, b.unit, b.bytes_per_op, b.changed_by) == (
        False, "", "median_us", "time", "us", None, ())
    assert not findings.moves_bandwidth("old_one") and not findings.model_input("old_one")
    assert focus._bandwidth("old_one", 2) is None


def test_sendloop_is_a_time_in_figures_and_a_bandwidth_in_findings():
    """Its primary figure is the time per send, but each send moves a
    message: the focus figure plots it as time, the findings check it for
    bandwidth drops."""
    assert [b for b in ("bw", "bibw", "sendloop", "latency", "roundtrip")
            if focus._bandwidth(b, 2)] == ["bw", "bibw"]
    assert [b for b in ("bw", "bibw", "sendloop", "latency", "roundtrip", "bcast")
            if findings.moves_bandwidth(b)] == ["bw", "bibw", "sendloop"]
    assert all(findings.model_input(b) for b in ("loggp_1", "loggp_n", "loggp_nd",
                                                  "loggp_ndr"))
    assert headlines.P2P == {"latency", "roundtrip", "sendloop", "bw", "bibw"}


def test_a_tables_unit_and_an_old_records_primary_figure_are_the_cores():
    def rows(bench):
        return [{"bench": bench, "primary_figure": None}]

    assert tables.primary(rows("bw")) == ("mb_per_s", "MB/s")
    assert tables.primary(rows("bibw")) == ("mb_per_s", "MB/s")
    assert tables.primary(rows("roundtrip")) == ("rate_per_s", "round trips/s")
    assert tables.primary(rows("latency")) == ("median_us", "us")
    assert tables.primary(rows("old_one")) == ("median_us", "us")
    assert tables.primary([{"bench": "bw", "primary_figure": "median_us"}]) == (
        "median_us", "us")


def test_option_defaults_are_the_cores_typed():
    table = {o["field"]: o for o in core_facts.options()}
    for k, v in {**PARAM_DEFAULTS, **LATER_PARAMS}.items():
        assert v == table[k]["default"]
    assert PARAM_DEFAULTS["loggp_delay_us"] == 20.0 and isinstance(
        PARAM_DEFAULTS["loggp_delay_us"], float)  # a float in every stored key
    assert PARAM_DEFAULTS["window"] == 64 and PARAM_DEFAULTS["rotate_root"] is False


def test_every_option_that_changes_a_benchmark_is_a_configuration_parameter():
    """A new one from the core must be placed by hand (LATER_PARAMS, so that
    stored keys stay), not silently left out of configurations."""
    assert core_facts.changing_options() == set(PARAM_DEFAULTS) | set(LATER_PARAMS)


def test_stored_keys_stay_what_they_were():
    """The golden sweep's configurations, rebuilt from each run's options
    with the defaults from the core's table, have the keys stored with them."""
    con = sqlite3.connect(GOLDEN)
    con.row_factory = sqlite3.Row
    for r in con.execute("SELECT config_key, config, options FROM runs"):
        cfg = config_of(r)
        assert cfg is not None and cfg.key == r["config_key"]
        opts = json.loads(r["options"])
        if opts.get("window") == 64:  # (one run measured again at a narrower window)
            assert Configuration(**{**cfg.__dict__, "params": params_of(opts)}).key == cfg.key


def test_the_largest_size_is_the_cores():
    assert sizes.MAX_SIZE == core_facts.option("sizes")["max_size"] == 1 << 30
    with pytest.raises(Exception, match="above the 1 GiB limit"):
        sizes.parse_size("2G")


# -- which parameters a label names: the core's changed_by -----------------------------------
def _cfg(**params) -> Configuration:
    return Configuration("openmpi", params=params_of({**PARAM_DEFAULTS, **params}))


def _what(bench: str, cfg: Configuration, **row) -> str:
    return what({"bench": bench, "config": json.dumps(cfg.to_json()), "mpi_name": "openmpi",
                 "params": None, "root": None, **row})


def test_a_label_names_only_the_parameters_that_change_its_benchmark():
    c = _cfg(window=16, loggp_n=8, loggp_delay_us=5.0, dtype="double", buffers="cold")
    assert _what("bw", c) == "openmpi buffers=cold window=16"
    assert _what("latency", c) == "openmpi buffers=cold"
    assert _what("allreduce", c) == "openmpi buffers=cold dtype=double"
    # the C reads neither loggp_n nor the delay in loggp_1, and no delay in loggp_n
    assert _what("loggp_1", c) == "openmpi buffers=cold"
    assert _what("loggp_n", c) == "openmpi buffers=cold loggp_n=8"
    assert _what("loggp_nd", c) == "openmpi buffers=cold loggp_delay_us=5.0 loggp_n=8"
    assert _what("barrier", c) == "openmpi"  # a barrier moves no buffer
    assert _what("bcast", _cfg(root=1)) == "openmpi root=1"


def test_a_benchmark_the_table_does_not_know_is_labelled_by_what_its_record_shows():
    c = _cfg(window=16, root=1, buffers="cold", param="n=4")
    assert _what("old_one", c) == "openmpi buffers=cold"
    assert _what("old_one", c, root=1) == "openmpi buffers=cold root=1"
    assert _what("old_app", c, params="n=4") == "openmpi param=n=4"


# -- a row's configuration, decoded in one place ------------------------------------
def test_config_of_decodes_once_and_says_none_where_nothing_is_stored():
    c = _cfg(window=16)
    row = {"config": json.dumps(c.to_json()), "config_key": None}
    assert config_of(row) == c and config_of(dict(row)) is config_of(row)
    assert stored(row) == (c.key, c)
    assert config_of({"config": None}) is None and config_of({"config": ""}) is None
    assert config_of({}) is None and stored({}) == ("", None)


# -- the least change, said once --------------------------------------------------------
def test_one_least_change_everywhere():
    assert MIN_FACTOR == 1.05 and MIN_CHANGE == 0.05
    assert crossover.MIN_FACTOR is MIN_FACTOR and guidelines.MIN_FACTOR is MIN_FACTOR
    assert findings.MIN_FACTOR is MIN_FACTOR
    # the one object, not an equal number typed again
    assert compare.compare_rows.__defaults__[0] is MIN_FACTOR
    assert crossover.classify.__defaults__[0] is MIN_FACTOR


# -- runs of marks, said once --------------------------------------------------------------
def _old_ranges(marks):
    runs, prev = [], None
    for s, lab in marks:
        if lab is not None and lab == prev:
            runs[-1][1].append(s)
        elif lab is not None:
            runs.append((lab, [s]))
        prev = lab
    return runs


def _old_lone(marks):
    if len(marks) < 3:
        return marks
    out = []
    for i, (s, m) in enumerate(marks):
        left = marks[i - 1][1] if i > 0 else None
        right = marks[i + 1][1] if i + 1 < len(marks) else None
        out.append((s, m if m == "=" or m in (left, right) else "="))
    return out


def _old_edge(marks):
    out = list(marks)
    n = len(out)
    for i, j in ((0, 1), (n - 1, n - 2)):
        if n and out[i][1] != "=" and (n == 1 or marks[j][1] != marks[i][1]):
            out[i] = (out[i][0], "=")
    return out


def _old_verdict_runs(marks):
    out = []
    for size, m in marks:
        if out and out[-1][0] == m:
            out[-1] = (m, out[-1][1], size)
        else:
            out.append((m, size, size))
    return out


def test_runs_of_marks_read_as_each_copy_did():
    rng = random.Random(5)
    for _ in range(2000):
        n = rng.randrange(0, 9)
        marks = [(1 << i, rng.choice("HL=")) for i in range(n)]
        labels = [(s, None if m == "=" else m) for s, m in marks]
        assert [(m, s) for m, s in series.runs(labels) if m is not None] == _old_ranges(labels)
        assert series.lone_is_no_claim(marks) == _old_lone(marks)
        assert crossover.edge_alone_is_no_claim(marks) == _old_edge(marks)
        v = crossover.Verdict("=", "=", None, None, None, tuple(marks))
        assert v.runs() == _old_verdict_runs(marks)
    assert series.runs([(1, "H"), (2, "H"), (4, "="), (8, "H")]) == [
        ("H", [1, 2]), ("=", [4]), ("H", [8])]


# -- the copies of the core's own facts, held to the core built without MPI ------------
def _listed(bare_core) -> dict:
    return json.loads(subprocess.run([str(bare_core), "--list", "--json"], capture_output=True,
                                     text=True, check=True, timeout=30).stdout)


def test_the_python_side_options_are_the_cores_own_table(bare_core):
    """core_options.json is a copy of the core's option table (with a sweep's
    limits in the --sizes entry): when options.c changes, regenerate it with
    `cs-core --list --json` (the options part)."""
    from commscope.measure.plan import CORE_OPTIONS

    assert _listed(bare_core)["options"] == list(CORE_OPTIONS), (
        "src/commscope/core_options.json is stale against cs-core --list --json: "
        "python -m tests.core_facts_copy")


def test_the_python_side_benchmarks_are_the_cores_own_table(bare_core):
    """core_benches.json is a copy of the core's benchmark table (each
    benchmark's group, primary figure and its kind, bytes per op, minimum
    process count, the options that change what it measures ...): when a
    benchmark's declaration or core/harness/facts.c changes, regenerate it
    with `cs-core --list --json` (the benchmarks part, json.dumps(...,
    indent=1))."""
    import commscope

    copy = json.loads((Path(commscope.__file__).parent / "core_benches.json").read_text())
    assert _listed(bare_core)["benchmarks"] == copy, (
        "src/commscope/core_benches.json is stale against cs-core --list --json: "
        "python -m tests.core_facts_copy")


def test_the_python_side_exit_statuses_are_the_cores_own(bare_core):
    """core_facts.json holds the core's exit statuses (enum cs_status, by the
    names main.c gives them in --list --json); the runner reads 'invalid' and
    'skip' from it.  Regenerate it from `cs-core --list --json` when they change."""
    assert _listed(bare_core)["statuses"] == core_facts.statuses(), (
        "src/commscope/core_facts.json is stale against cs-core --list --json: "
        "python -m tests.core_facts_copy")


def test_a_records_fields_are_the_ones_the_core_declares(bare_core):
    """A result line's fields are declared once, in core/harness/fields.h;
    core_facts.json's "fields" is a copy of `--list --json`'s, which
    records.Result is built from.  Regenerate it when fields.h changes."""
    listed = _listed(bare_core)["fields"]
    assert listed == list(core_facts.fields()), (
        "src/commscope/core_facts.json is stale against cs-core --list --json: "
        "python -m tests.core_facts_copy")
    assert [f.name for f in fields(Result)] == [d["name"] for d in listed]
