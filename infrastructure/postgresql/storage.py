"""``PostgresBackend``: the SQL driver on a PostgreSQL schema, through a connection pool.

The outermost scope of a thread takes a connection from a
``psycopg_pool.ConnectionPool`` and holds it until the scope ends; nested
scopes are savepoints (``conn.transaction()``) on that connection. Isolation
is READ COMMITTED: correctness rests on row locks and re-reads after them,
not on SERIALIZABLE. Guards are ``SELECT ... FOR UPDATE`` on the anchor row,
so all writes under one anchor serialise while other anchors proceed.

Nothing is retried or relabelled: a dropped connection, a deadlock or an
unknown commit outcome surfaces as the raw ``psycopg`` error. A connection
that broke is discarded when its scope ends. A transaction's ``BEGIN`` is
also the check of the connection it took, at no extra round trip: if the
connection is dead, nothing has run on it yet, so it goes back to the pool,
which replaces it, and the next idle one is tried at once. A root-view
operation whose one statement is all it writes sends that statement alone,
as a transaction of its own (no ``BEGIN``, no ``COMMIT``), on a connection
the server has said nothing on since its last answer; otherwise it begins
a transaction as every other operation does. A root-view read of one
statement (a row, a scan, a scan's keys) is sent alone in the same way. The
statements whose answer is read at once (those sent alone among them) go
through a cursor the connection keeps for each statement text, which keeps
psycopg's adapters between them. (The pool's own
``check=`` hook is not used: it costs a round trip per checkout, and after a
failed check it sleeps with exponential backoff, 1 s, 2 s, 4 s, ..., before
looking again, so a burst of dropped connections stalled every writer for
seconds while fresh connections sat idle in the pool.)

URL: ``postgresql://user:password@host:port/dbname?schema=..&pool_size=..&max_overflow=..``
and any libpq parameter (parsed by :mod:`nenjim.infrastructure.store.urls`); the pool
holds ``pool_size`` to ``pool_size + max_overflow`` connections. One direct
connection is made before the pool opens, so an unreachable server fails at
once with libpq's reason (``StoreUnavailableError``).
"""

from __future__ import annotations

import select
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from nenjim.infrastructure.postgresql import KIND
from nenjim.infrastructure.postgresql.connect import connect
from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.driver import StorageDriver
from nenjim.infrastructure.storage.errors import BackendClosedError, UnsupportedBackendError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import SqlDriver, schema
from nenjim.infrastructure.storage.sql.dialect import Dialect
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import Row, Session
from nenjim.infrastructure.store.urls import (
    POSTGRES_CONNINFO,
    StoreLocation,
    UnsupportedStoreError,
    resolve_store_url,
)

_T = TypeVar("_T")

DEFAULT_POOL_TIMEOUT = 30.0
"""Seconds a transaction waits for a pooled connection before ``psycopg_pool.PoolTimeout``."""

# Serialises schema creation across processes (CREATE ... IF NOT EXISTS races in the catalog).
_DDL_LOCK = 0x6E656E6A696D5354


@dataclass(frozen=True, slots=True)
class PostgresSettings:
    """What a storage URL says about the database, the schema and the pool."""

    conninfo: str
    schema: str
    pool_size: int
    max_overflow: int
    connect_timeout: float
    location: StoreLocation

    @property
    def where(self) -> str:
        """How messages name the store (its password is never shown)."""
        return self.location.where

    @classmethod
    def from_url(cls, url: str) -> PostgresSettings:
        """Parse ``url``; ``UnsupportedBackendError`` if it is not a usable PostgreSQL URL."""
        try:
            location = resolve_store_url(url)
            if location.store_kind is not KIND:
                raise UnsupportedStoreError(f"not a PostgreSQL URL: {location.display!r}")
        except ValueError as error:  # UnsupportedStoreError is a ValueError
            raise UnsupportedBackendError(f"cannot open PostgreSQL storage: {error}") from error
        env = location.env  # the URL's numbers are checked by resolve_store_url
        return cls(
            env[POSTGRES_CONNINFO],
            env.get("POSTGRES_SCHEMA", "public"),
            int(env["POSTGRES_POOL_SIZE"]),
            int(env["POSTGRES_MAX_OVERFLOW"]),
            float(env["POSTGRES_CONNECT_TIMEOUT"]),
            location,
        )


class PostgresDriver(SqlDriver):
    """A connection pool on one database; every table lives in one schema."""

    kind = KIND.name

    def __init__(self, settings: PostgresSettings, pool_timeout: float) -> None:
        super().__init__(PostgresDialect(settings.schema))
        self.settings = settings
        self._pool_timeout = pool_timeout
        self._pool: ConnectionPool[StorageConnection] | None = None

    @contextmanager
    def transaction(self, outer: Session | None) -> Iterator[Session]:
        if outer is not None:
            with outer.connection.transaction():
                yield outer.nested()
            return
        session = _PooledSession(self._checked_pool(), self.dialect)
        try:
            session.begin()
            yield session
        except BaseException as error:
            session.end(error)
            raise
        session.end(None)

    @contextmanager
    def reads(self) -> Iterator[Session]:
        """A session for reads only, without ``BEGIN`` or ``COMMIT`` on a quiet connection:
        each statement is a transaction of its own, seeing what was committed when it
        started, as it would inside a READ COMMITTED transaction. On a connection the
        server said something on since its last answer it begins a transaction first."""
        session = _PooledSession(self._checked_pool(), self.dialect)
        session.unbegun = session.connection.quiet()
        try:
            yield session
        except BaseException as error:
            session.end(error)
            raise
        session.end(None)

    def run_one(self, operation: Callable[[Session], _T]) -> _T:
        """``operation`` in a transaction of its own, committed (a root-view operation).

        The transaction begins with the operation's first statement, unless that
        statement is all the operation writes (:meth:`Session.alone`): then it is
        sent alone, as a transaction of its own, and ``BEGIN`` and ``COMMIT`` are
        not sent at all.
        """
        session = _PooledSession(self._checked_pool(), self.dialect)
        try:
            result = operation(session)
        except BaseException as error:
            session.end(error)
            raise
        session.end(None)
        return result

    def _checked_pool(self) -> ConnectionPool[StorageConnection]:
        pool = self._pool
        if pool is None:
            raise BackendClosedError("PostgreSQL storage used before open() or after close()")
        return pool

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _open_schema(self, layout: Layout) -> None:
        settings = self.settings
        connect(settings.location).close()
        pool = ConnectionPool(
            settings.conninfo,
            connection_class=StorageConnection,
            min_size=settings.pool_size,
            max_size=settings.pool_size + settings.max_overflow,
            timeout=self._pool_timeout,
            # Transactions are explicit conn.transaction() blocks. The fallback
            # name (used unless the URL or PGAPPNAME names the application)
            # tells an administrator which schema a session serves.
            kwargs={
                "autocommit": True,
                "fallback_application_name": f"nenjim-storage:{settings.schema}"[:63],
            },
            configure=_configure,
            name=f"nenjim-storage-{settings.schema}",
            open=False,
        )
        try:
            pool.open(wait=True, timeout=settings.connect_timeout)
            self._pool = pool
            with self.transaction(None) as session:
                session.execute("SELECT pg_advisory_xact_lock(?)", (_DDL_LOCK,))
                schema.apply(session, layout, f"PostgreSQL schema {settings.schema!r}")
        except BaseException:
            self._pool = None
            pool.close()
            raise


class PostgresBackend(Backend):
    """Storage SPI 2 on PostgreSQL; the schema is created (idempotently) on open."""

    lone_writes_skip_transaction = True

    def __init__(
        self,
        resources: Sequence[Resource],
        url: str,
        *,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    ) -> None:
        driver = self._postgres = PostgresDriver(PostgresSettings.from_url(url), pool_timeout)
        super().__init__(resources, driver)
        driver.open(tuple(self.resources.values()))

    @classmethod
    def at(cls, resources: Sequence[Resource], location: StoreLocation) -> PostgresBackend:
        """The backend on the schema a store URL names."""
        return cls(resources, location.url)

    def run_alone(
        self, operation: Callable[[Any, StorageDriver[Any]], _T], *, writes: bool = True
    ) -> _T:
        """One root-view operation in a transaction of its own, without a scope around it:
        nothing but the operation runs in that transaction."""
        self.ensure_open()
        driver = self._postgres
        return driver.run_one(lambda session: operation(session, driver))

    @property
    def schema(self) -> str:
        """The schema holding the tables."""
        return self._postgres.settings.schema


KEPT_CURSORS = 64
"""How many statement texts a pooled connection keeps a cursor for."""


class StorageConnection(psycopg.Connection[Any]):
    """A pooled connection that keeps, for as long as it lives, what every operation on it
    would otherwise make again: a cursor for each statement text whose answer is read at
    once, and the poll that tells whether the server sent anything since its last answer.

    A cursor that runs the same query text again keeps its adapters (psycopg makes them
    anew for each new cursor, and each new query text): for a one-entry append, whose
    arrays need the most of them, that is about a third of the client's instructions.
    """

    _cursors: OrderedDict[str, psycopg.Cursor[Any]] | None = None
    _readable: select.poll | None = None

    def statement_cursor(self, text: str) -> psycopg.Cursor[Any]:
        """The cursor this connection runs ``text`` on when its answer is read before the
        connection sends anything else (the most recently used ``KEPT_CURSORS`` texts)."""
        cursors = self._cursors
        if cursors is None:
            cursors = self._cursors = OrderedDict()
        cursor = cursors.get(text)
        if cursor is None:
            cursor = cursors[text] = self.cursor()
            if len(cursors) > KEPT_CURSORS:
                cursors.popitem(last=False)
        else:
            cursors.move_to_end(text)
        return cursor

    def quiet(self) -> bool:
        """Whether the server sent nothing on this connection since its last answer."""
        if self.broken or self.closed:
            return False
        readable = self._readable
        if readable is None:
            readable = self._readable = select.poll()
            readable.register(self.fileno(), select.POLLIN)
        return not readable.poll(0)


class _PooledSession(Session):
    """A session on a pooled connection whose transaction begins with its first statement
    (or at :meth:`begin`); :meth:`end` commits it (rolls it back after an error) and
    gives the connection back.

    ``BEGIN`` is the first round trip on the connection, so a dead one fails there
    before anything ran: it goes back to the pool to be replaced and the next is tried
    at once, without sleeping, within the pool's ``timeout`` in all (then
    ``PoolTimeout``). A statement sent alone (:meth:`alone`) before the transaction
    began is a transaction of its own (the connection is in autocommit mode): it is
    sent so only on a connection that is quiet, i.e. the server sent nothing since its
    last answer (a server that ended the session sends its reason, then closes; both
    make the socket readable). Any other goes through ``BEGIN`` first.
    """

    def __init__(self, pool: ConnectionPool[StorageConnection], dialect: Dialect) -> None:
        self._pool = pool
        self._deadline = time.monotonic() + pool.timeout
        self._began: Any = None
        self.unbegun = False
        """Whether statements are sent without a transaction (a quiet connection's reads)."""
        super().__init__(_checked_out(pool, self._deadline), dialect)

    def begin(self) -> None:
        """Begin the transaction unless it began (on the next pooled connection if this one
        is dead)."""
        while self._began is None:
            connection = self.connection
            try:
                began = connection.transaction()
                began.__enter__()
            except psycopg.OperationalError:
                if not connection.broken:
                    raise
                # The pool discards a broken connection and opens another.
                self.connection = None
                self._pool.putconn(connection)
                self.connection = _checked_out(self._pool, self._deadline)
                continue
            self._began = began

    def end(self, error: BaseException | None) -> None:
        """Commit the transaction if it began (roll it back after ``error``), then give the
        connection back (a broken one is discarded by the pool)."""
        try:
            if self._began is not None:
                if error is None:
                    self._began.__exit__(None, None, None)
                else:
                    self._began.__exit__(type(error), error, error.__traceback__)
        finally:
            if self.connection is not None:
                self._pool.putconn(self.connection)

    def send(self, template: str, params: Sequence[object] = ()) -> Any:
        if not self.unbegun:
            self.begin()
        return super().send(template, params)

    def pipeline(self) -> AbstractContextManager[Any]:
        self.begin()
        return super().pipeline()

    def execute_ddl(self, statement: str) -> None:
        self.begin()
        super().execute_ddl(statement)

    def alone(
        self, template: str, params: Sequence[object] = (), *, in_transaction: str | None = None
    ) -> Any:
        connection: StorageConnection = self.connection
        if self._began is None and connection.quiet():
            # Autocommit: its own transaction (see above).
            return _read_kept(connection, self.text(template), params, _Answer)
        return self._read(in_transaction or template, params, _Answer)

    def execute(self, template: str, params: Sequence[object] = ()) -> int:
        rowcount: int = self._read(template, params, lambda cursor: cursor.rowcount)
        return rowcount

    def one(self, template: str, params: Sequence[object] = ()) -> Row | None:
        row: Row | None = self._read(template, params, lambda cursor: cursor.fetchone())
        return row

    def all(self, template: str, params: Sequence[object] = ()) -> list[Row]:
        rows: list[Row] = self._read(template, params, lambda cursor: cursor.fetchall())
        return rows

    def _read(self, template: str, params: Sequence[object], read: Callable[[Any], _T]) -> _T:
        """``read`` of the cursor of a statement whose answer is read before the next is
        sent: on the connection's cursor for its text (outside a pipeline, where answers
        wait: a cursor of its own)."""
        if not self.unbegun:
            self.begin()
        connection: StorageConnection = self.connection
        if connection.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF:
            return read(super().send(template, params))
        return _read_kept(connection, self.text(template), params, read)


def _read_kept(
    connection: StorageConnection,
    text: str,
    params: Sequence[object],
    read: Callable[[psycopg.Cursor[Any]], _T],
) -> _T:
    """``read`` of the answer to ``text``, run on the connection's cursor for it; then the
    cursor lets go of the statement's parameters and answer, whether it succeeded or not
    (a kept cursor would hold them, a blob's bytes or a scan's rows, until its text runs
    again)."""
    cursor = connection.statement_cursor(text)
    try:
        return read(cursor.execute(text, params))
    finally:
        cursor._reset()  # psycopg's one call that drops exactly these, not the adapters


_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK


class _Answer:
    """A statement's answer, read off its cursor: its ``rowcount`` and, for a statement
    that returns rows, ``fetchall()``."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self.rowcount: int = cursor.rowcount
        # Whether the statement returned rows, as ``cursor.description`` tells, without
        # building the columns it describes them with.
        result = cursor.pgresult
        returned = result is not None and (result.nfields or result.status == _TUPLES_OK)
        self._rows: list[Row] = cursor.fetchall() if returned else []

    def fetchall(self) -> list[Row]:
        """The rows the statement returned."""
        return self._rows


def _checked_out(pool: ConnectionPool[StorageConnection], deadline: float) -> StorageConnection:
    """A connection from ``pool``, waiting until ``deadline`` at most."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise PoolTimeout(f"couldn't get a working connection after {pool.timeout:.2f} sec")
    try:
        connection: StorageConnection = pool.getconn(timeout=remaining)
    except PoolClosed as error:
        raise BackendClosedError("PostgreSQL storage used after close()") from error
    return connection


def _configure(connection: psycopg.Connection[Any]) -> None:
    # The locking design assumes READ COMMITTED: a new statement sees rows
    # committed by the writer whose lock it waited for. Never inherit a
    # server default such as SERIALIZABLE.
    connection.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
    # A jsonb column (attributes) is read as its text: the SQL driver parses and checks
    # each distinct text once (a thread's write rows share theirs), where psycopg's loader
    # would parse every row to a new dict.
    connection.adapters.register_loader("jsonb", TextLoader)
    # Each statement is prepared at its first run and planned once, for any parameters:
    # the statements are written so that one plan serves every value (the scan indexes
    # are partial on the resource, a literal in the text). A pool hands a thread each of
    # its connections in turn, so with psycopg's default (prepare at the fifth run) and
    # the server's (plan anew for the first five runs of a prepared statement) a
    # statement was planned anew up to ten times on every connection.
    connection.prepare_threshold = 0
    connection.execute("SET plan_cache_mode = force_generic_plan")
