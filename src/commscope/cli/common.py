"""What every command shares: the table commands register in, the parser
that turns a usage error into one line, and the value checks of options."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable, Sequence

from ..errors import CommscopeError
from ..measure import discovery
from ..measure import mpi as mpi_mod
from ..store import core_facts

DEFAULT_DB = "commscope.db"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CommscopeError(f"{self.prog}: {message}")


def listed(values: Sequence[str] | None) -> list[str]:
    """Repeatable options that also take comma-separated values."""
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


MAX_RANKS = 1 << 20  # processes, nodes, per node: the largest systems, and SQLite's range


def ints(values: Sequence[str] | None, what: str) -> list[int]:
    out = []
    for v in listed(values):
        try:
            n = int(v)
        except ValueError:
            raise CommscopeError(f"{what} must be an integer, got '{v}'") from None
        if n < 1:
            raise CommscopeError(f"{what} must be at least 1, got {n}")
        if n > MAX_RANKS:
            raise CommscopeError(f"{what} {n} is beyond any machine this runs on (at most "
                                 f"{MAX_RANKS})")
        out.append(n)
    return out


def positive(kind: type, lo: float, hi: float) -> Callable[[str], object]:
    def conv(text: str) -> object:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: '{text}'") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text} is outside [{lo:g}, {hi:g}]")
        return v

    return conv


def sweep_ids(text: str) -> list[int]:
    """--sweep 3 or 1,2: sweep ids, positive whole numbers."""
    out = []
    for v in text.split(","):
        v = v.strip()
        if not v.isdigit() or not 0 < int(v) < 1 << 62:
            raise argparse.ArgumentTypeError(f"'{text}' is not a sweep id or a list of them "
                                             "(e.g. 3 or 1,2)")
        out.append(int(v))
    return out


def mode_arg(text: str) -> str:
    """--mode: dominant, all, or a mode's label (floor~50ns)."""
    if text in ("dominant", "all") or re.fullmatch(r"floor~\d+ns", text):
        return text
    raise argparse.ArgumentTypeError(f"'{text}' is not a mode: dominant, all, or a label "
                                     "such as floor~50ns (commscope show prints them)")


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str) -> Callable[[Callable[[argparse.Namespace], int]],
                                   Callable[[argparse.Namespace], int]]:
    def deco(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = fn
        return fn

    return deco


def named_impls(a: argparse.Namespace) -> list[mpi_mod.MpiImpl]:
    """--mpi, each once per --cc compiler (each its own build and configuration)."""
    impls = discovery.select(listed(a.mpi))
    ccs = listed(a.cc)
    return [mpi_mod.with_compiler(m, c) for m in impls for c in ccs] if ccs else impls


def no_empty_values(argv: Sequence[str]) -> None:
    """An option given an empty value is a mistake (an unset shell
    variable), never a request for the default: refused, naming it."""
    for i, tok in enumerate(argv):
        if tok == "--":
            return
        if tok.startswith("--") and "=" in tok and not tok.split("=", 1)[1].strip():
            raise CommscopeError(f"{tok.split('=', 1)[0]} was given an empty value")
        if not tok.strip():
            before = argv[i - 1] if i and argv[i - 1].startswith("-") else "an argument"
            raise CommscopeError(f"{before} was given an empty value")


def unknown_names(store, rows: Sequence, benches: Sequence[str], mpis: Sequence[str],
                  db: str) -> None:
    """--bench and --mpi names that pick nothing because nothing could have
    them, said as such (one line) rather than as "nothing matches".  A
    benchmark is unknown where neither the core's table nor the store has
    it (a store may hold applications or benchmarks of an older core); one
    the core knows but this store has no record of is left to the usual
    message.  An implementation is unknown where no record of the store is
    of it.  `rows`: the records picked before these filters; the store is
    read only for the names they do not hold."""
    seen = {r["bench"] for r in rows}
    odd = [b for b in benches if b not in seen and not core_facts.bench(b).known]
    if odd:
        stored = store.stored_benches()
        for b in odd:
            if b in stored:
                continue
            groups = {x.group for x in core_facts.benches()} | {"all"}
            if b in groups:
                raise CommscopeError(f"--bench: {b} is a group of benchmarks, not a benchmark: "
                                     "name its benchmarks (e.g. --bench latency,bw)")
            near = difflib.get_close_matches(
                b, sorted({x.name for x in core_facts.benches()} | stored), n=1)
            raise CommscopeError(f"--bench: {b} is not a benchmark (neither the core nor {db} "
                                 "knows it" + (f"; did you mean {near[0]}?)" if near else ")"))
    seen = {r["mpi_name"] for r in rows}
    odd = [m for m in mpis if m not in seen]
    if odd:
        stored = store.stored_mpis()
        for m in odd:
            if m not in stored:
                raise CommscopeError(f"--mpi: no record in {db} is of {m}: its records are of "
                                     f"{', '.join(stored) or 'none'}")


def unknown_mode(stored: Sequence, rows: Sequence, mode: str | None) -> None:
    """--mode LABEL that no machine mode has, said with the modes the
    store's records have (`stored`: before --bench, --mpi and --np; `rows`:
    after them), rather than every record kept, marked as of another mode.
    A mode's label is the median floor of the records it is found among:
    a label read from the whole store names the same mode among fewer
    records (repeats.named_mode)."""
    if not rows or mode in (None, "dominant", "all"):
        return
    from ..analysis.repeats import detect_modes, named_mode

    labels = [m.label for m in detect_modes(r["floor_ns"] for r in stored)]
    if named_mode(detect_modes(r["floor_ns"] for r in rows), mode) is not None:
        return
    if not labels:
        raise CommscopeError(f"--mode: no record was measured in {mode}: none carries a "
                             "machine mode (a core-to-core floor); leave --mode out")
    raise CommscopeError(f"--mode: no record was measured in {mode}: the store's records "
                         f"were measured in {', '.join(labels)}")
