"""``SQLiteBackend``: the SQL driver on one SQLite file.

Each thread has its own connection (``isolation_level=None``: transactions
are issued by hand). The outermost scope is ``BEGIN IMMEDIATE``, which takes
the database's single writer lock at once, so every transaction, reads
included, runs alone and the driver's pre-checks are exact; nested scopes
are ``SAVEPOINT``/``RELEASE``/``ROLLBACK TO``. The file is in WAL mode, and a
writer waits up to ``busy_timeout`` seconds for the lock; past that SQLite's
``database is locked`` error surfaces as the raw ``sqlite3.OperationalError``
(it is not a conflict, and nothing retries it).

Root-view operations (one operation, no transaction of the caller's open)
are group-committed (:mod:`nenjim.infrastructure.store.group_commit`): those
that arrive while another batch commits share one ``BEGIN IMMEDIATE`` ...
``COMMIT``, so one fsync. A batch whose items all succeed runs them one
after the other; one where an item raises is rolled back and run again with
each item in a savepoint of its own, so that item is rolled back alone and
the others commit in arrival order. One that finds nothing running and nobody
queued runs at once, without a savepoint. Before it commits, a batch, or a
lone operation, takes in what queued while it ran (up to the group's batch
limit): writers that come back at different moments then share commits
instead of settling into two halves that commit in turn.
Read-only operations (``check()``) are not queued at all: a transaction that
wrote nothing commits without an fsync, so there is nothing to share; each
takes the writer lock on its own thread's connection, as a hand-written
reader would.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, TypeVar, cast

from nenjim.infrastructure.sqlite import KIND
from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.sqlite.files import enable_wal, read_only_reason
from nenjim.infrastructure.storage.backend import Backend, Scope, close_scope
from nenjim.infrastructure.storage.driver import StorageDriver
from nenjim.infrastructure.storage.errors import BackendClosedError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import SqlDriver, schema
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.storage.view import View
from nenjim.infrastructure.store.errors import StoreReadOnlyError, StoreUnavailableError
from nenjim.infrastructure.store.group_commit import GroupCommit, Pending
from nenjim.infrastructure.store.transient import is_transient
from nenjim.infrastructure.store.urls import StoreLocation

_T = TypeVar("_T")

DEFAULT_BUSY_TIMEOUT = 30.0
"""Seconds a transaction waits for another connection's writer lock."""


class _TransactionLostError(Exception):
    """SQLite rolled a batch's whole transaction back when one of its items failed."""


class _IsolateItemsError(Exception):
    """An item of a batch run without savepoints failed: run the batch again in savepoints."""


class _Operation(Pending[Any]):
    """One root-view operation submitted to the group commit."""

    __slots__ = ("operation",)

    def __init__(self, operation: Callable[[Session], Any]) -> None:
        super().__init__()
        self.operation = operation


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

    kind = KIND.name
    one_writer = True

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
        self.group: GroupCommit[_Operation] = GroupCommit()

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

    def run_one(
        self, operation: Callable[[Session], _T], batch: list[_Operation] | None = None
    ) -> _T:
        """``operation`` in a transaction of its own, committed: a reader's, or the lone
        item of a group's ``batch``, with the operations that queued meanwhile taken into
        ``batch`` and committed with it.

        :meth:`transaction` unrolled: no generator, no savepoint, one ``Session``. The
        operations taken in run after ``operation`` as a batch's items do; should one of
        them raise, the whole batch runs again with each item in a savepoint.
        """
        lease = self._lease()
        try:
            connection = lease.connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                session = Session(connection, self.dialect)
                result = operation(session)
                if batch is not None:
                    self._absorb(session, batch)
                connection.execute("COMMIT")
                return result
            except _IsolateItemsError:
                self._rollback(lease)
            except BaseException:
                self._rollback(lease)
                raise  # a failed COMMIT: every item's error (nothing of theirs was written)
        finally:
            self._release(lease)
        assert batch is not None  # only an item taken in raises _IsolateItemsError
        for item in batch:
            item.result = item.error = None
        self._run_items(batch, isolated=True, absorbing=False)
        # Its own error, if it failed this time, stays its own: raised, it would be
        # every item's, committed or not.
        return cast("_T", batch[0].result)

    @contextmanager
    def reads(self) -> Iterator[Session]:
        """A session for reads only on this thread's connection, without ``BEGIN`` or
        ``COMMIT``: in WAL mode each statement is a read transaction of its own, seeing the
        last commit when it started, and waits for no writer."""
        lease = self._lease()
        try:
            yield Session(lease.connection, self.dialect)
        finally:
            self._release(lease)

    def _absorb(self, session: Session, batch: list[_Operation]) -> None:
        """Run, in the open transaction, what queued while ``batch`` ran, until nothing is
        queued or the batch is full."""
        while more := self.group.absorb(batch):
            for item in more:
                self._run_item(session, item, False)

    def run_batch(self, batch: list[_Operation]) -> None:
        """Run ``batch`` in one transaction of this thread's connection and commit once.

        A lone operation runs as if ungrouped (:meth:`run_one`). Otherwise the
        items first run one after the other without savepoints. Should one
        raise, that transaction is rolled back and the batch runs again with
        each item in a savepoint: one that raises is rolled back to it and
        keeps its error, the others go on. Should SQLite have rolled back the
        whole transaction (a full disk, an I/O error), the batch restarts
        without the items that failed, so an item never fails for another's
        error. A failed ``BEGIN`` or ``COMMIT`` is every surviving item's
        error (raised to :class:`GroupCommit`).
        """
        if len(batch) == 1:
            own = batch[0]
            own.result = self.run_one(own.operation, batch)
        else:
            self._run_items(batch, isolated=False, absorbing=True)

    def _run_items(self, batch: list[_Operation], isolated: bool, absorbing: bool) -> None:
        """Try ``batch`` until every item has its outcome; only the first attempt takes in
        what queues (``absorbing``)."""
        remaining = batch
        while remaining:
            remaining, isolated = self._try_batch(remaining, isolated, absorbing)
            absorbing = False

    def _try_batch(
        self, batch: list[_Operation], isolated: bool, absorbing: bool
    ) -> tuple[list[_Operation], bool]:
        """Run and commit ``batch`` (``absorbing``: with what queues meanwhile, added to
        it); the items to run again, and whether in savepoints."""
        try:
            with self.transaction(None) as session:
                for item in batch:
                    self._run_item(session, item, isolated)
                if absorbing:
                    self._absorb(session, batch)
        except _IsolateItemsError:
            # Rolled back: every item runs again, from the start, in savepoints.
            for item in batch:
                item.result = item.error = None
            return batch, True
        except _TransactionLostError:
            survivors = [item for item in batch if item.error is None]
            for item in survivors:
                item.result = None
            return survivors, True
        return [], False

    def _run_item(self, session: Session, item: _Operation, isolated: bool) -> None:
        # Two statements per item bought only for a batch where one item fails:
        # without them, that failure rolls back the transaction instead.
        connection = session.connection
        if isolated:
            connection.execute("SAVEPOINT storage_group_item")
        try:
            item.result = item.operation(session)
        except Exception as error:
            item.fail(error)
            session.guards = []  # anchors it queued are its own, not the next item's
            if not isolated:
                raise _IsolateItemsError from None
            if not connection.in_transaction:
                raise _TransactionLostError from None
            connection.execute("ROLLBACK TO storage_group_item")
        if isolated:
            connection.execute("RELEASE storage_group_item")

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
        if not lease.connection.in_transaction:
            return  # SQLite already rolled back (a full disk, an I/O error)
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
        file = Path(path)
        # A backend writes (its schema, its writer lock even to read): on read-only
        # media it is refused at once, not at its first write.
        if file.is_file() and (read_only := read_only_reason(file)) is not None:
            raise StoreReadOnlyError(f"SQLite database {path} is read-only ({read_only})")
        if not file.exists() and file.parent.is_dir() and not os.access(file.parent, os.W_OK):
            raise StoreReadOnlyError(
                f"cannot create SQLite database {path}: directory {file.parent} is read-only"
            )
        driver = self._sqlite = SQLiteDriver(file, busy_timeout)
        self._serial = threading.Lock()
        # Lone reads (run_reading, read_alone) run one at a time: they are CPU work under
        # the interpreter lock, which every SQLite call lets go of; side by side, each of
        # those hands it to another reader and waits to get it back (the convoy).
        self._readers = threading.RLock()
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

    @classmethod
    def at(cls, resources: Sequence[Resource], location: StoreLocation) -> SQLiteBackend:
        """The backend on the file a store URL names."""
        return cls(resources, location.env["SQLITE_DBNAME"])

    def run_alone(
        self, operation: Callable[[Any, StorageDriver[Any]], _T], *, writes: bool = True
    ) -> _T:
        """One root-view operation, group-committed with those that arrive with it.

        One that only reads has no fsync to share (a transaction that wrote
        nothing commits without one): it takes the writer lock on its own
        connection, as a hand-written reader would, instead of waiting in the
        queue for a batch and paying a savepoint in it.
        """
        self.ensure_open()
        driver = self._sqlite
        if not writes:
            return driver.run_one(lambda session: operation(session, driver))
        submitted = _Operation(lambda session: operation(session, driver))
        return cast("_T", driver.group.submit(submitted, driver.run_batch).outcome())

    def run_grouped(self, function: Callable[[View], _T]) -> _T:
        """``function(view)`` as one item of the group commit, in a scope of its own on the
        leader's connection (see :meth:`Backend.run_grouped`); inline in this thread's open
        transaction, as a savepoint of it."""
        if self.current_scope() is not None:
            return super().run_grouped(function)
        self.ensure_open()
        driver = self._sqlite
        submitted = _Operation(lambda session: self._in_scope(session, function))
        return cast("_T", driver.group.submit(submitted, driver.run_batch).outcome())

    def _in_scope(
        self, session: Session, function: Callable[[View], _T], *, read_only: bool = False
    ) -> _T:
        """``function`` on a scope over ``session``, which the batch commits or rolls back
        (a failed scope raises ``TransactionError``, as a transaction's would);
        ``read_only``: a :meth:`reading` scope's."""
        stack = self._stack()
        scope = Scope(self, session, None, nullcontext(), read_only=read_only)
        stack.append(scope)
        try:
            result = function(View(self, scope))
        except BaseException as error:
            close_scope(stack, scope, error)
            raise
        close_scope(stack, scope, None)
        return result

    def run_reading(self, function: Callable[[View], _T]) -> _T:
        """``function(view)`` in a :meth:`reading` scope, without the generator context
        managers a read would otherwise enter and leave five deep (each read of a saver
        pays them), one at a time with the other lone reads (see ``__init__``); writes
        neither wait for it nor hold it up."""
        if self.current_scope() is not None:
            return super().run_reading(function)
        self.ensure_open()
        with self._readers, self._sqlite.reads() as session:
            return self._in_scope(session, function, read_only=True)

    def in_turn(self) -> AbstractContextManager[Any]:
        """The readers' lock (see ``__init__``), for a caller's reads together with the work
        on their answers: between two of its reads the block keeps the turn, which the other
        readers would otherwise take and hand back at every SQLite call."""
        return self._readers

    def read_alone(self, operation: Callable[[Any, StorageDriver[Any]], _T]) -> _T:
        """One root-view read, one at a time with the other lone reads (see ``__init__``)."""
        with self._readers:
            return super().read_alone(operation)

    @contextmanager
    def serialized(self) -> Iterator[None]:
        """Lead the group commit for the block: grouped writes queue until it ends.

        Callers first queue on a lock of their own, which wakes one of them when the block
        ends: waiting on the group's lead, every waiter wakes at each end."""
        with self._serial, self._sqlite.group.exclusive():
            yield

    @property
    def path(self) -> Path:
        """The database file."""
        return self._sqlite.path
