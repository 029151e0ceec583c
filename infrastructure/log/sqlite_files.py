"""Preparing an SQLite database file for concurrent use by several processes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

# Two processes switching a new file to WAL at once can get SQLITE_BUSY at
# once, without the busy handler (SQLite refuses to wait where waiting could
# deadlock). The switch is retried a bounded number of times; the last
# failure propagates.
_WAL_ATTEMPTS = 50
_WAL_PAUSE = 0.02


def enable_wal(connection: sqlite3.Connection) -> None:
    """Put the connection's database in WAL mode, retrying the immediate-busy race."""
    for attempt in range(_WAL_ATTEMPTS):
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == _WAL_ATTEMPTS - 1:
                raise
            time.sleep(_WAL_PAUSE * (attempt + 1))


def prepare_database_file(path: str | Path, timeout: float) -> None:
    """Create the file if needed and switch it to WAL before other code opens it."""
    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        enable_wal(connection)
    finally:
        connection.close()
