"""The SQLite store: one file, WAL mode, forward migrations keyed by
PRAGMA user_version, and an application id that marks the file as ours."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import CommscopeError
from .config import Configuration, from_stored
from .records import Header, Result

APPLICATION_ID = 0x43534350  # "CSCP"

# Each entry upgrades the schema by one version; never edit a released one.
MIGRATIONS: tuple[str, ...] = (
    # 1: runs and their results
    """
    CREATE TABLE runs (
      id INTEGER PRIMARY KEY,
      started_at TEXT NOT NULL,
      finished_at TEXT,
      status TEXT NOT NULL,
      plan_key TEXT NOT NULL,
      bench TEXT NOT NULL,
      np INTEGER NOT NULL,
      sizes TEXT NOT NULL,
      mpi_name TEXT NOT NULL,
      mpi_family TEXT NOT NULL,
      mpi_version TEXT,
      mpi_identity TEXT,
      cluster TEXT NOT NULL DEFAULT 'local',
      hostname TEXT,
      cpu_model TEXT,
      n_cores INTEGER,
      kernel TEXT,
      launch_argv TEXT NOT NULL,
      env TEXT,
      commscope_version TEXT,
      git_rev TEXT,
      exit_code INTEGER,
      signal INTEGER,
      stderr_tail TEXT,
      header TEXT,
      options TEXT
    );
    CREATE INDEX runs_plan_key ON runs(plan_key, status);
    CREATE TABLE results (
      id INTEGER PRIMARY KEY,
      run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      bench TEXT NOT NULL,
      size_bytes INTEGER NOT NULL,
      np INTEGER NOT NULL,
      n_samples INTEGER,
      batch INTEGER,
      n_iters INTEGER,
      median_us REAL, mean_us REAL, min_us REAL, max_us REAL,
      p5_us REAL, p95_us REAL, ci_lo_us REAL, ci_hi_us REAL, ci_us REAL,
      mb_per_s REAL, rate_per_s REAL,
      valid INTEGER NOT NULL,
      error TEXT,
      converged INTEGER,
      stop TEXT,
      raw_us TEXT
    );
    CREATE INDEX results_run ON results(run_id);
    """,
    # 2: sweeps, noise accounting, oversubscription and retry attempts
    """
    CREATE TABLE sweeps (
      id INTEGER PRIMARY KEY,
      started_at TEXT NOT NULL,
      finished_at TEXT,
      argv TEXT,
      plan TEXT
    );
    ALTER TABLE runs ADD COLUMN sweep_id INTEGER REFERENCES sweeps(id);
    ALTER TABLE runs ADD COLUMN oversubscribed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE runs ADD COLUMN noise TEXT;
    ALTER TABLE results ADD COLUMN other_cpu_s REAL;
    ALTER TABLE results ADD COLUMN steal_s REAL;
    ALTER TABLE results ADD COLUMN wall_s REAL;
    ALTER TABLE results ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: collectives (bus bandwidth, rank-average time, root, equivalent sends) and models
    """
    ALTER TABLE results ADD COLUMN busbw_mb_per_s REAL;
    ALTER TABLE results ADD COLUMN mean_rank_avg_us REAL;
    ALTER TABLE results ADD COLUMN root INTEGER;
    ALTER TABLE results ADD COLUMN equiv_sends INTEGER;
    ALTER TABLE results ADD COLUMN equiv_of TEXT;
    ALTER TABLE runs ADD COLUMN nodes INTEGER;
    CREATE TABLE fits (
      id INTEGER PRIMARY KEY,
      run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      model TEXT NOT NULL,
      created_at TEXT NOT NULL,
      params TEXT NOT NULL
    );
    CREATE INDEX fits_run ON fits(run_id, model);
    """,
    # 4: placement (cluster description, nodes x processes per node) and what
    # the node links carried
    """
    ALTER TABLE runs ADD COLUMN placement TEXT;
    ALTER TABLE runs ADD COLUMN transport_check TEXT;
    """,
    # 5: configuration identity (a canonical key and the full configuration),
    # repetitions of a sweep's rounds, the machine's cache-line floor, the
    # clock's resolution and the validation counts of each record
    """
    ALTER TABLE runs ADD COLUMN config_key TEXT;
    ALTER TABLE runs ADD COLUMN config TEXT;
    ALTER TABLE runs ADD COLUMN repetition INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE runs ADD COLUMN round_pos INTEGER;
    ALTER TABLE runs ADD COLUMN floor_start_ns REAL;
    ALTER TABLE runs ADD COLUMN floor_end_ns REAL;
    ALTER TABLE runs ADD COLUMN clock TEXT;
    CREATE INDEX runs_config ON runs(config_key, bench, status);
    ALTER TABLE results ADD COLUMN floor_ns REAL;
    ALTER TABLE results ADD COLUMN resolution_us REAL;
    ALTER TABLE results ADD COLUMN validations INTEGER;
    ALTER TABLE results ADD COLUMN checked_msgs INTEGER;
    ALTER TABLE results ADD COLUMN window INTEGER;
    ALTER TABLE results ADD COLUMN primary_figure TEXT;
    ALTER TABLE results ADD COLUMN size_param TEXT;
    ALTER TABLE results ADD COLUMN params TEXT;
    ALTER TABLE results ADD COLUMN phases TEXT;
    """,
    # 6: applications: the copy bandwidth measured in the same job, which a
    # memory-bound phase's bytes per second are held against
    """
    ALTER TABLE results ADD COLUMN copy_gbs REAL;
    """,
    # 7: the machine probe (core-to-core, copy, process_vm_readv, pages, NUMA,
    # clock), standalone or taken at the start of a sweep
    """
    CREATE TABLE probes (
      id INTEGER PRIMARY KEY,
      taken_at TEXT NOT NULL,
      sweep_id INTEGER REFERENCES sweeps(id),
      hostname TEXT,
      data TEXT NOT NULL
    );
    CREATE INDEX probes_sweep ON probes(sweep_id);
    """,
    # 8: fixes measured for the causes a sweep's conclusions named (advise.py):
    # the sweep they explain, the search that measured them, the verdict; and
    # what a sweep was for (NULL: a characterization; tune, advise, check: a
    # search whose default runs must not stand in for the characterization)
    """
    CREATE TABLE advice (
      id INTEGER PRIMARY KEY,
      created_at TEXT NOT NULL,
      sweep_id INTEGER REFERENCES sweeps(id),
      search_sweep_id INTEGER REFERENCES sweeps(id),
      cause_key TEXT NOT NULL,
      fix TEXT NOT NULL
    );
    CREATE INDEX advice_cause ON advice(cause_key);
    ALTER TABLE sweeps ADD COLUMN purpose TEXT;
    """,
    # 9: applications: the copy bandwidth of rank 0 alone (a root's copies)
    """
    ALTER TABLE results ADD COLUMN copy1_gbs REAL;
    """,
    # 10: a bw/bibw record measured again in the same sweep at the window
    # another configuration was narrowed to (runner.equal_windows): the run
    # that did; the record stays, the analysis reads the later one
    """
    ALTER TABLE results ADD COLUMN narrowed_in INTEGER REFERENCES runs(id);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

# Run statuses.
OK, FAILED, TIMEOUT, INVALID, RUNNING, RETRIED, SKIPPED = (
    "ok", "failed", "timeout", "invalid", "running", "retried-noisy", "skipped")


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


class Store:
    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise CommscopeError(f"no commscope database at {self.path}")
        if self.path.exists() and self.path.is_dir():
            raise CommscopeError(f"{self.path} is a directory, not a commscope database")
        if not create and self.path.stat().st_size == 0:  # read-only: never made a store
            raise CommscopeError(f"{self.path} is an empty file, not a commscope database")
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30)
            self.db.row_factory = sqlite3.Row
            self._check_ours(fresh)
            self.db.execute("PRAGMA foreign_keys=ON")
            if fresh or self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self.db.execute("PRAGMA journal_mode=WAL")
            self.migrate()
        except sqlite3.DatabaseError as exc:
            raise CommscopeError(f"{self.path} is not a commscope database ({exc})") from exc

    def _check_ours(self, fresh: bool) -> None:
        app = self.db.execute("PRAGMA application_id").fetchone()[0]
        if fresh and app == 0:
            tables = self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables == 0:
                self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                return
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
            try:
                self.db.executescript("BEGIN;" + MIGRATIONS[v] + f"PRAGMA user_version={v + 1};"
                                      "COMMIT;")
            except sqlite3.Error:
                self.db.rollback()
                raise
            v += 1
            if v == 5:
                self._backfill_configs()

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
        with self.db:
            yield self.db

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
                   round_pos)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (now_iso(), RUNNING, info.plan_key, info.bench, info.np, info.sizes,
                 info.mpi_name, info.mpi_family, info.mpi_version, info.mpi_identity,
                 info.cluster, m.get("hostname"), m.get("cpu_model"), m.get("n_cores"),
                 m.get("kernel"), json.dumps(list(info.launch_argv)), json.dumps(info.env),
                 m.get("commscope_version"), m.get("git_rev"), json.dumps(info.options),
                 sweep_id, int(info.oversubscribed), info.attempt,
                 json.dumps(info.placement) if info.placement is not None else None,
                 cfg.key, json.dumps(cfg.to_json()),
                 info.repetition, info.round_pos))
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
                              "cvars": header.cvars})
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
            for r, flagged in zip(results, flags, strict=True):
                db.execute(
                    """INSERT INTO results(run_id, bench, size_bytes, np, n_samples, batch,
                       n_iters, median_us, mean_us, min_us, max_us, p5_us, p95_us, ci_lo_us,
                       ci_hi_us, ci_us, mb_per_s, rate_per_s, valid, error, converged, stop,
                       raw_us, other_cpu_s, steal_s, wall_s, flagged, busbw_mb_per_s,
                       mean_rank_avg_us, root, equiv_sends, equiv_of, floor_ns, resolution_us,
                       validations, checked_msgs, window, primary_figure, size_param, params,
                       phases, copy_gbs, copy1_gbs)
                       VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,
                               ?,?,?,?,?,?,?,?,?,?,?)""",
                    (run_id, r.bench, r.size_bytes, r.np, r.n_samples, r.batch, r.n_iters,
                     r.median_us, r.mean_us, r.min_us, r.max_us, r.p5_us, r.p95_us, r.ci_lo_us,
                     r.ci_hi_us, r.ci_us, r.mb_per_s, r.rate_per_s, int(r.valid), r.error,
                     int(r.converged), r.stop,
                     json.dumps(list(r.raw_us)) if r.raw_us is not None else None,
                     r.other_cpu_s, r.steal_s, r.wall_s, int(flagged), r.busbw_mb_per_s,
                     r.mean_rank_avg_us, r.root, r.equiv_sends, r.equiv_of, r.floor_ns,
                     r.resolution_us, r.validations, r.checked_msgs, r.window, r.primary,
                     r.size_param, r.params,
                     json.dumps(r.phases) if r.phases is not None else None, r.copy_gbs,
                     r.copy1_gbs))

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
        """Runs left 'running' by a killed sweep become failures."""
        with self.tx() as db:
            cur = db.execute("UPDATE runs SET status=?, stderr_tail=coalesce(stderr_tail, '') || "
                             "'interrupted: the sweep stopped while this job ran' "
                             "WHERE status=?", (FAILED, RUNNING))
            return cur.rowcount

    def narrowed(self, run_id: int, marks: Sequence[tuple[str, int]], again_in: int) -> int:
        """Mark run_id's records of these (benchmark, size) as measured again,
        at a common window, by run again_in: they stay stored, and the
        analysis reads the later ones."""
        with self.tx() as db:
            return sum(db.execute("UPDATE results SET narrowed_in=? WHERE run_id=? AND bench=? "
                                  "AND size_bytes=?", (again_in, run_id, b, s)).rowcount
                       for b, s in marks)

    def has_ok_run(self, plan_key: str) -> bool:
        row = self.db.execute("SELECT 1 FROM runs WHERE plan_key=? AND status=? LIMIT 1",
                              (plan_key, OK)).fetchone()
        return row is not None

    def runs(self, statuses: Sequence[str] | None = None) -> list[sqlite3.Row]:
        if statuses:
            marks = ",".join("?" * len(statuses))
            return self.db.execute(f"SELECT * FROM runs WHERE status IN ({marks}) ORDER BY id",
                                   tuple(statuses)).fetchall()
        return self.db.execute("SELECT * FROM runs ORDER BY id").fetchall()

    def result_rows(self, *, latest: bool = True, run_ids: Sequence[int] | None = None,
                    narrowed: bool = False) -> list[sqlite3.Row]:
        """Results joined with their run.  With latest, per configuration and
        benchmark: every complete repetition of the newest sweep that
        completed one (a failed or partial run never hides an earlier
        complete one); where none ever completed, the newest run, so its
        failure shows.  Records measured again at a common window
        (narrowed_in) only with narrowed."""
        where = ["r.status IN ('ok', 'invalid', 'timeout', 'failed')"]
        if not narrowed:
            where.append("x.narrowed_in IS NULL")
        args: list[object] = []
        if run_ids:
            where.append(f"r.id IN ({','.join('?' * len(run_ids))})")
            args.extend(run_ids)
        sql = f"""SELECT x.*, r.mpi_name, r.mpi_family, r.mpi_version, r.cluster,
                  r.hostname, r.started_at, r.status AS run_status, r.oversubscribed,
                  coalesce(r.nodes, 1) AS nodes, r.config_key, r.config, r.repetition,
                  r.sweep_id, w.purpose AS sweep_purpose
                  FROM results x JOIN runs r ON r.id = x.run_id
                  LEFT JOIN sweeps w ON w.id = r.sweep_id
                  WHERE {' AND '.join(where)}
                  ORDER BY x.bench, x.np, r.cluster, x.size_bytes, r.mpi_name, r.id"""
        rows = self.db.execute(sql, tuple(args)).fetchall()
        return rows if run_ids or not latest else pick_latest(rows)


def pick_latest(rows: Sequence[sqlite3.Row]) -> list[sqlite3.Row]:
    """The rows of the newest complete measurement of each (configuration,
    benchmark): every ok run of the sweep of the newest ok run (that run
    alone when it belongs to no sweep), else the newest run of any
    status, so that a failure shows where nothing ever succeeded.  Runs of
    a search (tune, check: a few sizes around a question) count only for
    a configuration and benchmark no characterization measured; those of
    the advise step never (what they found is stored as advice)."""
    rows = [r for r in rows if "sweep_purpose" not in r.keys() or r["sweep_purpose"] != "advise"]
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
    return "sweep_purpose" in r.keys() and r["sweep_purpose"] is not None
