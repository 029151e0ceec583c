"""SQLite database files: prepared for concurrent use by several processes, or read
where they cannot be written."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import TypeVar

from eventsourcing.persistence import OperationalError

from nenjim.infrastructure.store.errors import StoreReadOnlyError, StoreUnavailableError
from nenjim.infrastructure.store.kinds import StoreMissingError
from nenjim.infrastructure.store.urls import StoreLocation

_T = TypeVar("_T")

SQLITE_READ_ONLY = "NENJIM_SQLITE_READ_ONLY"
"""Our own environment key: ``yes`` has a log's connections only read its file."""

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


def prepare_log(location: StoreLocation, env: dict[str, str], create: bool) -> bool:
    """Ready the file of a log application; whether it can only be read.

    A file that cannot be written is read where it is (and ``env`` says so); a
    missing one is refused unless ``create``, and then made in WAL mode.
    """
    where, path = location.where, Path(env["SQLITE_DBNAME"])
    if path.is_file() and read_only_reason(path) is not None:
        reading_uri(path)  # a file SQLite could not read is refused here
        env[SQLITE_READ_ONLY] = "yes"
        return True
    if not create:
        require_file(location)
        return False
    check_writable(location)
    try:
        prepare_database_file(path, float(env["SQLITE_LOCK_TIMEOUT"]))
    except sqlite3.Error as error:
        raise StoreUnavailableError(f"cannot open {where}: {error}") from None
    return False


def check_writable(location: StoreLocation) -> bool:
    """Whether the file a store URL names is yet to be created; ``StoreUnavailableError``
    (``StoreReadOnlyError``) where it could not be written."""
    where, path = location.where, Path(location.env["SQLITE_DBNAME"])
    if path.is_dir():
        raise StoreUnavailableError(f"{where} is a directory")
    if not path.parent.is_dir():
        raise StoreUnavailableError(
            f"cannot create {where}: directory {path.parent} does not exist"
        )
    created = not path.exists()
    if created and not os.access(path.parent, os.W_OK):
        raise StoreReadOnlyError(f"cannot create {where}: directory {path.parent} is read-only")
    if not created and (read_only := read_only_reason(path)) is not None:
        raise StoreReadOnlyError(f"{where} is read-only ({read_only})")
    return created


def require_file(location: StoreLocation) -> Path:
    """The existing file a store URL names; ``StoreMissingError`` if there is none."""
    path = Path(location.env["SQLITE_DBNAME"])
    if not path.is_file():
        reason = "is a directory" if path.is_dir() else "does not exist"
        raise StoreMissingError(f"{location.where} {reason}")
    return path


def reading(location: StoreLocation) -> AbstractContextManager[sqlite3.Connection]:
    """A read-only transaction on the existing file a store URL names (in WAL: one
    consistent state); ``StoreMissingError`` at once if there is none."""
    return _read_transaction(connect(location, reading_uri(require_file(location))))


@contextmanager
def _read_transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    with closing(connection):
        connection.execute("BEGIN")
        try:
            yield connection
        finally:
            connection.execute("ROLLBACK")


def connect(location: StoreLocation, uri: str) -> sqlite3.Connection:
    """An autocommit connection by ``uri`` (``mode=ro`` or ``rw``: never creating the file)."""
    timeout = float(location.env["SQLITE_LOCK_TIMEOUT"])
    try:
        return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout)
    except sqlite3.Error as error:
        raise StoreUnavailableError(f"cannot open {location.where}: {error}") from error


def read_only_reason(path: Path) -> str | None:
    """Why the existing SQLite file at ``path`` can be read but not written, or ``None``.

    A WAL database is written with two files beside it (``-wal``, ``-shm``), so
    a directory that cannot be written makes it read-only too.
    """
    if _on_read_only_file_system(path):
        return "it is on a read-only file system"
    if not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(path.parent, os.W_OK):
        return "its directory is read-only"
    return None


def reading_uri(path: Path) -> str:
    """The SQLite URI that opens the existing file ``path`` to read only.

    SQLite reads a WAL database through its ``-shm`` file, which it creates
    beside it if missing. On a read-only file system it cannot, and nothing
    can write the file either: there, unless a ``-wal`` file holds commits not
    yet copied into it, the file is opened as immutable, read as it is.
    ``StoreUnavailableError`` when SQLite could not read it: no ``-shm`` file in
    a directory that cannot be written (SQLite would fail with a bare "unable to
    open database file").
    """
    uri = f"{path.absolute().as_uri()}?mode=ro"
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    read_only_system = _on_read_only_file_system(path.parent)
    if read_only_system and not wal.exists():
        return uri + "&immutable=1"
    if not shm.exists() and (read_only_system or not os.access(path.parent, os.W_OK)):
        raise StoreUnavailableError(
            f"cannot read SQLite store {path}: SQLite must create {shm.name} beside it, "
            f"and directory {path.parent} cannot be written"
        )
    return uri


def _on_read_only_file_system(path: Path) -> bool:
    # statvfs is POSIX's; elsewhere such a file shows as one that cannot be written.
    statvfs = getattr(os, "statvfs", None)
    return statvfs is not None and bool(statvfs(path).f_flag & os.ST_RDONLY)
