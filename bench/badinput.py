#!/usr/bin/env python3
"""Bad input, as a careless or hostile user types it, against every kind
of check: what becomes of each.

Every case runs `commscope` in this process with a real store beside it
(golden records, no MPI), stopping where a job would start (the runner's
sweep and tune's first job raise instead of launching), and is classed:

  one line     refused: exit 1 or 2, one line on stderr naming the input
  traceback    a Python traceback reached the user
  silent       accepted: it got through to a launch or a 0 exit
  harmed       the store (or another database beside it) changed

Prints the table by kind and in all (target: 0 traceback, 0 silent, 0
harmed).  With --suite, also the test suite's result while a busy loop
keeps one core busy (about ten minutes).

    .venv/bin/python bench/badinput.py [--suite]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.helpers import golden_store  # noqa: E402

from commscope import cli  # noqa: E402
from commscope.advise import search  # noqa: E402


class Launched(BaseException):
    """Where a real job would start."""


def cases(t: Path, db: Path, other: Path) -> list[tuple[str, list[str]]]:
    """(kind, argv): every one of them must be refused."""
    s, o = str(db), str(other)
    huge = "99999999999999999999"
    out: list[tuple[str, list[str]]] = []
    # numbers out of range, for SQLite and for the machine
    for argv in (["run", "--np", huge], ["run", "--np", "100000"], ["run", "--nodes", huge],
                 ["run", "--ppn", "0"], ["compare", "--a", f"run={huge}", "--b", "run=1"],
                 ["run", "--sizes", "1:99999999999999999999G"], ["run", "--factor", "1"],
                 ["run", "--time-cap", "-1"], ["run", "--repeat", "0"],
                 ["run", "--timeout", "1e400"], ["run", "--window", "0"]):
        out.append(("range", argv))
    # empty values
    for opt in ("--mpi", "--np", "--bench", "--cluster", "--param", "--settings", "--sizes",
                "--transport", "--path", "--for"):
        out.append(("empty", ["run", opt, ""]))
    out += [("empty", ["report", "--out", ""]), ("empty", ["show", "--mode", ""]),
            ("empty", ["mpi", "install", "openmpi5", "--version", ""]),
            ("empty", ["export", "--output", ""]), ("empty", ["tune", "--mpi", ""])]
    # files that are not what they should be
    (t / "bin").write_bytes(b"\x00\xff\xfe\x80")
    (t / "empty.db").write_bytes(b"")
    (t / "hosts-opt").write_text("-oProxyCommand=touch.pwned slots=1\n")
    (t / "hosts-zero").write_text("node1 slots=0\n")
    (t / "ro").mkdir(exist_ok=True)
    for argv in (["run", "--settings", str(t / "bin")],
                 ["run", "--cluster", f"hostfile:{t / 'bin'}"],
                 ["doctor", "--cluster", f"hostfile:{t / 'bin'}"],
                 ["run", "--cluster", f"hostfile:{t / 'hosts-opt'}"],
                 ["doctor", "--cluster", f"hostfile:{t / 'hosts-opt'}"],
                 ["run", "--cluster", f"hostfile:{t / 'hosts-zero'}"],
                 ["run", "--settings", str(t / "missing")],
                 ["tune", "--mpi", "openmpi", "--candidates", str(t / "bin")]):
        out.append(("files", argv))
    # outputs: never the store, never a folder, never a missing folder
    for argv in (["export", "--db", s, "--output", s], ["export", "--db", s, "--output", o],
                 ["export", "--db", s, "--output", str(t)],
                 ["export", "--db", s, "--output", str(t / "no" / "x.csv")],
                 ["report", "--db", s, "--out", s],
                 ["report", "--db", s, "--out", str(t / "no" / "deeper" / "r")],
                 ["slurm", "script", "--nodes", "2", "--db", s, "--out", s],
                 ["slurm", "script", "--nodes", "2", "--out", str(t / "no" / "job.sh")],
                 ["tune", "--mpi", "openmpi", "--db", s, "--write", str(t / "no" / "s.env")],
                 ["tune", "--mpi", "openmpi", "--db", s, "--write", o],
                 ["show", "--db", str(t / "empty.db")],
                 ["export", "--db", str(t / "empty.db")]):
        out.append(("outputs", argv))
    # names and words that are not ours
    for argv in (["mpi", "add", "/usr/bin/mpicc.openmpi", "--name", "../../x"],
                 ["show", "--db", s, "--mode", "nope"], ["run", "--bench", "nope"],
                 ["run", "--mpi", "lam-mpi"], ["run", "--bench", "matmul", "--param",
                                                 "N=64;N=128"],
                 ["run", "--for", "fft,N=4"], ["run", "--for", "matmul,M=4"],
                 ["run", "--buffers", "tepid"], ["run", "--cluster", "emu:nope"],
                 ["tune", "--mpi", "openmpi", "--validate", "nope"],
                 ["run", "--transport", "carrier-pigeon"], ["run", "--path", "floppy"]):
        out.append(("names", argv))
    return out


def classify(argv: list[str], watched: list[Path]) -> str:
    before = [hashlib.sha256(p.read_bytes()).hexdigest() for p in watched]
    err, rc = io.StringIO(), None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cli.main(argv)
        except Launched:
            rc = "launched"
        except SystemExit as exc:
            rc = exc.code
        except BaseException:  # noqa: BLE001 - what escapes main is what a user would see
            import traceback

            traceback.print_exc(file=err)
            rc = "escaped"
    text = err.getvalue()
    if [hashlib.sha256(p.read_bytes()).hexdigest() for p in watched] != before:
        return "harmed"
    if "Traceback" in text or rc == "escaped" or "internal error" in text:
        return "traceback"
    if rc in (0, "launched"):
        return "silent"
    return "one line" if rc in (1, 2) and len(text.strip().splitlines()) == 1 else "traceback"


def suite_busy() -> str:
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                           cwd=HERE.parent, capture_output=True, text=True, check=False)
        tail = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
        return f"{tail} ({time.monotonic() - t0:.0f} s, one core kept busy)"
    finally:
        busy.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="store_true", help="also run the test suite beside a "
                    "busy loop")
    a = ap.parse_args()

    def launch(*_a: object, **_k: object) -> None:
        raise Launched

    cli.run_sweep = launch  # type: ignore[assignment]
    search.read_cvars = launch  # type: ignore[assignment]
    search.search = launch  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as d:
        t = Path(d)
        db, other = golden_store(t / "s.db"), golden_store(t / "other.db")
        table: dict[str, Counter[str]] = {}
        worst: list[str] = []
        for kind, argv in cases(t, db, other):
            # runs get the store too, so an unfinished sweep row would show as harm
            full = argv + (["--db", str(db)] if argv[0] == "run" else [])
            got = classify(full, [db, other])
            table.setdefault(kind, Counter())[got] += 1
            if got != "one line":
                worst.append(f"  {got}: commscope {' '.join(argv)}")
    cols = ("one line", "traceback", "silent", "harmed")
    print(f"{'kind':<9} {'tried':>5} " + " ".join(f"{c:>9}" for c in cols))
    total: Counter[str] = Counter()
    for kind, c in table.items():
        total.update(c)
        print(f"{kind:<9} {sum(c.values()):>5} " + " ".join(f"{c[k]:>9}" for k in cols))
    print(f"{'all':<9} {sum(total.values()):>5} " + " ".join(f"{total[k]:>9}" for k in cols)
          + ("   ok" if not (total["traceback"] or total["silent"] or total["harmed"])
             else "   MISS (target 0 / 0 / 0)"))
    for line in worst:
        print(line)
    if a.suite:
        print(f"suite beside a busy loop: {suite_busy()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
