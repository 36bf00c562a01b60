"""The store's schema, as the migrations that built it: one step a version,
each applied in its own transaction (db.Store.migrate)."""

from __future__ import annotations

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
    # 11: the diagnosis after a sweep (advise/diagnose.py): its experiments'
    # runs stay in the sweep they diagnose, marked with the experiment that
    # ran them (trial), so that a sweep's own runs are still one per planned
    # job and `sweep=N` names the Nth `commscope run`; and what it concluded,
    # as it went (status running, then complete, partial or interrupted)
    """
    ALTER TABLE runs ADD COLUMN trial TEXT;
    CREATE TABLE diagnoses (
      id INTEGER PRIMARY KEY,
      created_at TEXT NOT NULL,
      finished_at TEXT,
      sweep_id INTEGER REFERENCES sweeps(id),
      status TEXT NOT NULL,
      data TEXT NOT NULL
    );
    CREATE INDEX diagnoses_sweep ON diagnoses(sweep_id);
    """,
    # 12: the process running a job (host, pid, its start time): a sweep that
    # starts abandons only the jobs whose process is gone, never those of
    # another `commscope run` writing into the same store at the same time
    """
    ALTER TABLE runs ADD COLUMN owner TEXT;
    """,
    # 13: a program commscope did not write, profiled (`commscope profile`):
    # how it was run, how it ended, and per rank what its MPI calls took
    # (measure/profile.py); data is the ranks' own files, as written.  A
    # --verify batch (settings files against the defaults, in rounds) shares
    # the id of its first profile; checked: the user's --check passed (1) or not
    """
    CREATE TABLE profiles (
      id INTEGER PRIMARY KEY,
      started_at TEXT NOT NULL,
      finished_at TEXT,
      status TEXT NOT NULL,
      program TEXT NOT NULL,
      argv TEXT NOT NULL,
      cwd TEXT NOT NULL,
      mpi_name TEXT NOT NULL,
      mpi_family TEXT NOT NULL,
      np INTEGER NOT NULL,
      launch_argv TEXT NOT NULL,
      settings TEXT,
      exit_code INTEGER,
      signal INTEGER,
      wall_s REAL,
      stdout_tail TEXT,
      stderr_tail TEXT,
      hostname TEXT,
      commscope_version TEXT,
      batch INTEGER,
      round INTEGER,
      checked INTEGER,
      data TEXT NOT NULL
    );
    """,
    # 14: the process that profiles a program, as runs have it (12): a profile
    # left 'running' by a commscope killed with SIGKILL is told from one that runs
    """
    ALTER TABLE profiles ADD COLUMN owner TEXT;
    """,
)


SCHEMA_VERSION = len(MIGRATIONS)
