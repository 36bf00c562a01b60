"""A hung job is killed at its timeout with nothing left behind; a crashed
rank is a stored failure and the sweep goes on; bad data is caught."""

from __future__ import annotations

import sys
import time
from datetime import datetime

import pytest

from commscope import cli
from commscope.measure.procs import family, run_bounded
from commscope.store.db import Store
from tests.conftest import mpi_processes, shm_left

pytestmark = pytest.mark.mpi
FAST = ["--sizes", "1:256", "--factor", "4", "--min-samples", "5", "--time-cap", "0.1",
        "--min-time", "0.01", "--quiet"]


def _shm() -> set[str]:
    import os

    return set(os.listdir("/dev/shm"))


def test_hang_is_killed_at_timeout_and_measured_sizes_are_kept(tmp_path, cores):
    db = tmp_path / "hang.db"
    shm_before = _shm()
    t0 = time.monotonic()
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "latency", "--inject", "hang@64",
                   "--timeout", "4", *[x for m in cores for x in ("--mpi", m)], *FAST])
    elapsed = time.monotonic() - t0
    assert rc == 1
    assert elapsed < len(cores) * 4 + 20
    store = Store(db)
    runs = store.runs()
    assert [r["status"] for r in runs] == ["timeout"] * len(cores)  # the sweep went on
    assert all("timeout" in r["stderr_tail"] for r in runs)
    kept = {(r["mpi_name"], r["size_bytes"]) for r in store.result_rows()}
    assert kept == {(m, s) for m in cores for s in (1, 4, 16)}
    assert mpi_processes() == []
    assert shm_left(shm_before) == set(), "the killed job's shared memory was left behind"


def test_crashed_rank_is_a_failure_and_the_sweep_continues(tmp_path, cores):
    db = tmp_path / "crash.db"
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "latency,bw", "--inject", "crash@64",
                   "--timeout", "30", *[x for m in cores for x in ("--mpi", m)], *FAST])
    assert rc == 1
    runs = Store(db).runs()
    assert len(runs) == len(cores)  # latency and bw in one launch per implementation
    for r in runs:
        # a crash is a failure found when it happens, not a hang that the
        # timeout had to end
        assert r["status"] == "failed", dict(r)
        assert r["exit_code"] != 0 or r["signal"] is not None
        assert "timeout" not in r["stderr_tail"]
        started = datetime.fromisoformat(r["started_at"])
        assert (datetime.fromisoformat(r["finished_at"]) - started).total_seconds() < 25
    assert mpi_processes() == []


def test_corrupted_data_fails_the_record_loudly(tmp_path, cores, capsys):
    db = tmp_path / "bad.db"
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "latency", "--inject", "corrupt@16",
                   *[x for m in cores for x in ("--mpi", m)], *FAST])
    assert rc == 1
    store = Store(db)
    assert {r["status"] for r in store.runs()} == {"invalid"}
    bad = [r for r in store.result_rows() if not r["valid"]]
    assert {r["size_bytes"] for r in bad} == {16}
    assert all("expected" in r["error"] for r in bad)
    assert "invalid" in capsys.readouterr().err


def test_run_bounded_kills_escaped_descendants(tmp_path):
    """A child in a new session and an orphaned grandchild are still found."""
    script = ("import os, subprocess, sys, time\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
              " start_new_session=True)\n"
              "if os.fork() == 0:\n"
              "    if os.fork() == 0: time.sleep(300)\n"
              "    os._exit(0)\n"
              "time.sleep(300)\n")
    out = run_bounded([sys.executable, "-c", script], timeout_s=2, env={}, cwd=str(tmp_path),
                      stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    assert out.timed_out
    time.sleep(0.2)
    left = [p for p in family(0) if _cmd(p).find("time.sleep(300)") >= 0]
    assert left == []


def test_ctrl_c_while_a_job_starts_kills_the_job(tmp_path, monkeypatch):
    """Ctrl-C arriving inside Popen (the diagnosis's store marks a job
    running just before starting it, which is when a user's interrupt
    often comes) is held until the job has started, then kills it."""
    import os
    import signal
    import subprocess

    started: list[int] = []
    real = subprocess.Popen

    class Interrupted(real):  # type: ignore[misc,valid-type]
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            started.append(self.pid)
            os.kill(os.getpid(), signal.SIGINT)  # while Popen still runs
            time.sleep(0.2)

    monkeypatch.setattr(subprocess, "Popen", Interrupted)
    # Ctrl-C's own disposition: a suite started in the background (`make test &`, the busy
    # runs) hands SIG_IGN down, and an ignored signal stays ignored (the next test)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bounded(["sleep", "30"], timeout_s=60, env={}, cwd=str(tmp_path),
                        stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    finally:
        signal.signal(signal.SIGINT, old)
    (pid,) = started
    try:
        os.kill(pid, 0)
        alive = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        alive = False
    assert not alive, f"the job's launcher {pid} outlived the interrupt"


def test_ctrl_c_while_a_job_fails_to_start_is_not_lost(tmp_path, monkeypatch):
    """Held while Popen runs, a Ctrl-C must still end the run where Popen
    then fails (the launcher missing): a sweep would otherwise record the
    failure and go on to its next job."""
    import os
    import signal
    import subprocess

    def failing(*a, **kw):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        raise FileNotFoundError(2, "No such file or directory", a[0][0])

    monkeypatch.setattr(subprocess, "Popen", failing)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bounded(["no-such-launcher"], timeout_s=60, env={}, cwd=str(tmp_path),
                        stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    finally:
        signal.signal(signal.SIGINT, old)


def test_an_ignored_ctrl_c_stays_ignored_in_the_job_too(tmp_path):
    """A suite or a script started in the background ignores SIGINT: holding
    it while a job starts must not hand the job a handler it did not have."""
    import signal

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        out = run_bounded([sys.executable, "-c", "import signal; print(signal.getsignal("
                           "signal.SIGINT) == signal.SIG_IGN)"], timeout_s=60, env={},
                          cwd=str(tmp_path), stdout_path=tmp_path / "o",
                          stderr_path=tmp_path / "e")
    finally:
        signal.signal(signal.SIGINT, old)
    assert out.exit_code == 0 and (tmp_path / "o").read_text().strip() == "True", (
        (tmp_path / "e").read_text())


def test_the_runners_own_children_are_not_a_jobs_leftovers(tmp_path):
    """Daemons the caller started (a test Slurm, say) outlive every job."""
    import subprocess

    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(302)"])
    try:
        for timeout in (30, 0.3):
            out = run_bounded([sys.executable, "-c", "import time; time.sleep(1)"],
                              timeout_s=timeout, env={}, cwd=str(tmp_path),
                              stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
            assert out.leftovers == 0
            assert daemon.poll() is None
    finally:
        daemon.kill()
        daemon.wait()


def test_leftovers_after_a_clean_exit_are_killed(tmp_path):
    script = ("import subprocess, sys\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(301)'])\n")
    out = run_bounded([sys.executable, "-c", script], timeout_s=30, env={}, cwd=str(tmp_path),
                      stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    assert not out.timed_out and out.exit_code == 0 and out.leftovers == 1
    time.sleep(0.2)
    assert not [p for p in family(0) if "time.sleep(301)" in _cmd(p)]


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_hang_after_the_last_record_costs_the_grace_not_the_timeout(tmp_path, cores,
                                                                    monkeypatch):
    """A job that wrote every record and then never exits (as Debian's MPICH
    over UCX can in MPI_Finalize) is killed soon after its footer, kept,
    and shown as hung at exit."""
    from commscope.measure import runner

    monkeypatch.setattr(runner, "EXIT_GRACE_S", 2.0)
    db = tmp_path / "exit.db"
    t0 = time.monotonic()
    rc = cli.main(["run", "--no-advise",
                   "--db", str(db), "--bench", "latency", "--inject", "hang@exit",
                   "--timeout", "60", *[x for m in cores for x in ("--mpi", m)], *FAST])
    assert rc == 1
    assert time.monotonic() - t0 < len(cores) * 30
    store = Store(db)
    for r in store.runs():
        assert r["status"] == "timeout"
        assert "hung in MPI_Finalize" in r["stderr_tail"]
    kept = {(r["mpi_name"], r["size_bytes"]) for r in store.result_rows()}
    assert kept == {(m, s) for m in cores for s in (1, 4, 16, 64, 256)}
    assert mpi_processes() == []


def test_leftovers_are_this_sessions_own_not_another_workers(tmp_path):
    """mpi_processes, which the tests above assert empty, counts what this
    session's jobs left (their environment holds its cache), not a job of
    another session beside it (a second pytest worker): orphans of both,
    named as a rank is, run here; only ours is listed."""
    import os
    import shutil
    import subprocess

    from commscope.measure.procs import become_subreaper

    # as every worker is once it ran a job (runner.run_bounded): orphans come to it
    become_subreaper()
    fake = tmp_path / "cs-core"
    shutil.copy("/bin/sleep", fake)
    try:
        for cache, secs in ((os.environ["COMMSCOPE_CACHE"], "41"), ("/elsewhere", "42")):
            subprocess.run(["sh", "-c", f"'{fake}' {secs} >/dev/null 2>&1 &"], check=True,
                           env={**os.environ, "COMMSCOPE_CACHE": cache})
        time.sleep(0.3)
        left = mpi_processes()
        assert len(left) == 1 and left[0].split()[1] == "cs-core", left
        with open(f"/proc/{left[0].split()[0]}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[1] == b"41"
    finally:
        subprocess.run(["pkill", "-f", str(fake)], check=False)
        time.sleep(0.2)
        mpi_processes()  # collects the adopted one


def test_shared_memory_left_is_what_no_live_process_maps():
    """shm_left, which the hang test asserts empty, counts a file in /dev/shm
    nobody maps (a killed job's segment), not one a live process of another
    session maps (a second pytest worker's running job)."""
    import os
    import subprocess

    before = _shm()
    left, held = f"/dev/shm/cs-test-left-{os.getpid()}", f"/dev/shm/cs-test-held-{os.getpid()}"
    for path in (left, held):
        with open(path, "wb") as f:
            f.write(b"\0" * 4096)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import mmap, sys, time\n"
                               f"f = open({held!r}, 'r+b'); m = mmap.mmap(f.fileno(), 4096)\n"
                               "print('mapped', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "mapped"
        assert shm_left(before) == {os.path.basename(left)}
    finally:
        holder.kill()
        holder.wait()
        for path in (left, held):
            os.unlink(path)


def test_reaping_adopted_orphans_leaves_the_callers_own_children_alone():
    """As a subreaper commscope collects the orphans its jobs leave (each job
    runs in a session of its own, and so do they), never a child its caller
    started and waits for: `cluster down` killed a test's `sleep` inside a
    node, the next command's reaping took its status, and its Popen read 0
    for a process killed (a busy run, two tests at a time)."""
    import os
    import signal
    import subprocess

    from commscope.measure.procs import become_subreaper, reap_adopted

    become_subreaper()
    own = subprocess.Popen(["sleep", "30"])
    # a job's orphan: its parent gone, adopted here, in the job's session
    subprocess.run(["sh", "-c", "sleep 0.2 & exit 0"], start_new_session=True, check=True)
    own.send_signal(signal.SIGKILL)
    time.sleep(0.6)

    def ended_orphans() -> list[int]:
        out = []
        for e in filter(str.isdigit, os.listdir("/proc")):
            try:
                data = open(f"/proc/{e}/stat").read()
            except OSError:
                continue
            state, ppid, _, sid = data[data.rfind(")") + 2:].split()[:4]
            if state == "Z" and int(ppid) == os.getpid() and int(sid) != os.getsid(0):
                out.append(int(e))
        return out

    assert ended_orphans(), "the orphan was not adopted: nothing to collect"
    reap_adopted()
    assert ended_orphans() == []
    assert own.wait(timeout=5) == -signal.SIGKILL  # the caller's to read, not taken
