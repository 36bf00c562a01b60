"""Golden behaviour: what the CLI prints and writes for one fixed stored sweep,
byte for byte, so that moving code around (modules into packages) cannot
change an output unnoticed.

tests/golden/behaviour/store.sqlite is a real sweep, stored once and never
measured again (so the test reads stored data only, whatever this machine's
speed or load):

    commscope run --db store.sqlite --mpi openmpi,mpich --np 2 \
        --bench latency,bw,allreduce,reduce,reduce_sends,alltoall,alltoall_sends,loggp \
        --sizes 4:1M --factor 4 --repeat 3 --no-advise --quiet

(2 cores; its runs fell into two of the host's modes, so the default views
drop a third of the records and --mode all keeps them: both paths are held.)
Every command runs on a copy of it in a temporary folder (fit writes into its
store), in the order of COMMANDS, as a subprocess of the installed `commscope`.

Each output is compared with tests/golden/behaviour/expected/NAME.  Only what
legitimately changes from one run to the next is normalised (normalise()):
the temporary folder, the date and time of the run itself, and commscope's
version.  Anything else that differs is a change of behaviour.

COMMSCOPE_GOLDEN_UPDATE=1 rewrites the expected files from this run instead,
and the tests still fail, saying so: a rewrite is never silently green."""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.helpers import golden

HERE = golden("behaviour")
STORE = HERE / "store.sqlite"
EXPECTED = HERE / "expected"
UPDATE = os.environ.get("COMMSCOPE_GOLDEN_UPDATE") == "1"
DIFF_LINES = 40
TMP = "{tmp}"  # stands for the temporary folder in COMMANDS

# (expected file, arguments; --db is added), run in this order on one copy of
# the store: the fits are stored before the report, which draws the LogGP ones.
COMMANDS: list[tuple[str, list[str]]] = [
    ("show.txt", ["show"]),
    ("show_runs.txt", ["show", "--runs"]),
    ("show_all.txt", ["show", "--all"]),
    ("show_mode_all.txt", ["show", "--mode", "all"]),
    ("show_mode_floor58.txt", ["show", "--mode", "floor~58ns"]),  # the other mode of the store
    ("show_per_node.txt", ["show", "--per-node"]),
    ("show_filtered.txt", ["show", "--bench", "latency,bw", "--mpi", "openmpi", "--np", "2"]),
    # one benchmark of eleven: every column of every repetition, in tens of KB
    ("export.csv", ["export", "--format", "csv", "--bench", "latency"]),
    ("export.json", ["export", "--format", "json", "--bench", "latency"]),
    ("analyze_findings.txt", ["analyze", "findings"]),
    ("analyze_findings_verbose.txt", ["analyze", "findings", "--verbose"]),
    ("analyze_crossover.txt", ["analyze", "crossover"]),
    ("analyze_guidelines.txt", ["analyze", "guidelines"]),
    ("compare.txt", ["compare", "--a", "mpi=mpich", "--b", "mpi=openmpi"]),
    ("fit_hockney.txt", ["fit", "--model", "hockney"]),
    ("fit_loggp.txt", ["fit", "--model", "loggp"]),
    ("fit.txt", ["fit"]),  # --model all
    ("report.txt", ["report", "--out", f"{TMP}/report"]),
]
# what the commands left behind, read after them
FILES = {
    "fit_stored.json": "the fits table after the fit commands (no command shows it)",
    "report_figures.json": "report --out: figures.json, every plotted series",
    "report_index.html": "report --out: index.html (the SVG figures are left out: "
                         "matplotlib salts their ids with uuid4 and dates them)",
}
NAMES = [n for n, _ in COMMANDS] + list(FILES)

# Lines the environment adds, not commscope: matplotlib says this on stderr the
# first time it runs for a user (no font cache yet).
NOISE = ("Matplotlib is building the font cache",)


def _cli() -> str:
    exe = (shutil.which("commscope", path=str(Path(sys.executable).parent))
           or shutil.which("commscope"))
    if not exe:
        pytest.fail("the commscope command is not installed (pip install -e .)", pytrace=False)
    return exe


def _env(tmp: Path) -> dict[str, str]:
    """Nothing of the user's or the terminal's: no colours, fixed widths, UTC,
    an empty build cache (fit reads the cores' group tables from it; a store
    must not read differently on a machine that built more) and no user MPIs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMMSCOPE_")}
    env.update(COLUMNS="80", LINES="24", NO_COLOR="1", TERM="dumb", TZ="UTC",
               LC_ALL="C.UTF-8", LANG="C.UTF-8", PYTHONIOENCODING="utf-8",
               COMMSCOPE_CACHE=str(tmp / "cache"), COMMSCOPE_CONFIG=str(tmp / "mpi.json"))
    return env


def normalise(text: str, tmp: Path, version: str, start: float, end: float) -> str:
    """Only what changes between runs of the same code on the same store:
    the temporary folder; the date and time of this run (the report's
    'YYYY-MM-DD HH:MM UTC' line and the fits' created_at), matched only to
    the seconds the commands ran in, so a stored date stays as it is; and
    'commscope VERSION' (the report's line); a phase's seconds."""
    for p in {str(tmp.resolve()), str(tmp)}:
        text = text.replace(p, "<TMP>")
    for t in range(int(start) - 1, int(end) + 2):
        now = datetime.fromtimestamp(t, timezone.utc)
        for fmt in ("%Y-%m-%d %H:%M UTC", "%Y-%m-%dT%H:%M:%S+00:00"):
            text = text.replace(now.strftime(fmt), "<NOW>")
    # how long a phase took (`report: 13 figure(s), all drawn (3 s)`)
    text = re.sub(r"^(\w+: \d+ \w+\(s\), [^\n]*)\(\d+ s\)$", r"\1(<SECONDS> s)", text,
                  flags=re.M)
    return text.replace(f"commscope {version}", "commscope <VERSION>")


def _stored_fits(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT run_id, model, created_at, params FROM fits "
                           "ORDER BY run_id, model").fetchall()
    finally:
        con.close()
    return json.dumps([{"run_id": r, "model": m, "created_at": c, "params": json.loads(p)}
                       for r, m, c, p in rows], indent=1) + "\n"


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """name -> (what made it, normalised text), every command run once."""
    tmp = tmp_path_factory.mktemp("golden")
    db = tmp / "store.sqlite"
    shutil.copyfile(STORE, db)  # never the committed file: fit writes into it
    exe, env = _cli(), _env(tmp)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env,
                             cwd=tmp, check=True).stdout.split()[-1]
    raw: dict[str, tuple[str, str]] = {}
    start = time.time()
    for name, args in COMMANDS:
        argv = [a.replace(TMP, str(tmp)) for a in args] + ["--db", str(db)]
        p = subprocess.run([exe, *argv], capture_output=True, env=env, cwd=tmp, timeout=300)
        out = p.stdout.decode("utf-8")
        err = "".join(ln for ln in p.stderr.decode("utf-8").splitlines(keepends=True)
                      if not ln.startswith(NOISE))
        if p.returncode or err:  # held too: an exit status or a message is behaviour
            out += f"\n[exit status {p.returncode}; stderr:]\n{err}"
        raw[name] = ("commscope " + shlex.join(args + ["--db", "STORE"]), out)
    raw["fit_stored.json"] = (FILES["fit_stored.json"], _stored_fits(db))
    for name, file in (("report_figures.json", "figures.json"),
                       ("report_index.html", "index.html")):
        path = tmp / "report" / file
        raw[name] = (FILES[name], path.read_text(encoding="utf-8") if path.exists()
                     else f"[{path} was not written]\n")
    end = time.time()
    return {n: (what, normalise(text, tmp, version, start, end))
            for n, (what, text) in raw.items()}


@pytest.mark.parametrize("name", NAMES)
def test_golden(produced: dict[str, tuple[str, str]], name: str) -> None:
    what, text = produced[name]
    path = EXPECTED / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        pytest.fail(f"{name}: rewritten from this run ({what}); COMMSCOPE_GOLDEN_UPDATE=1 "
                    "always fails: review `git diff tests/golden/behaviour/expected`, "
                    "then run without it", pytrace=False)
    if not path.exists():
        pytest.fail(f"{name}: no expected file {path} (COMMSCOPE_GOLDEN_UPDATE=1 writes it)",
                    pytrace=False)
    want = path.read_bytes().decode("utf-8")
    if text == want:
        return
    diff = list(difflib.unified_diff(want.splitlines(keepends=True),
                                     text.splitlines(keepends=True),
                                     f"expected/{name}", f"{name} (this run)", n=2))
    shown = "".join(ln if ln.endswith("\n") else ln + "\n" for ln in diff[:DIFF_LINES])
    more = f"... {len(diff) - DIFF_LINES} more diff lines\n" if len(diff) > DIFF_LINES else ""
    pytest.fail(f"{name}: the output of {what} differs from {path}:\n{shown}{more}"
                "(if the change is intended: COMMSCOPE_GOLDEN_UPDATE=1 rewrites the expected "
                "files)", pytrace=False)


def test_golden_no_stale_expected() -> None:
    """Every expected file belongs to a command still run (a renamed or
    dropped command leaves none behind unchecked)."""
    stale = sorted(p.name for p in EXPECTED.iterdir() if p.name not in NAMES)
    if stale and UPDATE:
        for n in stale:
            (EXPECTED / n).unlink()
        pytest.fail(f"removed stale expected files (COMMSCOPE_GOLDEN_UPDATE=1): {stale}",
                    pytrace=False)
    assert not stale, f"expected files no command produces: {stale}"
