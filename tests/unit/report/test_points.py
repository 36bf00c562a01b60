"""export --points: what programs read is what people read.  On the fixed
stored sweep of the golden test (no measurement, so no noise policy is
needed): every point equals the cell `show` prints for it (headline,
interval and marks), the JSON validates against the documented schema,
the provenance names every implementation with its version, and every
element of a `show` cell has a field."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from commscope import cli
from commscope.store.sizes import human
from tests.helpers import ROOT

STORE = ROOT / "tests" / "golden" / "behaviour" / "store.sqlite"
SCHEMA = ROOT / "docs" / "export-points.schema.json"


@pytest.fixture()
def store(tmp_path) -> Path:
    p = tmp_path / "s.sqlite"
    shutil.copy(STORE, p)
    return p


def out_of(capsys, *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def show_cells(text: str) -> dict[tuple[str, int, str, str], str]:
    """(bench, np, size as shown, column) -> cell, from show's tables."""
    cells: dict[tuple[str, int, str, str], str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\w+), (\d+) processes(?:, [^:]+)?: ", lines[i])
        if not m:
            i += 1
            continue
        bench, np_ = m.group(1), int(m.group(2))
        head = lines[i + 1]
        # header: "{'size':>8}  " then columns right-aligned to one width, two spaces apart
        names = head[10:].split()
        w = (len(head) - 10 - 2 * (len(names) - 1)) // len(names)
        cols = [head[10 + k * (w + 2): 10 + k * (w + 2) + w].strip() for k in range(len(names))]
        i += 2
        while i < len(lines) and lines[i].strip():
            row = lines[i]
            for k, c in enumerate(cols):
                cells[(bench, np_, row[:8].strip(), c)] = row[10 + k * (w + 2):
                                                               10 + k * (w + 2) + w].strip()
            i += 1
    return cells


def expected_cell(p: dict) -> str:
    fmt = {"median_us": "{:.3f}", "mb_per_s": "{:.1f}"}.get(p["figure"], "{:.0f}")
    if not p["valid"]:
        return "INVALID"
    txt = fmt.format(p["value"])
    if p["low"] is not None:
        txt += f" ({fmt.format(p['low'])}-{fmt.format(p['high'])})"
    if len(p["windows"]) > 1:
        txt += f" (windows {', '.join(map(str, p['windows']))})"
    elif p["window_narrowed"]:
        txt += f" (window {p['window']})"
    return txt + p["marks"]


def test_every_point_is_the_figure_show_prints(store, capsys):
    shown = show_cells(out_of(capsys, "show", "--db", str(store)))
    pts = json.loads(out_of(capsys, "export", "--db", str(store), "--points", "--format",
                            "json"))["points"]
    assert len(pts) == len(shown) > 100
    for p in pts:
        size = str(p["size_bytes"]) if p["size_param"] else human(p["size_bytes"])
        cell = shown[(p["bench"], p["np"], size, p["label"])]
        assert cell == expected_cell(p), (p["bench"], size, p["label"])
    # the intervals are the between-run ones, and cover the headline
    timed = [p for p in pts if p["low"] is not None]
    assert timed and all(p["low"] <= p["value"] <= p["high"] for p in timed)
    assert {p["interval"] for p in timed} <= {"between runs", "pooled", "range of 2 runs",
                                              "within one run"}
    # where a next run is expected: never narrower than the typical figure's
    # interval the comparisons use (ci_lo_us, ci_hi_us)
    times = [p for p in timed if p["figure"] == "median_us" and p["interval"] == "between runs"]
    assert times and all(p["low"] <= p["ci_lo_us"] and p["high"] >= p["ci_hi_us"] for p in times)
    assert sum(p["high"] - p["low"] > 1.5 * (p["ci_hi_us"] - p["ci_lo_us"]) for p in times) \
        > len(times) / 2
    # the runs a figure combines, and their mark: one is ¹, two ²
    assert all(("¹" in p["marks"]) == (p["runs"] == 1) and ("²" in p["marks"]) == (p["runs"] == 2)
               for p in pts)
    assert any(p["runs"] < p["runs_stored"] for p in pts)  # runs left out are said


def test_the_csv_has_the_same_points(store, capsys):
    text = out_of(capsys, "export", "--db", str(store), "--points")
    pts = json.loads(out_of(capsys, "export", "--db", str(store), "--points", "--format",
                            "json"))["points"]
    rows = text.splitlines()
    assert len(rows) == len(pts) + 1 and "\t" not in text
    head = rows[0].split(",")
    assert head[:3] == ["bench", "np", "size_bytes"] and "value" in head and "low" in head


def _check(value: object, schema: dict, where: str) -> None:
    """The part of JSON Schema the document uses: type, enum, required,
    properties, additionalProperties, items."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        ok = {"object": dict, "array": list, "string": str, "boolean": bool,
              "null": type(None)}
        fits = any((k == "integer" and isinstance(value, int) and not isinstance(value, bool))
                   or (k == "number" and isinstance(value, int | float)
                       and not isinstance(value, bool))
                   or (k in ok and isinstance(value, ok[k])) for k in kinds)
        assert fits, f"{where}: {value!r} is not {kinds}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if isinstance(value, dict):
        for k in schema.get("required", ()):
            assert k in value, f"{where}: {k} missing"
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                _check(v, props[k], f"{where}.{k}")
            elif extra is False:
                raise AssertionError(f"{where}: {k} is not in the schema")
            elif isinstance(extra, dict):
                _check(v, extra, f"{where}.{k}")
    if isinstance(value, list) and "items" in schema:
        for n, v in enumerate(value):
            _check(v, schema["items"], f"{where}[{n}]")


def test_the_json_validates_against_the_documented_schema(store, capsys):
    doc = json.loads(out_of(capsys, "export", "--db", str(store), "--points", "--format",
                            "json"))
    _check(doc, json.loads(SCHEMA.read_text()), "$")
    # and the validator does reject: a point with a field the schema lacks
    doc["points"][0]["surprise"] = 1
    with pytest.raises(AssertionError, match="surprise"):
        _check(doc, json.loads(SCHEMA.read_text()), "$")


def test_the_provenance_names_every_implementation_with_its_version(store, capsys):
    doc = json.loads(out_of(capsys, "export", "--db", str(store), "--points", "--format",
                            "json"))
    prov = doc["provenance"]
    impls = {i["name"]: i for i in prov["implementations"]}
    assert set(impls) == {p["mpi"] for p in doc["points"]} == {"mpich", "openmpi"}
    for p in doc["points"]:
        assert p["mpi_version"] == impls[p["mpi"]]["version"] != ""
    assert impls["openmpi"]["version"].startswith("Open MPI v4")
    assert "\t" not in impls["mpich"]["version"]
    assert prov["store"]["records"] == 660 and prov["store"]["runs"] == 7
    assert prov["sweeps"] and prov["sweeps"][0]["options"]
    assert set(prov["marks"]) == {"¹", "²", "~", "*", "†"}
    # who measured the points, apart from who exported them
    import sqlite3

    revs = {r[0] for r in sqlite3.connect(store).execute("SELECT git_rev FROM runs")}
    assert {m["revision"] for m in prov["measured_by"]} == revs and None not in revs


def test_every_element_of_a_show_cell_has_a_field():
    """What a `show` table prints (its header: benchmark, processes, where,
    unit; its column: the configuration; each cell: the figure, its
    interval, the window it ran, its marks; the applications' phase and
    scaling tables) each have a field of a point."""
    schema = json.loads(SCHEMA.read_text())["properties"]["points"]["items"]["properties"]
    shown = {"bench", "np", "where", "unit", "label", "size_bytes", "size_param", "value",
             "low", "high", "window", "windows", "window_narrowed", "marks", "phases", "mlups",
             "efficiency", "efficiency_low", "efficiency_high", "busbw_mb_per_s"}
    assert shown <= set(schema)


def test_the_json_has_the_headline_figures_the_terminal_and_report_give(store, capsys):
    from commscope.analysis import limits
    from commscope.analysis.repeats import aggregate
    from commscope.store.db import Store

    doc = json.loads(out_of(capsys, "export", "--db", str(store), "--points", "--format",
                            "json"))
    head = doc["headline"]
    assert head["implementations"] == ["mpich", "openmpi"]
    lat = next(f for f in head["figures"] if f["figure"].startswith("latency"))
    s = Store(store, create=False)
    want = limits.headline(aggregate(s.result_rows(), mode="dominant"),
                           json.loads(s.probe_for([1])["data"]) if s.probe_for([1]) else None)
    assert want is not None
    (_, _, figs) = next(r for r in want.rows if r[0].startswith("latency"))
    assert [v["median"] for v in lat["values"]] == [f.value for f in figs]
    assert all(v["lo"] <= v["median"] <= v["hi"] for v in lat["values"])
