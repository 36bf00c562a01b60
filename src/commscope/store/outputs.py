"""Files commscope writes for the user (an export, a report, a script,
settings): judged before any work is done, never a store, written whole
or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import CommscopeError

SQLITE_MAGIC = b"SQLite format 3\x00"


def read_user_text(path: Path, what: str) -> str:
    """A text file the user named (a hostfile, a settings file): one line
    when it cannot be read or is not text."""
    try:
        return path.read_text()
    except OSError as exc:
        raise CommscopeError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CommscopeError(f"{what} {path} is not a text file") from exc


def is_store(path: Path) -> bool:
    """An SQLite file: a commscope store or anybody's database."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def target(path: str, what: str, db: str | None = None, folder: bool = False,
           writes: tuple[str, ...] = ()) -> Path:
    """The path an output goes to, refused in one line when it is empty,
    the store (--db, its SQLite side files, or any SQLite file), a folder
    where a file is meant (or a file where a folder is), or in a folder that
    is missing or not writable.  `writes`: the files a folder output puts in
    it, each judged as a file would be.  `what` names the option (e.g.
    "export --output")."""
    if not path.strip():
        raise CommscopeError(f"{what}: give a path (an empty one is not the current folder)")
    p = Path(path)
    if db is not None and (_same(p, Path(db)) or p.resolve() == Path(db).resolve()
                           or p.resolve() in {Path(db + x).resolve()
                                              for x in ("-wal", "-shm", "-journal")}):
        raise CommscopeError(f"{what} {path} is the store itself (--db): choose another file")
    for name in writes:
        inside = p / name
        if db is not None and (_same(inside, Path(db))
                               or inside.resolve() == Path(db).resolve()):
            raise CommscopeError(f"{what} {path} would write {inside}, the store itself (--db): "
                                 "choose another folder")
        if inside.is_file() and is_store(inside):
            raise CommscopeError(f"{what} {path} would write {inside}, a database: commscope "
                                 "never overwrites one")
    if p.is_file() and is_store(p):
        raise CommscopeError(f"{what} {path} is a database: commscope never overwrites one")
    if folder:
        if p.exists() and not p.is_dir():
            raise CommscopeError(f"{what} {path} exists and is not a folder")
        parent = p.parent if not p.exists() else p
    else:
        if p.is_dir():
            raise CommscopeError(f"{what} {path} is a folder: give a file name")
        parent = p.parent
    if not parent.is_dir():
        raise CommscopeError(f"{what}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommscopeError(f"{what}: cannot write in {parent} (permission or a read-only "
                             "file system)")
    return p


def write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Written to a temporary file beside it and renamed over it: a failure
    leaves the old file whole."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, mode if mode is not None else 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise CommscopeError(f"cannot write {path}: {exc.strerror or exc}") from exc
