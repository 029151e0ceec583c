"""SQLite recorder with the claims table, written inside the events' transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError, InterfaceError, StoredEvent
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteFactory,
)
from eventsourcing.utils import Environment, EnvType

from nenjim.infrastructure.log.claims import Claim, ClaimConflictError, SqlClaims
from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.log.commits import (
    AppendRequest,
    StoredBatch,
    committed_appends,
    log_commits,
)
from nenjim.infrastructure.log.tiles import Tiling, new_entries
from nenjim.infrastructure.sqlite.files import (
    SQLITE_READ_ONLY,
    enable_wal,
    reading_uri,
    retry_when_locked,
)
from nenjim.infrastructure.sqlite.tiles import SQLiteTiles
from nenjim.infrastructure.store.errors import LogClosedError
from nenjim.infrastructure.store.versions import (
    IDENTITY_TABLE,
    LOG_SCHEMA_VERSION,
    SCHEMA_TABLE,
    check_log_version,
    recorded_version,
    require_log_tables,
)

# The page cache of an append in batches, in SQLite's notation (negative: KiB).
_BATCHES_CACHE_SIZE = -256

STATEMENT_CACHE = 128
"""Compiled statements each connection keeps (the ``sqlite3`` module's default)."""


class ClosingSQLiteConnectionPool(SQLiteConnectionPool):
    """``eventsourcing``'s SQLite pool, except that ``close()`` never closes a busy connection.

    The stock pool closes the connections in use too, and closing an SQLite
    connection while another thread runs a statement on it crashes the
    process (SQLite frees what the statement still uses). Here ``close()``
    closes the idle connections; each busy one is closed by its own thread
    when it returns it. Every request for a connection after ``close()``
    raises ``LogClosedError``.
    """

    _closing = False
    read_only = False
    """Connections read the file and never write it (set before the first connection)."""

    @property
    def closed(self) -> bool:
        return self._closing

    def _create_connection(self) -> SQLiteConnection:
        # The stock pool passes ``cached_statements=True``, a cache of one statement:
        # every statement but a repeat of the one before was compiled again, a third of
        # the time an append spends in SQLite. Otherwise this is the stock connection.
        try:
            database = reading_uri(Path(self.db_name)) if self.read_only else self.db_name
            connection = sqlite3.connect(
                database=database,
                uri=True,
                check_same_thread=False,
                isolation_level=None,
                cached_statements=STATEMENT_CACHE,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as error:
            raise InterfaceError(error) from error
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal and not self.read_only:
            enable_wal(connection)
            self.is_journal_mode_wal = True
        connection.row_factory = sqlite3.Row
        return SQLiteConnection(sqlite_conn=connection, max_age=self.max_age)

    def get_connection(
        self, timeout: float | None = None, *, is_writer: bool | None = None
    ) -> SQLiteConnection:
        self._refuse_if_closing()
        connection = super().get_connection(timeout, is_writer=is_writer)
        with self._put_condition:
            closing = self._closing
        if closing:  # close() ran while this request waited: hand it back, closed
            self.put_connection(connection)
            self._refuse_if_closing()
        return connection

    def put_connection(self, conn: SQLiteConnection) -> None:
        with self._put_condition:  # reentrant: the base method takes it again
            if self._closing:
                conn.close()  # its thread is done with it: safe to close here
            super().put_connection(conn)

    def close(self) -> None:
        with self._put_condition:
            self._closing = True
            idle = list(self._pool)
            self._pool.clear()
        for connection in idle:
            connection.close()

    def _refuse_if_closing(self) -> None:
        if self._closing:
            raise LogClosedError(f"SQLite store {self.db_name} used after close()")


class ClaimingSQLiteFactory(SQLiteFactory):
    """``eventsourcing``'s SQLite factory, making the claiming recorder.

    Its datastore's pool is a :class:`ClosingSQLiteConnectionPool` with the
    stock pool's settings (the base factory builds the stock one, unused);
    with ``NENJIM_SQLITE_READ_ONLY=yes`` its connections only read the file.
    """

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        stock = self.datastore.pool
        self.datastore.pool = ClosingSQLiteConnectionPool(
            db_name=stock.db_name,
            lock_timeout=stock.lock_timeout,
            pool_size=stock.pool_size,
            max_overflow=stock.max_overflow,
            pool_timeout=stock.pool_timeout,
            max_age=stock.max_age,
            pre_ping=stock.pre_ping,
        )
        self.datastore.pool.read_only = self.env.get(SQLITE_READ_ONLY) == "yes"
        stock.close()

    def claiming_recorder(
        self, name: str, tiling: Tiling | None = None
    ) -> ClaimingSQLiteApplicationRecorder:
        """The recorder of the log called ``name`` (tables ``<name>_events``, ...)."""
        return ClaimingSQLiteApplicationRecorder(self.datastore, name=name, tiling=tiling)


class ClaimingSQLiteApplicationRecorder(ClosableRecorder, SqlClaims, SQLiteApplicationRecorder):
    """``SQLiteApplicationRecorder`` plus a ``(namespace, key) -> owner`` claims table.

    Notification ids are rowids of a table without AUTOINCREMENT: gap-free,
    since a rolled-back insert does not consume one, and in commit order,
    since SQLite has one writer at a time.
    """

    def __init__(
        self, datastore: SQLiteDatastore, *, name: str, tiling: Tiling | None = None
    ) -> None:
        self.claims_table_name = f"{name}_claims"  # the base __init__ builds the DDL
        super().__init__(datastore, events_table_name=f"{name}_events")
        self.where = f"SQLite store {self.datastore.pool.db_name}"
        self._claims_statements("?", self.events_table_name, self.claims_table_name, IDENTITY_TABLE)
        db_name = self.datastore.pool.db_name
        # Appends of every log application of this process on the same file share commits.
        database: object = (
            id(datastore) if self.datastore.pool.is_sqlite_memory_mode else Path(db_name).resolve()
        )
        self._commits = log_commits(
            ("sqlite", database, self.events_table_name, tiling is not None)
        )
        self.recent_commits = self._commits.recent
        self.tiles = (
            None
            if tiling is None
            else SQLiteTiles(
                datastore,
                name=name,
                events_table=self.events_table_name,
                tiling=tiling,
                originator_id=self.convert_originator_id,
                committed_edge=self._commits.committed_edge,
            )
        )

    def max_notification_id(self) -> int:
        # The mixin's check, keeping SQLite's narrower type (0 for an empty log).
        with self.while_open():
            return SQLiteApplicationRecorder.max_notification_id(self)

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            f"CREATE TABLE IF NOT EXISTS {self.claims_table_name} ("
            "namespace TEXT NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL, "
            "PRIMARY KEY (namespace, key)) WITHOUT ROWID",
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
            "component TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID",
            f"INSERT OR IGNORE INTO {SCHEMA_TABLE} VALUES "
            f"('{self.events_table_name}', {LOG_SCHEMA_VERSION})",
            f"CREATE TABLE IF NOT EXISTS {IDENTITY_TABLE} ("
            "component TEXT PRIMARY KEY, identity TEXT NOT NULL) WITHOUT ROWID",
        ]

    def create_table(self) -> None:
        retry_when_locked(super().create_table)  # every statement is idempotent
        self._check_version()

    def require_table(self) -> None:
        """Check that the log exists and is ours, creating nothing."""
        require_log_tables(self.where, self.events_table_name, self._has_table)
        self._check_version()

    def _check_version(self) -> None:
        with self._reading() as c:
            c.execute(
                f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?",
                (self.events_table_name,),
            )
            row = c.fetchone()
        where = f"SQLite database {self.datastore.pool.db_name}"
        version = recorded_version(where, self.events_table_name, None if row is None else row[0])
        check_log_version(where, version)

    def _has_table(self, table: str) -> bool:
        with self._reading() as c:
            c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
            return c.fetchone() is not None

    @contextmanager
    def _reading(self) -> Iterator[SQLiteCursor]:
        with self.datastore.transaction(commit=False) as c:
            c.sqlite_cursor.row_factory = None  # plain tuples
            yield c

    @contextmanager
    def _writing(self) -> Iterator[SQLiteCursor]:
        with self.datastore.transaction(commit=True) as c:
            c.sqlite_cursor.row_factory = None
            yield c

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self.while_open():
            return self._commits.group.submit(
                AppendRequest(stored_events, kwargs), self._write_batch
            ).outcome()

    def insert_batches(self, batches: Iterable[StoredBatch]) -> list[int]:
        """Insert each batch as it comes, all in one transaction; the notification ids.

        The process's other appends to this log wait until the transaction ends.
        """
        ids: list[int] = []
        with (
            self.while_open(),
            self._commits.group.exclusive(),
            self._commits.committed_edge.transaction(),
            self.datastore.transaction(commit=True) as c,
        ):
            # Such an append writes far more pages than it reads back: a small page cache
            # spills them to the log file as it goes (uncommitted, as a rollback needs)
            # instead of holding the connection's whole cache (2 MiB) of them in memory.
            c.execute("PRAGMA cache_size")
            cache_size = int(c.fetchone()[0])
            c.execute(f"PRAGMA cache_size = {_BATCHES_CACHE_SIZE}")
            try:
                for stored_events, kwargs in batches:
                    ids.extend(self._insert_events(c, stored_events, **kwargs) or ())
            finally:
                c.execute(f"PRAGMA cache_size = {cache_size}")
        return ids

    def _write_batch(self, batch: list[AppendRequest]) -> None:
        """Write the batch in one transaction; a rejected request rolls back its savepoint."""
        with (
            self._commits.committed_edge.transaction(),
            self.datastore.transaction(commit=True) as c,
        ):
            if len(batch) == 1:  # alone: its error is the transaction's, as without grouping
                only = batch[0]
                only.result = self._insert_events(c, only.stored_events, **only.kwargs)
            else:
                for request in batch:
                    self._insert_in_savepoint(c, request)
            while more := self._commits.group.absorb(batch):
                for request in more:
                    self._insert_in_savepoint(c, request)
        self._commits.recent.record(committed_appends(batch))

    def _insert_in_savepoint(self, c: SQLiteCursor, request: AppendRequest) -> None:
        c.execute("SAVEPOINT append")
        try:
            request.result = self._insert_events(c, request.stored_events, **request.kwargs)
        except ClaimConflictError as error:
            self._roll_back_append(c)
            request.error = error
        except sqlite3.IntegrityError as error:  # a stream version taken
            self._roll_back_append(c)
            request.error = IntegrityError(error)
            request.error.__cause__ = error
        c.execute("RELEASE append")

    def _roll_back_append(self, c: SQLiteCursor) -> None:
        c.execute("ROLLBACK TO append")
        self._commits.committed_edge.discard()

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if len(stored_events) > 1:
            ids: Sequence[int] | None = self._insert_many(c, stored_events)
        else:
            ids = super()._insert_events(c, stored_events, **kwargs)
        claims: Sequence[Claim] = kwargs.get("claims", ())
        if claims:
            self._insert_claims(c, claims)
        if self.tiles is not None:
            self.tiles.extend(c, ids or (), new_entries(ids, kwargs))
        return ids

    def _insert_many(self, c: SQLiteCursor, stored_events: Sequence[StoredEvent]) -> list[int]:
        """Insert events in one statement; their notification ids.

        The transaction holds the write lock, and a rowid without AUTOINCREMENT
        is one above the largest, so the events take the ids that end at the
        last one inserted.
        """
        c.executemany(
            self.insert_events_statement,
            [
                (
                    s.originator_id.hex if isinstance(s.originator_id, UUID) else s.originator_id,
                    s.originator_version,
                    s.topic,
                    s.state,
                )
                for s in stored_events
            ],
        )
        c.execute("SELECT last_insert_rowid()")
        last = int(c.fetchone()[0])
        return list(range(last - len(stored_events) + 1, last + 1))

    def _insert_claims(self, c: SQLiteCursor, claims: Sequence[Claim]) -> None:
        """Insert claims; a key held already must be held by the same owner.

        The events' insert took the write lock, so this read-after-write is consistent;
        owners are read back only when a key was taken already.
        """
        c.executemany(
            f"INSERT INTO {self.claims_table_name} VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, key) DO NOTHING",
            [(claim.namespace, claim.key, claim.owner) for claim in claims],
        )
        if c.sqlite_cursor.rowcount == len(claims):
            return
        for claim in claims:
            holder = self._owner(c, claim.namespace, claim.key)
            if holder != claim.owner:
                raise ClaimConflictError(claim, str(holder))


def log_table_statements(name: str) -> list[str]:
    """The idempotent DDL of the log called ``name``, to run in a caller's own transaction.

    The statements are the recorder's own (built without connecting), so a
    log created this way is the log a ``LogApplication`` creates.
    """
    datastore = SQLiteDatastore(":memory:")  # never connected: only the statements are built
    try:
        return list(ClaimingSQLiteApplicationRecorder(datastore, name=name).create_table_statements)
    finally:
        datastore.close()
