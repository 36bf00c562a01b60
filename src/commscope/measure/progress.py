"""How far a sweep is: a progress bar on a terminal, a line per job elsewhere."""

from __future__ import annotations

import sys
import time


class Progress:
    """A progress bar on a terminal, one line per job elsewhere."""

    def __init__(self, total: int, stream=None, enabled: bool = True) -> None:
        stream = sys.stderr if stream is None else stream
        self.total, self.done, self.stream, self.enabled = total, 0, stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.t0 = time.monotonic()

    def start(self, label: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            el = time.monotonic() - self.t0
            eta = el / self.done * (self.total - self.done) if self.done else 0
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] "
                              f"{self.done}/{self.total} {label:<40.40} eta {eta:4.0f}s")
            self.stream.flush()

    def end(self, label: str, status: str, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
        self.stream.write(f"[{self.done}/{self.total}] {label}: {status}{note}\n")
        self.stream.flush()
