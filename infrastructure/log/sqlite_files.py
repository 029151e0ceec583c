"""Preparing an SQLite database file for concurrent use by several processes."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from eventsourcing.persistence import OperationalError

_T = TypeVar("_T")

# Two processes switching a new file to WAL at once, or creating its tables
# at once, can get SQLITE_BUSY at once, without the busy handler (SQLite
# refuses to wait where waiting could deadlock: a transaction that read the
# schema cannot upgrade to a write after another writer committed). Such
# idempotent set-up steps are retried a bounded number of times; the last
# failure propagates.
_ATTEMPTS = 50
_PAUSE = 0.02


def retry_when_locked(operation: Callable[[], _T]) -> _T:
    """Run an idempotent ``operation``, again while SQLite says the database is locked."""
    for attempt in range(_ATTEMPTS):
        try:
            return operation()
        except (sqlite3.OperationalError, OperationalError) as error:
            if "locked" not in str(error) or attempt == _ATTEMPTS - 1:
                raise
            time.sleep(_PAUSE * (attempt + 1))
    raise AssertionError("unreachable: the last attempt returns or raises")


def enable_wal(connection: sqlite3.Connection) -> None:
    """Put the connection's database in WAL mode, retrying the immediate-busy race."""
    retry_when_locked(lambda: connection.execute("PRAGMA journal_mode = WAL"))


def prepare_database_file(path: str | Path, timeout: float) -> None:
    """Create the file if needed and switch it to WAL before other code opens it."""
    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        enable_wal(connection)
    finally:
        connection.close()
