"""``SQLiteBackend``: the SQL driver on one SQLite file.

Each thread has its own connection (``isolation_level=None``: transactions
are issued by hand). The outermost scope is ``BEGIN IMMEDIATE``, which takes
the database's single writer lock at once, so every transaction, reads
included, runs alone and the driver's pre-checks are exact; nested scopes
are ``SAVEPOINT``/``RELEASE``/``ROLLBACK TO``. The file is in WAL mode, and a
writer waits up to ``busy_timeout`` seconds for the lock; past that SQLite's
``database is locked`` error surfaces as the raw ``sqlite3.OperationalError``
(it is not a conflict, and nothing retries it).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from infrastructure.log.errors import StoreUnavailableError
from infrastructure.log.sqlite_files import enable_wal
from infrastructure.storage.backend import Backend
from infrastructure.storage.errors import BackendClosedError
from infrastructure.storage.resource import Resource
from infrastructure.storage.sql import SqlDriver, schema
from infrastructure.storage.sql.schema import Layout
from infrastructure.storage.sql.session import Session
from infrastructure.storage.sql.sqlite_dialect import SQLiteDialect
from infrastructure.storage.transient import is_transient

DEFAULT_BUSY_TIMEOUT = 30.0
"""Seconds a transaction waits for another connection's writer lock."""


class _Connection(sqlite3.Connection):
    """A connection that can be referenced weakly (the C type cannot)."""


class _Lease:
    """One thread's connection, and whether a transaction is running on it.

    ``lock`` orders the owner's use against ``close()`` from any thread:
    a connection is closed only while no transaction runs on it.
    """

    __slots__ = ("__weakref__", "busy", "connection", "lock")

    def __init__(self, connection: _Connection) -> None:
        self.connection = connection
        self.lock = threading.Lock()
        self.busy = False


class SQLiteDriver(SqlDriver):
    """Per-thread connections to one SQLite file."""

    kind = "sqlite"

    def __init__(self, path: Path, busy_timeout: float) -> None:
        super().__init__(SQLiteDialect())
        self.path = path
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        self._closed = False
        # Weak: a finished thread's connection is closed when its thread-local
        # slot is collected; close() closes the ones still alive.
        self._leases: weakref.WeakSet[_Lease] = weakref.WeakSet()
        self._leases_lock = threading.Lock()

    @contextmanager
    def transaction(self, outer: Session | None) -> Iterator[Session]:
        if outer is not None:
            with self._savepoint(outer) as inner:
                yield inner
            return
        lease = self._lease()
        try:
            connection = lease.connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield Session(connection, self.dialect)
            except BaseException:
                self._rollback(lease)
                raise
            try:
                connection.execute("COMMIT")
            except BaseException:
                self._rollback(lease)
                raise
        finally:
            self._release(lease)

    def close(self) -> None:
        """Close every idle connection now; a busy one is closed by its thread when done.

        Closing a connection while another thread runs a statement on it
        crashes the process (SQLite frees what the statement still uses), so
        no connection is ever closed from a thread that is not idle on it.
        """
        with self._leases_lock:
            self._closed = True
            leases = list(self._leases)
        for lease in leases:
            with lease.lock:
                if not lease.busy:
                    lease.connection.close()

    def _open_schema(self, layout: Layout) -> None:
        with self.transaction(None) as session:  # BEGIN IMMEDIATE serialises openers
            schema.apply(session, layout, f"SQLite database {self.path}")

    @contextmanager
    def _savepoint(self, outer: Session) -> Iterator[Session]:
        inner = outer.nested()
        name = f"storage_savepoint_{inner.depth}"
        inner.connection.execute(f"SAVEPOINT {name}")
        try:
            yield inner
        except BaseException:
            inner.connection.execute(f"ROLLBACK TO {name}")
            inner.connection.execute(f"RELEASE {name}")
            raise
        inner.connection.execute(f"RELEASE {name}")

    def _lease(self) -> _Lease:
        """This thread's connection, marked busy; ``BackendClosedError`` after close()."""
        lease: _Lease | None = getattr(self._local, "lease", None)
        if lease is None:
            with self._leases_lock:
                if self._closed:
                    raise BackendClosedError(f"SQLite database {self.path} used after close()")
                lease = self._local.lease = _Lease(self._connect())
                self._leases.add(lease)
        with lease.lock:
            if self._closed:
                raise BackendClosedError(f"SQLite database {self.path} used after close()")
            lease.busy = True
        return lease

    def _release(self, lease: _Lease) -> None:
        with lease.lock:
            lease.busy = False
            if self._closed:
                lease.connection.close()

    def _connect(self) -> _Connection:
        # check_same_thread=False only so close() may close the connections of
        # other threads (never while they use them); each is used by the
        # thread that opened it.
        connection = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
            factory=_Connection,
        )
        enable_wal(connection)
        # FULL: a committed transaction survives a power loss, not only a crash.
        connection.execute("PRAGMA synchronous = FULL")
        return connection

    def _rollback(self, lease: _Lease) -> None:
        # The original error is what the caller needs; a connection too broken
        # to roll back is dropped, so the thread's next transaction opens anew.
        try:
            lease.connection.execute("ROLLBACK")
        except sqlite3.Error:
            self._local.lease = None
            with lease.lock, suppress(sqlite3.Error):
                lease.connection.close()


class SQLiteBackend(Backend):
    """Storage SPI 2 on an SQLite file, created (with its schema) if missing."""

    def __init__(
        self,
        resources: Sequence[Resource],
        path: str | Path,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        driver = self._sqlite = SQLiteDriver(Path(path), busy_timeout)
        super().__init__(resources, driver)
        try:
            driver.open(tuple(self.resources.values()))
        except sqlite3.OperationalError as error:
            driver.close()
            if is_transient(error):  # another writer holds the file: worth a retry, raw
                raise
            # A missing directory, a read-only file system, a directory: name the file.
            raise StoreUnavailableError(f"cannot open SQLite database {path}: {error}") from None
        except BaseException:
            driver.close()
            raise

    @property
    def path(self) -> Path:
        """The database file."""
        return self._sqlite.path
