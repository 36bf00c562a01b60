"""The progress of a sweep: a tqdm bar with the time left on a terminal, a
plain line per finished job everywhere else (a pipe, a log, CI), whose
format users' logs and these tests read."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import time

import pytest

from commscope.measure.progress import Progress

LINE = re.compile(r"^\[(\d+)/(\d+)\] (.+?): (\w+)(.*)$")  # done/total, job, status, note
# what a tqdm bar draws: a percentage and the bracket of elapsed<remaining, rate
BAR = re.compile(r"\d+%\|.*\| \d+/\d+ \[\d\d:\d\d<(\d\d:\d\d|\?), ")


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal 100 columns wide: (master, slave)."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    return master, slave


def _drain(master: int, proc: subprocess.Popen | None = None, timeout: float = 120) -> bytes:
    """Everything written to the terminal, until the process ends (or, with
    none, until nothing more comes)."""
    got = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            got += chunk
        elif proc is None or proc.poll() is not None:
            break
    return got


# -- the class itself, without MPI ------------------------------------------------------
def test_lines_off_a_terminal_and_a_total_that_grows():
    out = io.StringIO()
    p = Progress(2, stream=out)
    for k in range(2):
        p.start(f"mpich latency np=2 #{k + 1}")
        p.end(f"mpich latency np=2 #{k + 1}", "ok")
    p.total += 1  # measured again at a common window
    p.start("mpich latency np=2 #1 again at window 4, 1")
    p.end("mpich latency np=2 #1 again at window 4, 1", "ok", " (a note)")
    p.close()
    assert out.getvalue() == ("[1/2] mpich latency np=2 #1: ok\n"
                              "[2/2] mpich latency np=2 #2: ok\n"
                              "[3/3] mpich latency np=2 #1 again at window 4, 1: ok (a note)\n")
    quiet = io.StringIO()
    q = Progress(1, stream=quiet, enabled=False)
    q.start("x")
    q.end("x", "ok")
    assert quiet.getvalue() == "" and q.done == 1


def test_a_bar_on_a_terminal_that_follows_the_total():
    master, slave = _terminal()
    try:
        with os.fdopen(slave, "w", encoding="utf-8", closefd=True) as term:
            p = Progress(3, stream=term, name="sweep")
            for k in range(5):
                if k == 1:
                    p.total += 1  # a job added while the bar is drawn
                    assert p._bar is not None and p._bar.total == 4
                if k == 4:
                    p.total += 1  # the bar, closed at 4/4, comes back for the job added
                p.start(f"openmpi bw np=2 #{k + 1}")
                time.sleep(0.05)
                p.end(f"openmpi bw np=2 #{k + 1}", "ok" if k < 4 else "failed")
            assert p._bar is None  # closed when every job is done
            p.close()
            term.flush()
            text = _drain(master).decode()
    finally:
        os.close(master)
    assert BAR.search(text), text
    assert "2/4 [" in text and "4/5 [" in text and "/3 [" in text, text
    assert "openmpi bw np=2 #1" in text  # the current job's label, as the bar's description
    # on a terminal a job that ended well leaves no line: only the one that failed, above
    # the bar, and the phase's one line when it ends
    lines = [x.strip("\r") for x in text.split("\n")]
    shown = [x[x.rindex("\r") + 1:] if "\r" in x else x for x in lines[:-1]]
    assert len(shown) == 2 and shown[0] == "[5/5] openmpi bw np=2 #5: failed", lines
    # the phase's seconds: 0 on a quiet machine, 1 seen beside another test (pytest -n 2)
    assert re.fullmatch(r"sweep: 5 job\(s\), 4 ok, 1 failed \(\d+ s\)", shown[1]), lines


def test_a_diagnosis_trial_that_fails_leaves_no_line_on_a_terminal():
    """make run's first screen had 23 of its 67 lines from trials MPICH
    refused (a forced algorithm with its fallback off): a result of the
    diagnosis, stored and said in its conclusions, not a line above the bar.
    Off a terminal, and with a note, the line stays."""
    master, slave = _terminal()
    try:
        with os.fdopen(slave, "w", encoding="utf-8", closefd=True) as term:
            p = Progress(3, stream=term, failures=False)
            p.start("mpich MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM=brucks")
            p.end("mpich MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM=brucks", "failed")
            p.end("mpich noisy", "ok", " (noisy records flagged)")
            p.end("mpich last", "ok")
            p.close()
            term.flush()
            text = _drain(master).decode()
    finally:
        os.close(master)
    assert "brucks: failed" not in text and "(noisy records flagged)" in text, text
    out = io.StringIO()
    q = Progress(1, stream=out, failures=False)
    q.end("mpich brucks", "failed")
    assert out.getvalue() == "[1/1] mpich brucks: failed\n"


# -- the real command -----------------------------------------------------------------
QUICK = ["--bench", "latency", "--np", "2", "--sizes", "1:4", "--factor", "4", "--repeat", "2",
         "--min-samples", "5", "--time-cap", "0.05", "--min-time", "0.01", "--warmup-time",
         "0.002", "--no-probe", "--no-advise"]


def _argv(db, cores) -> list[str]:
    return [sys.executable, "-m", "commscope.cli", "run", "--no-advise", "--db", str(db), "--mpi",
            sorted(cores)[0], *QUICK]


@pytest.mark.mpi
def test_a_sweep_under_a_pipe_prints_one_plain_line_per_job(tmp_path, cores):
    done = subprocess.run(_argv(tmp_path / "p.db", cores), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout, done.stderr):
        assert "\r" not in stream and "\x1b" not in stream, repr(stream)
    jobs = [m for x in done.stderr.splitlines() if (m := LINE.match(x))]
    assert [(m[1], m[2], m[4]) for m in jobs] == [("1", "2", "ok"), ("2", "2", "ok")], \
        done.stderr
    assert not BAR.search(done.stderr)


@pytest.mark.mpi
def test_a_sweep_on_a_terminal_draws_a_bar_with_the_time_left(tmp_path, cores):
    master, slave = _terminal()
    try:
        proc = subprocess.Popen(_argv(tmp_path / "t.db", cores), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=slave, close_fds=True)
        os.close(slave)
        text = _drain(master, proc, timeout=300).decode(errors="replace")
        proc.communicate(timeout=60)
    finally:
        os.close(master)
    assert proc.returncode == 0, text
    assert BAR.search(text), repr(text)
    assert "\r" in text  # drawn over itself
    # a job that ended well leaves no line on a terminal (one with a note does: "[2 noisy
    # record(s) flagged]", beside other work); the sweep says what it did, once
    assert not re.search(r"\[\d/2\] [^\r\n]+: ok\r?\n", text), repr(text)
    assert len(re.findall(r"sweep: 2 job\(s\), all ok \(\d+ s\)\r?\n", text)) == 1, repr(text)
