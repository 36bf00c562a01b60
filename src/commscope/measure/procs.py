"""Running a job so that nothing it starts can outlive it.

The job starts in a new session; the runner is a child subreaper, so ranks
orphaned by a dying launcher are re-parented to us rather than to init.
On timeout, crash or normal exit, every process of the session, of its
process group and below the launcher is killed and reaped."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
SIGKILL_WAITS_S = (10.0, 20.0)  # SIGKILL, wait; SIGKILL again, wait; then give up


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - non-Linux
        return False


def _fields(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) of a process, zombies included, or None
    once it is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the fields after "(comm)": state ppid pgrp session ...
    state, ppid, pgrp, sid = data[data.rfind(")") + 2:].split()[:4]
    return state, int(ppid), int(pgrp), int(sid)


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgrp, session) of a live process, or None once it is gone."""
    f = _fields(pid)
    return None if f is None or f[0] in ("Z", "X") else f[1:]


def _table() -> dict[int, tuple[int, int, int]]:
    """(ppid, pgrp, session) of every live process."""
    table: dict[int, tuple[int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st:
                table[int(entry)] = st
    return table


def children() -> set[int]:
    """Our own live children (before a job starts: not the job's)."""
    me = os.getpid()
    return {pid for pid, (ppid, _, _) in _table().items() if ppid == me}


def family(leader: int, exclude: frozenset[int] = frozenset()) -> set[int]:
    """Live processes in the leader's session or group, or descended from it
    (or adopted by us after their parent died).  `exclude`: our children
    that were there before the job, and their descendants."""
    me = os.getpid()
    table = _table()
    found = {pid for pid, (_, pgrp, sid) in table.items() if sid == leader or pgrp == leader}
    if leader in table:
        found.add(leader)
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _, _) in table.items():
            if pid in exclude or pid in found or pid == me:
                continue
            if ppid in found or ppid == me:
                found.add(pid)
                grew = True
    found.discard(me)
    return found


def reap_adopted() -> None:
    """Collect exit statuses of orphans we adopted as subreaper: our ended
    children of another session than ours (a job runs in a session of its
    own, and so do its orphans).  Not waitpid(-1): that took the status of
    a child the caller had started itself and waits for (a test's `sleep`
    inside an emulated node, killed by `cluster down`: its Popen then read
    0 for a process killed)."""
    me, session = os.getpid(), os.getsid(0)
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        f = _fields(pid)
        if f is not None and f[0] == "Z" and f[1] == me and f[3] != session:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def shm_files(pids: set[int]) -> set[str]:
    """The /dev/shm files these processes have mapped (MPI shared-memory
    segments): a killed rank cannot remove its own."""
    out: set[str] = set()
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        for line in maps.splitlines():
            path = line.split(maxsplit=5)[5] if len(line.split(maxsplit=5)) == 6 else ""
            if path.startswith("/dev/shm/") and not path.endswith(" (deleted)"):
                out.add(path)
    return out


def kill_family(leader: int, grace_s: float = 2.0,
                exclude: frozenset[int] = frozenset()) -> list[int]:
    """SIGTERM, then SIGKILL, everything in the leader's family, then remove
    the shared-memory files they had mapped.  Returns the pids killed."""
    segments = shm_files(family(leader, exclude))
    killed: list[int] = []
    # A SIGKILLed process still has to leave the kernel (unmap its memory,
    # finish a copy), which under load can take seconds.  Waiting for it
    # matters, since once we exit its zombie is no longer ours to reap.
    for sig, wait in ((signal.SIGTERM, grace_s),
                      *((signal.SIGKILL, w) for w in SIGKILL_WAITS_S)):
        pids = family(leader, exclude)
        if not pids:
            break
        killed.extend(p for p in pids if p not in killed)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            os.killpg(leader, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            reap_adopted()
            if not family(leader, exclude):
                break
            time.sleep(0.05)
    reap_adopted()
    for path in segments:
        try:
            os.unlink(path)
        except OSError:
            pass  # removed by MPI itself, or not ours to remove
    return killed


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # None when killed
    signal: int | None
    timed_out: bool
    wall_s: float
    cpu_s: float  # CPU used by the job's processes (reaped children)
    leftovers: int  # processes still alive after the launcher exited
    hung_at_exit: bool = False  # finished its work, then did not exit within the grace
    survivors: int = 0  # processes still alive after every kill: not ours to reap now


class _Deferred:
    """Ctrl-C or SIGTERM while a job starts, held until it has started.
    Raised inside Popen (after the fork, while it waits for the exec), the
    interrupt lost the Popen object and with it the launcher, which ran on
    in a session of its own after commscope had ended (the interrupted
    diagnosis's test found an `mpirun` left so once under load: the store
    marks a job running just before starting it, which is when the test
    interrupts).  `deliver()` raises it where the job is ours to kill."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.got: list[int] = []
        self.old: dict[int, object] = {}

    def __enter__(self) -> _Deferred:
        import threading

        if threading.current_thread() is threading.main_thread():  # only it takes signals
            for s in self.SIGNALS:  # one ignored stays ignored, in the job too
                if signal.getsignal(s) not in (signal.SIG_IGN, None):
                    self.old[s] = signal.signal(s, lambda n, _f: self.got.append(n))
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        for s, h in self.old.items():
            signal.signal(s, h)  # type: ignore[arg-type]
        if exc_type is not None:  # the job did not start: the interrupt still ends the run
            self.deliver()

    def deliver(self) -> None:
        if self.got:
            signal.raise_signal(self.got[0])


def _wait(proc: subprocess.Popen, timeout_s: float, finished: Callable[[], bool] | None,
          exit_grace_s: float) -> tuple[bool, bool]:
    """Wait for the launcher to exit: (timed out, hung after finishing).
    Once `finished()` says the job's work is complete, it gets exit_grace_s
    to exit: a hang in MPI_Finalize costs that, not the whole timeout."""
    deadline = time.monotonic() + timeout_s
    done_at: float | None = None
    while True:
        now = time.monotonic()
        if done_at is None and finished is not None and finished():
            done_at = now
            deadline = min(deadline, now + exit_grace_s)
        left = deadline - now
        if left <= 0:
            return True, done_at is not None
        try:
            proc.wait(timeout=min(left, 0.25) if finished is not None else left)
            return False, False
        except subprocess.TimeoutExpired:
            continue


def run_bounded(argv: list[str], *, timeout_s: float, env: dict[str, str], cwd: str,
                stdout_path: Path, stderr_path: Path,
                finished: Callable[[], bool] | None = None,
                exit_grace_s: float = 10.0) -> Outcome:
    """Run argv (a list, never a shell string) with a hard timeout."""
    become_subreaper()
    ours = frozenset(children())  # not the job's: never killed as its leftovers
    before = os.times()
    t0 = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        with _Deferred() as held:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, cwd=cwd, start_new_session=True)
        timed_out = hung = False
        try:
            held.deliver()
            timed_out, hung = _wait(proc, timeout_s, finished, exit_grace_s)
        except BaseException:
            kill_family(proc.pid, exclude=ours)
            proc.wait()
            raise
        leftovers = family(proc.pid, ours) if not timed_out else set()
        if timed_out or leftovers:
            kill_family(proc.pid, exclude=ours)
        proc.wait()
        survivors = family(proc.pid, ours)
    reap_adopted()
    after = os.times()
    rc = proc.returncode
    sig = -rc if rc is not None and rc < 0 else None
    return Outcome(
        exit_code=None if timed_out else (rc if rc is not None and rc >= 0 else None),
        signal=sig if not timed_out else None,
        timed_out=timed_out,
        wall_s=time.monotonic() - t0,
        cpu_s=(after.children_user - before.children_user)
        + (after.children_system - before.children_system),
        leftovers=len(leftovers),
        hung_at_exit=hung,
        survivors=len(survivors),
    )


@dataclass(frozen=True)
class Captured:
    outcome: Outcome
    out: str
    err: str


def run_captured(argv: list[str], *, timeout_s: float, env: dict[str, str],
                 cwd: str | None = None) -> Captured:
    """run_bounded, with its standard output and error read back as text
    (kept in a folder of their own, never in cwd)."""
    with tempfile.TemporaryDirectory(prefix="commscope-run-") as tmp:
        o, e = Path(tmp) / "out", Path(tmp) / "err"
        res = run_bounded(argv, timeout_s=timeout_s, env=env, cwd=cwd or tmp,
                          stdout_path=o, stderr_path=e)
        return Captured(res, o.read_text(errors="replace"), e.read_text(errors="replace"))
