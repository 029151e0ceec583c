"""A progress bar on a terminal's stderr for long loads and audits.

The Journal counts (``progress(task, done, total)``); this draws. On a
terminal the bar is redrawn in place at most every ``interval`` seconds,
shows the final count, and is erased when the task completes, so the lines
that follow stay clean. When stderr is not a terminal (a pipe, a file, CI),
no observer is made at all and nothing is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 30


class TerminalProgress:
    """Draws ``task [#####.....] done/total`` on one line of ``stream``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._drawn_at: float | None = None
        self._width = 0

    def __call__(self, task: str, done: int, total: int) -> None:
        finished = done >= total
        now = self._clock()
        if not finished and self._drawn_at is not None and now - self._drawn_at < self._interval:
            return
        filled = BAR_WIDTH if total <= 0 else BAR_WIDTH * min(done, total) // total
        line = f"{task} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}"
        self._stream.write("\r" + line.ljust(self._width))
        self._width = max(self._width, len(line))
        if finished:
            self._stream.write("\r" + " " * self._width + "\r")
            self._drawn_at, self._width = None, 0
        else:
            self._drawn_at = now
        self._stream.flush()


def progress_for(stream: TextIO) -> TerminalProgress | None:
    """A progress bar on ``stream`` if it is a terminal, else ``None`` (silence)."""
    try:
        is_terminal = stream.isatty()
    except ValueError:  # a closed stream
        return None
    return TerminalProgress(stream) if is_terminal else None
