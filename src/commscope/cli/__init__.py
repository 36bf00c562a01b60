"""The command line: one module per command (each registers in the table
of common.py: parse, call, print), the parser in parser.py, and here the
one error handler every command runs under."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from collections.abc import Sequence

from ..errors import CommscopeError
from . import analyze, clusters, compare, diagnose, machine, matrix, profile, results, run, tune  # noqa: F401 (they register)
from .common import COMMANDS, no_empty_values
from .parser import make_parser


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a closed terminal, a batch system's stop): ended as
    Ctrl-C is, the job in flight killed with its process group and recorded."""


def _terminated(signum: int, _frame: object) -> None:
    raise Terminated(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    before = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            before[sig] = signal.signal(sig, _terminated)
        except ValueError:  # not the main thread: left as it is
            pass
    try:
        return _main(argv)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser()
    try:
        args = list(sys.argv[1:] if argv is None else argv)
        no_empty_values(args)
        a = parser.parse_args(args)
        if a.cmd is None:
            parser.print_help()
            return 2
        name = a.cmd
        if name == "mpi":
            if a.mpicmd is None:
                raise CommscopeError("commscope mpi: choose an action: list, install, add "
                                     "or remove")
            name = f"mpi {a.mpicmd}"
        elif name in ("cluster", "slurm"):
            action = a.clcmd if name == "cluster" else a.slcmd
            if action is None:
                raise CommscopeError(f"commscope {name}: choose an action: "
                                     + ("up, down or list" if name == "cluster" else "script"))
            name = f"{name} {action}"
        elif name == "analyze":
            if a.anacmd is None:
                raise CommscopeError("commscope analyze: choose app, crossover, findings, "
                                     "guidelines or predict")
            name = f"analyze {a.anacmd}"
        return COMMANDS[name](a)
    except CommscopeError as exc:
        # a value the user typed may hold control characters: shown escaped,
        # never acted out on the terminal
        msg = "".join(ch if ch.isprintable() or ch in "\n\t" else repr(ch)[1:-1]
                      for ch in str(exc))
        print(f"commscope: error: {msg}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        said = f" by {exc}" if isinstance(exc, Terminated) else ""
        print(f"commscope: interrupted{said}; finished jobs are stored", file=sys.stderr)
        return 143 if said else 130
    except sqlite3.Error as exc:  # a store that cannot be written (read-only, immutable, gone)
        print(f"commscope: error: the store: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader stopped (show | head): the end of output
        try:  # what is still buffered goes nowhere, not into a second error at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as exc:  # a bug: one line, and how to see the trace
        if os.environ.get("COMMSCOPE_DEBUG"):
            raise
        print(f"commscope: internal error: {type(exc).__name__}: {exc} (rerun with "
              "COMMSCOPE_DEBUG=1 for the trace, and report it)", file=sys.stderr)
        return 3


