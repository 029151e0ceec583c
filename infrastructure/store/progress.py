"""How a long task tells its observer that it advances: loads, audits, rebuilds, moves.

The observer is a plain callable, ``progress(task, done, total)``, called
with ``done`` from 0 up to ``total`` (the last call has ``done == total``).
The task only counts; whoever passes the observer in decides whether and
how to show it (the command line draws a bar on a terminal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

Progress: TypeAlias = Callable[[str, int, int], None]
"""Told ``done`` of ``total`` units of ``task`` are finished: ``progress(task, done, total)``."""


def silent(task: str, done: int, total: int) -> None:
    """The observer that shows nothing."""
