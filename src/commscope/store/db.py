"""The SQLite store: one file, WAL mode, forward migrations keyed by
PRAGMA user_version, and an application id that marks the file as ours."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import CommscopeError
from .config import Configuration, from_stored
from .records import Header, Result, column_type, sql_value, stored_columns
from .schema import MIGRATIONS, SCHEMA_VERSION

APPLICATION_ID = 0x43534350  # "CSCP"
SELECT_KEYS = ("run", "sweep", "mpi", "cluster")  # Store.selection
# What a record row carries of its run and sweep besides its own columns
# (Store.result_rows): each key with the expression that reads it.
RUN_FIELDS = (("mpi_name", "r.mpi_name"), ("mpi_family", "r.mpi_family"),
              ("mpi_version", "r.mpi_version"), ("cluster", "r.cluster"),
              ("hostname", "r.hostname"), ("started_at", "r.started_at"),
              ("run_status", "r.status"), ("oversubscribed", "r.oversubscribed"),
              ("nodes", "coalesce(r.nodes, 1)"), ("config_key", "r.config_key"),
              ("config", "r.config"), ("repetition", "r.repetition"),
              ("sweep_id", "r.sweep_id"), ("sweep_purpose", "w.purpose"), ("trial", "r.trial"),
              ("transport_check", "r.transport_check"))
STORE_MARKS = ("flagged", "narrowed_in")  # the store's own marks on a record


def row_keys() -> tuple[str, ...]:
    """Every key of a record row (Store.result_rows), as a set: the record's
    id and run, its declared fields' columns, the store's marks, and what it
    carries of its run (a row's own order is the table's)."""
    return ("id", "run_id", *(c for _, c, _ in stored_columns()), *STORE_MARKS,
            *(k for k, _ in RUN_FIELDS))


# Run statuses.
OK, FAILED, TIMEOUT, INVALID, RUNNING, RETRIED, SKIPPED = (
    "ok", "failed", "timeout", "invalid", "running", "retried-noisy", "skipped")


def _start_ticks(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (/proc/PID/stat's
    22nd field): with its pid, it names the process, a reused pid not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


OWNER = f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid())}"


def own_process() -> None:
    """In a forked process (a job of `matrix --at-once`): the runs it begins
    are its own, so that they are abandoned if it dies and its parent lives."""
    global OWNER
    OWNER = f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(owner: str | None) -> bool:
    """Whether the process that began a run still runs: False for a run
    stored before owners were (schema 12), True for one of another host."""
    if not owner:
        return False
    host, pid, ticks = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    return pid.isdigit() and _start_ticks(int(pid)) == ticks


def _sidecars(path: Path) -> tuple[Path, ...]:
    """The files SQLite keeps beside a store while it is open."""
    return tuple(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))


def _disk_why(path: Path, exc: Exception) -> str:
    """Why SQLite could not write: a full disk said as such (SQLite says
    "disk I/O error" when the shared-memory file cannot grow)."""
    try:
        st = os.statvfs(path.parent)
        full = st.f_blocks > 0 and st.f_bavail * st.f_frsize < 256 * 1024  # not /proc
    except OSError:
        full = False
    return "the disk holding it is full" if full or "full" in str(exc) else str(exc)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunInfo:
    """Everything known about a job before it runs."""

    plan_key: str
    bench: str
    np: int
    sizes: str
    mpi_name: str
    mpi_family: str
    mpi_version: str
    mpi_identity: str
    cluster: str
    launch_argv: Sequence[str]
    env: dict[str, str]
    machine: dict[str, object]
    options: dict[str, object]
    oversubscribed: bool
    attempt: int = 1
    placement: dict[str, object] | None = None
    config: Configuration | None = None
    repetition: int = 1
    round_pos: int | None = None  # place of the job in its round's order
    # the diagnosis's experiment that ran it (advise/diagnose.py); None: a
    # job the sweep planned
    trial: str | None = None


def _statements(script: str) -> list[str]:
    """A script's statements one by one (sqlite3.complete_statement decides
    where each ends): executescript would commit the transaction they must
    run in first."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out += [buf.strip()] if buf.strip().strip(";").strip() else []
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


class Store:
    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise CommscopeError(f"no commscope database at {self.path}")
        if self.path.exists() and self.path.is_dir():
            raise CommscopeError(f"{self.path} is a directory, not a commscope database")
        if not create and self.path.stat().st_size == 0:  # read-only: never made a store
            raise CommscopeError(f"{self.path} is an empty file, not a commscope database")
        try:
            if not self.path.exists():
                self._make_whole()
            fresh = not self.path.exists() or self.path.stat().st_size == 0
            self.db = sqlite3.connect(str(self.path), timeout=30)
            self.db.row_factory = sqlite3.Row
            self._check_ours(fresh)
            self.db.execute("PRAGMA foreign_keys=ON")
            self._wal()
            self.migrate()
            self._declared_columns()
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", sqlite3.SQLITE_NOTADB) & 0xFF in (
                    sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
                raise CommscopeError(f"{self.path} is not a commscope database ({exc})") from exc
            # a full disk, a read-only one, a failing one: the store is not at fault
            raise CommscopeError(f"cannot open the store {self.path}: "
                                 f"{_disk_why(self.path, exc)}") from exc

    def _make_whole(self) -> None:
        """A new store appears whole or not at all: made beside its path
        (marked, its tables made), then linked into place.  Opened where it
        stands, SQLite would leave an empty file for as long as the first
        transaction takes, which a reader opening it then (`show` while a
        `run` starts, a test polling for a profile) refuses.  The link fails
        where another process put a store there first: that one is opened.
        A file system without hard links gets the store made in place."""
        try:
            fd, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".new",
                                        dir=self.path.parent)
        except OSError:
            return  # no folder, or not ours to write in: SQLite says which, as before
        os.close(fd)
        new = Path(name)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(new, 0o644 & ~mask)  # as SQLite makes a file, not mkstemp's 0600
        try:
            db = sqlite3.connect(str(new), timeout=30)
            try:
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                db.commit()
            finally:
                db.close()
            Store(new).close()  # its tables; the last close folds its log in
            if any(f.exists() for f in _sidecars(new)):
                return  # not folded in: made in place instead, as SQLite does
            try:
                os.link(new, self.path)
            except FileExistsError:
                pass  # another process made it first: that store is the one
            except OSError:  # no hard links here: made in place, as SQLite does
                pass
        finally:
            for f in (new, *_sidecars(new)):
                f.unlink(missing_ok=True)

    def _wal(self, wait_s: float = 30.0) -> None:
        """Write-ahead logging, so that readers never wait on a writer.  The
        switch takes the store alone, and SQLite answers "locked" at once
        rather than waiting while another process has it open (two `run`s
        opening one new store together): asked again until it holds."""
        until = time.monotonic() + wait_s
        while self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > until:
                    raise
                time.sleep(0.01)

    def _check_ours(self, fresh: bool) -> None:
        app = self.db.execute("PRAGMA application_id").fetchone()[0]
        if fresh and app == 0:
            # read again under the write lock: another process making this
            # store at the same moment may have marked it and made tables since
            self.db.execute("BEGIN IMMEDIATE")
            try:
                app = self.db.execute("PRAGMA application_id").fetchone()[0]
                tables = self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if app == 0 and tables == 0:
                    self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    app = APPLICATION_ID
                self.db.execute("COMMIT")
            except BaseException:
                self.db.rollback()
                raise
        if app != APPLICATION_ID:
            raise CommscopeError(f"{self.path} is not a commscope database")

    @property
    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self, target: int = SCHEMA_VERSION) -> None:
        v = self.version
        if v > SCHEMA_VERSION:
            raise CommscopeError(f"{self.path} has schema {v}, newer than this commscope "
                                 f"({SCHEMA_VERSION}); upgrade commscope")
        while v < target:
            # One transaction per step: a failure leaves the previous version.
            # The write lock first, and the version read again under it: two
            # commscope processes opening one new store at once (two `run`s
            # started together) would otherwise both create its tables, and the
            # second fail on "table advice already exists".
            try:
                self.db.execute("BEGIN IMMEDIATE")
                v = self.version
                if v >= target:
                    self.db.execute("COMMIT")
                    break
                for stmt in _statements(MIGRATIONS[v] + f"PRAGMA user_version={v + 1};"):
                    self.db.execute(stmt)
                self.db.execute("COMMIT")
            except sqlite3.Error:
                self.db.rollback()
                raise
            v += 1
            if v == 5:
                self._backfill_configs()

    def _declared_columns(self) -> None:
        """A record field declared (core/harness/fields.h) whose column the results
        table lacks gets it here, under the write lock, so a new field is
        declared in one place: the migrations hold the columns of earlier
        versions, a field added since is added as a store opens."""
        def missing() -> list[tuple[str, str]]:
            have = {r[1] for r in self.db.execute("PRAGMA table_info(results)")}
            return [(c, kind) for _, c, kind in stored_columns() if c not in have]

        if not missing():
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            for c, kind in missing():  # read again under the lock: another may have added it
                self.db.execute(f"ALTER TABLE results ADD COLUMN {c} {column_type(kind)}")
            self.db.execute("COMMIT")
        except sqlite3.Error:
            self.db.rollback()
            raise

    def _backfill_configs(self) -> None:
        """Runs stored before schema 5 get their configuration from what was
        stored then; nothing else of them changes."""
        rows = self.db.execute("SELECT id, mpi_name, mpi_identity, options, cluster, nodes, np, "
                               "placement FROM runs WHERE config_key IS NULL").fetchall()
        with self.tx() as db:
            for r in rows:
                opts = json.loads(r["options"] or "{}")
                place = json.loads(r["placement"] or "{}")
                nodes = place.get("nodes") or r["nodes"] or 1
                cfg = from_stored(r["mpi_name"], r["mpi_identity"], opts, r["cluster"], nodes,
                                  r["np"])
                db.execute("UPDATE runs SET config_key=?, config=? WHERE id=?",
                           (cfg.key, json.dumps(cfg.to_json()), r["id"]))

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction: whole or not at all.  A disk that is full (or
        fails) while it commits is one line; what earlier transactions
        stored stays, and the store opens."""
        try:
            with self.db:
                yield self.db
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            if not ("full" in str(exc) or code is not None and code & 0xFF in (
                    sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)):
                raise
            raise CommscopeError(
                f"cannot write to the store {self.path}: {_disk_why(self.path, exc)}; what it "
                "held before is kept (make room, then `commscope run --resume` goes on with a "
                "sweep)") from exc

    # -- sweeps ---------------------------------------------------------
    def begin_sweep(self, argv: Sequence[str], plan: object, purpose: str | None = None
                    ) -> int:
        """A new sweep; `purpose` marks a search (tune, advise, check) whose
        runs are read as the latest measurement of a configuration only
        where no characterization measured it."""
        with self.tx() as db:
            cur = db.execute("INSERT INTO sweeps(started_at, argv, plan, purpose) "
                             "VALUES (?, ?, ?, ?)",
                             (now_iso(), json.dumps(list(argv)), json.dumps(plan), purpose))
            return int(cur.lastrowid or 0)

    def end_sweep(self, sweep_id: int) -> None:
        with self.tx() as db:
            db.execute("UPDATE sweeps SET finished_at=? WHERE id=?", (now_iso(), sweep_id))

    # -- probes ---------------------------------------------------------
    def add_probe(self, data: Mapping[str, object], hostname: str,
                  sweep_id: int | None = None) -> int:
        with self.tx() as db:
            cur = db.execute("INSERT INTO probes(taken_at, sweep_id, hostname, data) "
                             "VALUES (?, ?, ?, ?)",
                             (now_iso(), sweep_id, hostname, json.dumps(dict(data))))
            return int(cur.lastrowid or 0)

    def probes(self) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM probes ORDER BY id"))

    def probe_for(self, run_ids: Iterable[int]) -> sqlite3.Row | None:
        """The latest probe taken with the sweeps of these runs; failing
        that, the latest probe of the store."""
        ids = sorted(set(run_ids))
        found = None
        if ids:
            marks = ",".join("?" * len(ids))
            found = self.db.execute(
                f"SELECT p.* FROM probes p WHERE p.sweep_id IN (SELECT sweep_id FROM runs "
                f"WHERE id IN ({marks})) ORDER BY p.id DESC LIMIT 1", ids).fetchone()
        return found or self.db.execute("SELECT * FROM probes ORDER BY id DESC LIMIT 1").fetchone()

    # -- advice ---------------------------------------------------------
    def add_advice(self, cause_key: str, fix_json: str, sweep_id: int | None,
                   search_sweep_id: int | None) -> int:
        with self.tx() as db:
            cur = db.execute("INSERT INTO advice(created_at, sweep_id, search_sweep_id, "
                             "cause_key, fix) VALUES (?, ?, ?, ?, ?)",
                             (now_iso(), sweep_id, search_sweep_id, cause_key, fix_json))
            return int(cur.lastrowid or 0)

    def advice(self) -> dict[str, str]:
        """The newest measured fix of each cause (cause key -> its JSON): a
        fix is a fact of the configuration and the limit it names on this
        machine, whichever sweep asked for it."""
        rows = self.db.execute("SELECT cause_key, fix FROM advice ORDER BY id").fetchall()
        return {str(k): str(v) for k, v in rows}

    # -- diagnoses ------------------------------------------------------
    def begin_diagnosis(self, sweep_id: int | None, data: str) -> int:
        with self.tx() as db:
            cur = db.execute("INSERT INTO diagnoses(created_at, sweep_id, status, data) "
                             "VALUES (?, ?, 'running', ?)", (now_iso(), sweep_id, data))
            return int(cur.lastrowid or 0)

    def save_diagnosis(self, diag_id: int, status: str, data: str) -> None:
        """What the diagnosis has established so far (status running), or in
        the end (complete, partial: its budget ran out, interrupted)."""
        done = None if status == "running" else now_iso()
        with self.tx() as db:
            db.execute("UPDATE diagnoses SET status=?, data=?, finished_at=? WHERE id=?",
                       (status, data, done, diag_id))

    def diagnoses(self, sweep_ids: Iterable[int]) -> list[sqlite3.Row]:
        """The newest diagnosis of each of these sweeps, oldest sweep first."""
        ids = sorted(set(sweep_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return self.db.execute(
            f"SELECT * FROM diagnoses WHERE id IN (SELECT max(id) FROM diagnoses WHERE "
            f"sweep_id IN ({marks}) GROUP BY sweep_id) ORDER BY sweep_id", ids).fetchall()

    # -- profiles of programs commscope did not write -----------------------
    def begin_profile(self, fields: Mapping[str, object]) -> int:
        """A profiled program about to start (status running): stored before
        it runs, so that one that hangs or kills its launcher is recorded."""
        cols = ("program", "argv", "cwd", "mpi_name", "mpi_family", "np", "launch_argv",
                "settings", "hostname", "commscope_version", "batch", "round")
        with self.tx() as db:
            cur = db.execute(
                f"INSERT INTO profiles(started_at, status, data, owner, {', '.join(cols)}) "
                f"VALUES (?, 'running', '{{}}', ?, {', '.join('?' * len(cols))})",
                (now_iso(), OWNER, *(fields.get(c) for c in cols)))
            return int(cur.lastrowid or 0)

    def abandon_profiles(self) -> int:
        """Profiles left 'running' by a commscope that was killed (SIGKILL:
        no handler ran) become 'interrupted', said so; one another commscope
        profiles now stays its own (as abandon_running does for runs)."""
        with self.tx() as db:
            gone = [r["id"] for r in db.execute(
                "SELECT id, owner FROM profiles WHERE status='running'")
                if not owner_alive(r["owner"])]
            for pid in gone:
                db.execute("UPDATE profiles SET status='interrupted', stderr_tail="
                           "coalesce(stderr_tail, '') || 'interrupted: commscope stopped while "
                           "the program ran' WHERE id=?", (pid,))
            return len(gone)

    def finish_profile(self, profile_id: int, status: str, *, exit_code: int | None,
                       signal: int | None, wall_s: float, stdout_tail: str, stderr_tail: str,
                       data: str, launch_argv: str) -> None:
        with self.tx() as db:
            db.execute("UPDATE profiles SET status=?, finished_at=?, exit_code=?, signal=?, "
                       "wall_s=?, stdout_tail=?, stderr_tail=?, data=?, launch_argv=? "
                       "WHERE id=?",
                       (status, now_iso(), exit_code, signal, wall_s, stdout_tail,
                        stderr_tail, data, launch_argv, profile_id))

    def set_checked(self, profile_id: int, passed: bool) -> None:
        with self.tx() as db:
            db.execute("UPDATE profiles SET checked=? WHERE id=?", (int(passed), profile_id))

    def set_batch(self, profile_id: int, batch: int) -> None:
        """The first profile of a --verify batch names the batch by its own id."""
        with self.tx() as db:
            db.execute("UPDATE profiles SET batch=? WHERE id=?", (batch, profile_id))

    def profiles(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM profiles ORDER BY id").fetchall()

    # -- runs -----------------------------------------------------------
    def begin_run(self, info: RunInfo, sweep_id: int | None) -> int:
        m = info.machine
        cfg = info.config or from_stored(info.mpi_name, info.mpi_identity, info.options,
                                         info.cluster, (info.placement or {}).get("nodes"),  # type: ignore[arg-type]
                                         info.np)
        with self.tx() as db:
            cur = db.execute(
                """INSERT INTO runs(started_at, status, plan_key, bench, np, sizes, mpi_name,
                   mpi_family, mpi_version, mpi_identity, cluster, hostname, cpu_model, n_cores,
                   kernel, launch_argv, env, commscope_version, git_rev, options, sweep_id,
                   oversubscribed, attempt, placement, config_key, config, repetition,
                   round_pos, trial, owner)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (now_iso(), RUNNING, info.plan_key, info.bench, info.np, info.sizes,
                 info.mpi_name, info.mpi_family, info.mpi_version, info.mpi_identity,
                 info.cluster, m.get("hostname"), m.get("cpu_model"), m.get("n_cores"),
                 m.get("kernel"), json.dumps(list(info.launch_argv)), json.dumps(info.env),
                 m.get("commscope_version"), m.get("git_rev"), json.dumps(info.options),
                 sweep_id, int(info.oversubscribed), info.attempt,
                 json.dumps(info.placement) if info.placement is not None else None,
                 cfg.key, json.dumps(cfg.to_json()),
                 info.repetition, info.round_pos, info.trial, OWNER))
            return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int, status: str, *, exit_code: int | None,
                   signal: int | None, stderr_tail: str, header: Header | None,
                   results: Sequence[Result], flags: Sequence[bool],
                   noise: dict[str, object],
                   transport: dict[str, object] | None = None,
                   footer: dict[str, object] | None = None) -> None:
        """Store a finished job and its records in one transaction."""
        hdr = clock = None
        if header is not None:
            hdr = json.dumps({"schema": header.schema, "mpi_library": header.mpi_library,
                              "np": header.np, "hosts": list(header.hosts),
                              "options": header.options, "argv": list(header.argv),
                              "commscope_version": header.commscope_version,
                              "compiler": header.compiler, "cpus": list(header.cpus),
                              # the protocol limits and settings as the library held them
                              "cvars": header.cvars,
                              **({"path": header.path} if header.path else {})})
            clock = json.dumps({"read_ns": header.clock_read_ns,
                                "quantum_ns": header.clock_quantum_ns})
        floor_end = None
        if footer is not None and isinstance(footer.get("floor_ns"), int | float):
            floor_end = float(footer["floor_ns"])  # type: ignore[arg-type]
        with self.tx() as db:
            nodes = len(set(header.hosts)) if header is not None else None
            db.execute(
                """UPDATE runs SET finished_at=?, status=?, exit_code=?, signal=?,
                   stderr_tail=?, header=?, noise=?, nodes=?, transport_check=?,
                   floor_start_ns=?, floor_end_ns=?, clock=? WHERE id=?""",
                (now_iso(), status, exit_code, signal, stderr_tail, hdr, json.dumps(noise),
                 nodes, json.dumps(transport) if transport is not None else None,
                 header.floor_ns if header is not None else None, floor_end, clock, run_id))
            cols = stored_columns()
            names = ", ".join(c for _, c, _ in cols)
            marks = ",".join("?" * len(cols))
            for r, flagged in zip(results, flags, strict=True):
                db.execute(f"INSERT INTO results(run_id, {names}, flagged) VALUES (?, {marks}, ?)",
                           (run_id, *(sql_value(getattr(r, f), kind) for f, _, kind in cols),
                            int(flagged)))

    def save_fit(self, run_id: int, model: str, params: dict[str, object]) -> None:
        """Fitted model parameters, stored with the run they came from; a newer
        fit of the same model replaces the older one."""
        with self.tx() as db:
            db.execute("DELETE FROM fits WHERE run_id=? AND model=?", (run_id, model))
            db.execute("INSERT INTO fits(run_id, model, created_at, params) VALUES (?,?,?,?)",
                       (run_id, model, now_iso(), json.dumps(params)))

    def fits(self, model: str | None = None) -> list[sqlite3.Row]:
        sql = """SELECT f.*, r.mpi_name, r.bench, r.np, r.cluster, r.nodes FROM fits f
                 JOIN runs r ON r.id = f.run_id"""
        if model:
            return self.db.execute(sql + " WHERE f.model=? ORDER BY f.id", (model,)).fetchall()
        return self.db.execute(sql + " ORDER BY f.id").fetchall()

    def mark_run(self, run_id: int, status: str) -> None:
        with self.tx() as db:
            db.execute("UPDATE runs SET status=? WHERE id=?", (status, run_id))

    def abandon_running(self) -> int:
        """Runs left 'running' by a killed sweep become failures: those whose
        process is gone.  A job another `commscope run` is running into this
        store now stays its own; one run on another host is left as it is
        (its process cannot be seen from here), as is nothing else."""
        with self.tx() as db:
            gone = [r["id"] for r in db.execute("SELECT id, owner FROM runs WHERE status=?",
                                                (RUNNING,)) if not owner_alive(r["owner"])]
            for rid in gone:
                db.execute("UPDATE runs SET status=?, stderr_tail=coalesce(stderr_tail, '') || "
                           "'interrupted: the sweep stopped while this job ran' WHERE id=?",
                           (FAILED, rid))
            return len(gone)

    def narrowed(self, run_id: int, marks: Sequence[tuple[str, int]], again_in: int) -> int:
        """Mark run_id's records of these (benchmark, size) as measured again,
        at a common window, by run again_in: they stay stored, and the
        analysis reads the later ones."""
        with self.tx() as db:
            return sum(db.execute("UPDATE results SET narrowed_in=? WHERE run_id=? AND bench=? "
                                  "AND size_bytes=?", (again_in, run_id, b, s)).rowcount
                       for b, s in marks)

    def has_ok_run(self, plan_key: str) -> bool:
        """Whether a sweep ran this job to the end (a diagnosis's trial of
        the same configuration is not the sweep's job)."""
        row = self.db.execute("SELECT 1 FROM runs WHERE plan_key=? AND status=? AND trial IS "
                              "NULL LIMIT 1", (plan_key, OK)).fetchone()
        return row is not None

    def runs(self, statuses: Sequence[str] | None = None, *, trials: bool = False
             ) -> list[sqlite3.Row]:
        """The stored runs, those a sweep planned (with `trials`, the
        diagnosis's experiments' too)."""
        where = [] if trials else ["trial IS NULL"]
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
        sql = "SELECT * FROM runs" + (f" WHERE {' AND '.join(where)}" if where else "")
        return self.db.execute(sql + " ORDER BY id", tuple(statuses or ())).fetchall()

    def result_rows(self, *, latest: bool = True, run_ids: Sequence[int] | None = None,
                    narrowed: bool = False) -> list[sqlite3.Row]:
        """Results joined with their run.  With latest, per configuration and
        benchmark: every complete repetition of the newest sweep that
        completed one (a failed or partial run never hides an earlier
        complete one); where none ever completed, the newest run, so its
        failure shows.  Records measured again at a common window
        (narrowed_in) only with narrowed.  A diagnosis's trials only where
        their runs are named (run_ids): they are experiments about the
        sweep, not its measurement."""
        where = ["r.status IN ('ok', 'invalid', 'timeout', 'failed')"]
        if not narrowed:
            where.append("x.narrowed_in IS NULL")
        if not run_ids:
            where.append("r.trial IS NULL")
        args: list[object] = []
        if run_ids:
            where.append(f"r.id IN ({','.join('?' * len(run_ids))})")
            args.extend(run_ids)
        sql = f"""SELECT x.*, {", ".join(f"{e} AS {k}" for k, e in RUN_FIELDS)}
                  FROM results x JOIN runs r ON r.id = x.run_id
                  LEFT JOIN sweeps w ON w.id = r.sweep_id
                  WHERE {' AND '.join(where)}
                  ORDER BY x.bench, x.np, r.cluster, x.size_bytes, r.mpi_name, r.id"""
        rows = self.db.execute(sql, tuple(args)).fetchall()
        return rows if run_ids or not latest else pick_latest(rows)

    def selection(self, sel: str) -> list[sqlite3.Row]:
        """The stored records of a selection, one per repetition:
        run=1,2 | sweep=3 | mpi=openmpi | cluster=local; none is an error."""
        key, _, value = sel.partition("=")
        values = [v.strip() for v in value.split(",") if v.strip()]
        if key not in SELECT_KEYS or not values:
            raise CommscopeError(f"bad selection '{sel}' (use run=ID[,ID], sweep=ID, mpi=NAME "
                                 "or cluster=NAME)")
        if key in ("run", "sweep"):
            try:
                ids = [int(v) for v in values]
            except ValueError:
                raise CommscopeError(f"{key} ids must be integers: '{value}'") from None
            if any(not 0 < i < 1 << 63 for i in ids):  # SQLite's integers, and ids start at 1
                raise CommscopeError(f"{key} ids are positive and below 2^63: '{value}'")
            if key == "sweep":  # the runs it planned, not its diagnosis's trials
                marks = ",".join("?" * len(ids))
                ids = [r[0] for r in self.db.execute(
                    f"SELECT id FROM runs WHERE sweep_id IN ({marks}) AND trial IS NULL",
                    ids).fetchall()]
            rows = self.result_rows(run_ids=ids) if ids else []
        else:
            col = "mpi_name" if key == "mpi" else "cluster"
            rows = [r for r in self.result_rows() if r[col] in values]
        if not rows:
            raise CommscopeError(f"no stored results for {sel}")
        return rows

    # -- what the commands, the diagnosis and the report ask besides the records ----------
    def counts(self) -> tuple[int, int]:
        """(records, runs with records) in the whole store."""
        n, runs = self.db.execute(
            "SELECT count(*), count(DISTINCT run_id) FROM results").fetchone()
        return int(n), int(runs)

    def measured_again(self) -> tuple[set[int], set[int]]:
        """(the records measured again at a common window, the runs that
        measured them again: narrowed_in)."""
        rows = self.db.execute(
            "SELECT id, narrowed_in FROM results WHERE narrowed_in IS NOT NULL").fetchall()
        return {int(r[0]) for r in rows}, {int(r[1]) for r in rows}

    def sampling_of(self, run_ids: Sequence[int]) -> sqlite3.Row:
        """The least and most batch and samples, and the narrowest window, of
        these runs' records (b0, b1, s0, s1, w0)."""
        marks = ",".join("?" * len(run_ids))
        return self.db.execute(
            "SELECT min(batch) AS b0, max(batch) AS b1, min(n_samples) AS s0, "
            f"max(n_samples) AS s1, min(window) AS w0 FROM results WHERE run_id IN ({marks})",
            tuple(run_ids)).fetchone()

    def rows_of(self, table: str, ids: Sequence[int], by: str = "id") -> list[sqlite3.Row]:
        """The runs or sweeps with these ids, or the probes of these sweeps
        (by sweep_id), in the order they were stored."""
        if (table, by) not in (("runs", "id"), ("sweeps", "id"), ("probes", "sweep_id")):
            raise ValueError(f"rows_of: no {table} by {by}")
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return self.db.execute(f"SELECT * FROM {table} WHERE {by} IN ({marks}) ORDER BY id",
                               tuple(ids)).fetchall()

    def planned_options(self, config_key: str, sweeps: Sequence[int]) -> str | None:
        """The options (JSON) the newest clean run of a configuration in
        these sweeps (any, where none are named) was planned with."""
        marks = ",".join("?" * len(sweeps))
        row = self.db.execute(
            "SELECT options FROM runs WHERE config_key=? AND trial IS NULL AND status='ok' "
            + (f"AND sweep_id IN ({marks}) " if sweeps else "") + "ORDER BY id DESC LIMIT 1",
            (config_key, *sweeps)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def run_options(self, run_id: int) -> str | None:
        """The options (JSON) a run was planned with."""
        row = self.db.execute("SELECT options FROM runs WHERE id=?", (run_id,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def sweep_of(self, run_id: int) -> int | None:
        row = self.db.execute("SELECT sweep_id FROM runs WHERE id=?", (run_id,)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def has_sweep(self, sweep_id: int) -> bool:
        return self.db.execute("SELECT 1 FROM sweeps WHERE id=?",
                               (sweep_id,)).fetchone() is not None

    def earlier_sweeps(self, sweep_id: int) -> list[int]:
        """The sweeps of measurement (no purpose of their own) before this one."""
        return [int(r[0]) for r in self.db.execute(
            "SELECT id FROM sweeps WHERE id < ? AND purpose IS NULL ORDER BY id", (sweep_id,))]

    def sweep_hosts(self, sweep_id: int | None) -> set[tuple[str, str, str]]:
        """The hosts a sweep's own runs ran on (name, CPU, kernel)."""
        return {(r[0], r[1], r[2]) for r in self.db.execute(
            "SELECT hostname, cpu_model, kernel FROM runs WHERE sweep_id=? AND trial IS NULL",
            (sweep_id,))}

    def clean_local_runs(self, sweeps: Sequence[int]) -> list[int]:
        """The runs of these sweeps that ended cleanly on this machine (no
        trial of a diagnosis)."""
        marks = ",".join("?" * len(sweeps))
        return [int(r[0]) for r in self.db.execute(
            f"SELECT id FROM runs WHERE sweep_id IN ({marks}) AND trial IS NULL "
            "AND status='ok' AND cluster='local'", tuple(sweeps))]

    def last_local_sweep(self) -> int | None:
        """The newest sweep of measurement with a run that ended cleanly on
        this machine."""
        row = self.db.execute(
            "SELECT max(r.sweep_id) FROM runs r JOIN sweeps w ON w.id = r.sweep_id WHERE "
            "w.purpose IS NULL AND r.trial IS NULL AND r.status='ok' AND r.cluster='local'"
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def diagnosed_sweeps(self) -> list[int]:
        return [int(r[0]) for r in self.db.execute(
            "SELECT DISTINCT sweep_id FROM diagnoses WHERE sweep_id IS NOT NULL "
            "ORDER BY sweep_id")]

    def stored_benches(self) -> set[str]:
        """The benchmarks with a record in the store."""
        return {str(x) for (x,) in self.db.execute("SELECT DISTINCT bench FROM results")}

    def stored_mpis(self) -> list[str]:
        """The implementations with a record in the store, by name."""
        return sorted(str(x) for (x,) in self.db.execute(
            "SELECT DISTINCT mpi_name FROM runs r WHERE EXISTS "
            "(SELECT 1 FROM results x WHERE x.run_id = r.id)"))

    def library_of(self, result_id: int) -> sqlite3.Row | None:
        """The family, header (JSON) and version of the run a record is of."""
        return self.db.execute("SELECT r.mpi_family, r.header, r.mpi_version FROM results x "
                               "JOIN runs r ON r.id = x.run_id WHERE x.id = ?",
                               (result_id,)).fetchone()


def pick_latest(rows: Sequence[sqlite3.Row]) -> list[sqlite3.Row]:
    """The rows of the newest complete measurement of each (configuration,
    benchmark): every ok run of the sweep of the newest ok run (that run
    alone when it belongs to no sweep), else the newest run of any
    status, so that a failure shows where nothing ever succeeded.  Runs of
    a search (tune, check: a few sizes around a question) count only for
    a configuration and benchmark no characterization measured; those of
    the advise step never (what they found is stored as advice)."""
    rows = [r for r in rows if r["sweep_purpose"] != "advise"]
    measured = {(r["config_key"], r["bench"]) for r in rows if not _searched(r)}
    rows = [r for r in rows if not _searched(r) or (r["config_key"], r["bench"]) not in measured]
    newest_ok: dict[tuple[str, str], sqlite3.Row] = {}
    newest: dict[tuple[str, str], int] = {}
    for r in rows:
        k = (r["config_key"], r["bench"])
        newest[k] = max(newest.get(k, 0), r["run_id"])
        if r["run_status"] == OK and (k not in newest_ok or r["run_id"] > newest_ok[k]["run_id"]):
            newest_ok[k] = r
    out = []
    for r in rows:
        k = (r["config_key"], r["bench"])
        pick = newest_ok.get(k)
        if pick is None:
            if r["run_id"] == newest[k]:
                out.append(r)
        elif r["run_status"] == OK and (
                r["run_id"] == pick["run_id"]
                or (pick["sweep_id"] is not None and r["sweep_id"] == pick["sweep_id"])):
            out.append(r)
    return out


def _searched(r: sqlite3.Row) -> bool:
    return r["sweep_purpose"] is not None
