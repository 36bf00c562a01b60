"""The store: round trip, migrations, and refusing files that are not ours."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from commscope.errors import CommscopeError
from commscope.store.db import FAILED, OK, RUNNING, SCHEMA_VERSION, Store
from commscope.store.records import parse_file
from tests.helpers import RECORDS, ROOT, info


def test_round_trip(tmp_path):
    s = Store(tmp_path / "a.db")
    parsed = parse_file(RECORDS)
    sweep = s.begin_sweep(["commscope", "run"], [{"k": 1}])
    rid = s.begin_run(info(), sweep)
    s.finish_run(rid, OK, exit_code=0, signal=None, stderr_tail="", header=parsed.header,
                 results=parsed.results, flags=[False, True, False, False],
                 noise={"valid": True})
    rows = s.result_rows()
    assert len(rows) == 4
    lat8 = [r for r in rows if r["bench"] == "latency" and r["size_bytes"] == 8][0]
    src = parsed.results[0]
    assert lat8["median_us"] == src.median_us and lat8["n_samples"] == src.n_samples
    assert lat8["mpi_name"] == "openmpi" and lat8["flagged"] == 0
    assert [r for r in rows if r["size_bytes"] == 64 and r["bench"] == "latency"][0]["flagged"]
    assert s.has_ok_run("k1") and not s.has_ok_run("other")
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert s.version == SCHEMA_VERSION


def test_latest_run_wins_and_failures_are_rows(tmp_path):
    s = Store(tmp_path / "a.db")
    parsed = parse_file(RECORDS)
    for _ in range(2):
        rid = s.begin_run(info(), None)
        s.finish_run(rid, OK, exit_code=0, signal=None, stderr_tail="", header=parsed.header,
                     results=parsed.results, flags=[False] * 4, noise={})
    failed = s.begin_run(info(plan_key="k2", bench="bw"), None)
    s.finish_run(failed, FAILED, exit_code=139, signal=None, stderr_tail="segfault",
                 header=None, results=[], flags=[], noise={})
    assert {r["run_id"] for r in s.result_rows()} == {2}
    assert len(s.result_rows(latest=False)) == 8
    assert [r["status"] for r in s.runs([FAILED])] == [FAILED]


def test_abandoned_running_becomes_failure_and_another_sweeps_job_stays_its_own(tmp_path):
    """A sweep that starts makes failures of the jobs whose process is gone
    (killed, or stored before owners were) and leaves the job another
    `commscope run` is running into the same store now."""
    s = Store(tmp_path / "a.db")
    mine = s.begin_run(info(), None)  # this process: alive, another sweep's for the next
    legacy = s.begin_run(info(plan_key="k-old"), None)
    elsewhere = s.begin_run(info(plan_key="k-there"), None)
    s.db.execute("UPDATE runs SET owner=NULL WHERE id=?", (legacy,))
    s.db.execute("UPDATE runs SET owner='another-host:1:1' WHERE id=?", (elsewhere,))
    s.db.commit()
    code = ("import sys; from commscope.store.db import Store; from tests.helpers import info;"
            "print(Store(sys.argv[1]).begin_run(info(plan_key='k-killed'), None))")
    killed = int(subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.db")], check=True,
                                capture_output=True, text=True,
                                cwd=ROOT).stdout)
    assert s.abandon_running() == 2
    status = {r["id"]: r["status"] for r in s.runs()}
    assert status == {mine: RUNNING, legacy: FAILED, elsewhere: RUNNING, killed: FAILED}


PROFILE = {"program": "/bin/prog", "argv": "[]", "cwd": "/", "mpi_name": "openmpi",
           "mpi_family": "openmpi", "np": 2, "launch_argv": "[]", "settings": "{}"}


def test_a_profile_left_running_by_a_killed_commscope_becomes_interrupted(tmp_path):
    """A profile begun by a process that is gone (SIGKILL: no handler ran)
    is marked interrupted, said so; one this process profiles stays running."""
    s = Store(tmp_path / "p.db")
    mine = s.begin_profile(PROFILE)
    code = ("import sys; from commscope.store.db import Store; "
            "from tests.unit.store.test_db import PROFILE; "
            "print(Store(sys.argv[1]).begin_profile(PROFILE))")
    killed = int(subprocess.run([sys.executable, "-c", code, str(tmp_path / "p.db")],
                                check=True, capture_output=True, text=True,
                                cwd=ROOT).stdout)
    assert s.abandon_profiles() == 1
    rows = {r["id"]: r for r in s.profiles()}
    assert rows[mine]["status"] == "running" and rows[killed]["status"] == "interrupted"
    assert "commscope stopped while the program ran" in rows[killed]["stderr_tail"]
    assert s.abandon_profiles() == 0


def test_migration_from_version_1(tmp_path):
    path = tmp_path / "old.db"
    old = Store.__new__(Store)  # a store as version 1 of commscope left it
    old.path = path
    old.db = sqlite3.connect(path)
    old.db.execute("PRAGMA application_id=0x43534350")
    old.migrate(target=1)
    assert old.version == 1
    old.db.execute("""INSERT INTO runs(started_at, status, plan_key, bench, np, sizes, mpi_name,
                      mpi_family, launch_argv) VALUES ('t', 'ok', 'k', 'latency', 2, '8',
                      'mpich', 'mpich', '[]')""")
    old.db.execute("""INSERT INTO results(run_id, bench, size_bytes, np, median_us, valid)
                      VALUES (1, 'latency', 8, 2, 0.5, 1)""")
    old.db.commit()
    old.db.close()
    s = Store(path)
    assert s.version == SCHEMA_VERSION
    row = s.result_rows()[0]
    assert row["median_us"] == 0.5 and row["flagged"] == 0 and row["oversubscribed"] == 0
    assert s.db.execute("SELECT count(*) FROM sweeps").fetchone()[0] == 0


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_refuses_a_text_file_and_leaves_it_intact(tmp_path):
    p = tmp_path / "notes.db"
    p.write_text("just some text, certainly not a database\n" * 20)
    before = _digest(p)
    with pytest.raises(CommscopeError, match="not a commscope database"):
        Store(p)
    assert _digest(p) == before


def test_refuses_another_applications_sqlite(tmp_path):
    p = tmp_path / "other.db"
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE t(x)")
    db.execute("INSERT INTO t VALUES (1)")
    db.commit()
    db.close()
    before = _digest(p)
    with pytest.raises(CommscopeError, match="not a commscope database"):
        Store(p)
    assert _digest(p) == before


def test_refuses_a_newer_schema(tmp_path):
    p = tmp_path / "new.db"
    Store(p).db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(CommscopeError, match="newer"):
        Store(p)


def test_missing_store_for_reading(tmp_path):
    with pytest.raises(CommscopeError, match="no commscope database"):
        Store(tmp_path / "absent.db", create=False)


def test_the_results_columns_are_the_records_declared_fields(tmp_path):
    """A record's fields are declared once (core/harness/fields.h, records.Result): the
    results table holds exactly their columns, besides the store's own (id,
    run_id, flagged, narrowed_in); a column without its field fails here.
    The export names only columns a record or its run has."""
    from commscope.report.export import EXPORT_COLUMNS
    from commscope.store.records import stored_columns

    s = Store(tmp_path / "a.db")
    have = {r[1] for r in s.db.execute("PRAGMA table_info(results)")}
    declared = {c for _, c, _ in stored_columns()}
    assert have - declared == {"id", "run_id", "flagged", "narrowed_in"}
    assert declared <= have, declared - have
    runs = {r[1] for r in s.db.execute("PRAGMA table_info(runs)")}
    renamed = {"mpi": "mpi_name"}  # the export's name for a run column
    assert {renamed.get(c, c) for c in EXPORT_COLUMNS} <= have | runs, (
        {renamed.get(c, c) for c in EXPORT_COLUMNS} - have - runs)


def test_a_field_declared_since_a_store_was_made_gets_its_column_as_the_store_opens(tmp_path):
    """A new record field is declared in one place (records.Result): a
    store made before it lacks its column, and opening the store adds it
    (typed as the field is), keeping every record; what the store held is
    read as before, the new field empty."""

    s = Store(tmp_path / "a.db")
    parsed = parse_file(RECORDS)
    rid = s.begin_run(info(), None)
    s.finish_run(rid, OK, exit_code=0, signal=None, stderr_tail="", header=parsed.header,
                 results=parsed.results, flags=[False] * len(parsed.results), noise={"valid": True})
    s.db.execute("ALTER TABLE results DROP COLUMN copy1_gbs")  # a store from before the field
    s.db.execute("ALTER TABLE results DROP COLUMN resolution_us")
    s.db.commit()
    s.close()
    again = Store(tmp_path / "a.db")
    cols = {r[1]: r[2] for r in again.db.execute("PRAGMA table_info(results)")}
    assert cols["copy1_gbs"] == cols["resolution_us"] == "REAL"
    rows = again.result_rows()
    assert len(rows) == len(parsed.results) and all(r["copy1_gbs"] is None for r in rows)
    assert again.version == SCHEMA_VERSION


def test_a_store_made_by_another_process_while_this_one_opened_it_is_not_made_twice(
        tmp_path, monkeypatch):
    """Two `commscope run` opening one new store at once: the one that read
    the version before the other made the tables reads it again under the
    write lock, instead of failing on "table advice already exists"."""
    from commscope.store.schema import SCHEMA_VERSION

    path = tmp_path / "s.db"
    Store(path).close()  # the other process, first to the lock
    seen: list[int] = []
    real = Store.version

    def stale(self):  # this one read the version before that
        seen.append(1)
        return 0 if len(seen) == 1 else real.fget(self)

    monkeypatch.setattr(Store, "version", property(stale))
    s = Store(path)
    assert s.version == SCHEMA_VERSION
    s.close()


def test_a_new_store_appears_whole_never_as_an_empty_file(tmp_path, monkeypatch):
    """SQLite makes the file at connect and writes it at the first commit: a
    reader opening it between the two (`show` while a `run` starts, a check
    polling for a profile) found "an empty file, not a commscope database".
    The store is made beside its path and linked there once whole; one that
    another process put there first is opened, never replaced."""
    path = tmp_path / "s.db"
    real = Store.migrate
    seen: list[tuple[str, bool]] = []

    def migrate(self, *a, **kw):
        seen.append((self.path.name, path.exists()))
        if self.path != path and len(seen) == 1:  # another process makes it meanwhile
            other = Store(path)
            other.begin_sweep(["other"], {})
            other.close()
        return real(self, *a, **kw)

    monkeypatch.setattr(Store, "migrate", migrate)
    s = Store(path)
    made, was_there = seen[0]
    assert made.startswith(".s.db.") and made.endswith(".new") and not was_there, seen
    assert [r["argv"] for r in s.db.execute("SELECT argv FROM sweeps")] == ['["other"]']
    s.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]  # nothing left beside it
    monkeypatch.setattr(Store, "migrate", real)
    fresh = tmp_path / "t.db"
    Store(fresh).close()
    assert Store(fresh, create=False).version == SCHEMA_VERSION
    with pytest.raises(CommscopeError, match="cannot open the store .*: unable to open"):
        Store(tmp_path / "no-such-folder" / "s.db")  # one line, as SQLite says it


def _open(path: str, go) -> None:
    go.wait()
    Store(path).close()


def test_many_processes_opening_one_new_store_at_once_all_open_it(tmp_path):
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    for k in range(12):
        path = str(tmp_path / f"s{k}.db")
        go = ctx.Event()
        ps = [ctx.Process(target=_open, args=(path, go)) for _ in range(4)]
        for p in ps:
            p.start()
        go.set()
        for p in ps:
            p.join(60)
        assert [p.exitcode for p in ps] == [0] * 4, k
        assert Store(path).version > 0


def test_the_switch_to_write_ahead_logging_waits_for_another_process_to_let_go(tmp_path):
    """SQLite answers "database is locked" at once, without waiting, when the
    switch to WAL meets another connection holding the write lock: the store
    asks again."""
    import threading
    import time

    path = tmp_path / "s.db"
    Store(path).close()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA journal_mode=DELETE")  # as a store of an older commscope was
    raw.close()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # holds the write lock, as a store being made does
    threading.Timer(0.3, lambda: other.execute("COMMIT")).start()
    t0 = time.monotonic()
    s = Store(path)
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert time.monotonic() - t0 >= 0.25  # it waited for the reader, and did not fail
    s.close()
    other.close()


def test_every_query_is_the_stores():
    """The store is sealed: no module outside store/ runs SQL or holds a
    connection of its own; what a command, an analysis or the report needs
    to know of the store is a method of Store, named for what it answers."""
    import re

    query = re.compile(r"\.(execute|executemany|executescript|commit)\(|sqlite3\.connect\(")
    src = ROOT / "src" / "commscope"
    outside = [f"{p.relative_to(src)}:{n}" for p in sorted(src.rglob("*.py"))
               if "store" not in p.relative_to(src).parts[:1]
               for n, line in enumerate(p.read_text().splitlines(), 1) if query.search(line)]
    assert outside == [], outside
