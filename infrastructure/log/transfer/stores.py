"""Raw access to the logs of one store, for moving them: a snapshot to read, a transaction to fill.

Moving a log copies rows, not events: the bytes, ids and stream positions
are kept exactly, so nothing goes through an application. A
:class:`LogStore` is an SQLite file or a PostgreSQL database (its tables may
sit in several schemas, one per :class:`EventTable`); each database's store
is its kind's (:mod:`nenjim.infrastructure.store.kinds`), imported only for a store
of that kind.

- :meth:`LogStore.snapshot` reads one consistent state of every log
  without blocking writers and creates nothing.
- :meth:`LogStore.filling` is one transaction that no other writer of the
  same logs can enter; it commits on a normal exit and rolls back on any
  exception, so a refused import leaves the store exactly as it was (an
  SQLite file that did not exist is removed again).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from typing import Any, ClassVar
from uuid import UUID

from nenjim.infrastructure.log.claims import Claim
from nenjim.infrastructure.log.transfer.format import LoggedEvent
from nenjim.infrastructure.log.transfer.tables import EventTable
from nenjim.infrastructure.store.errors import StoreError, StoreUnavailableError
from nenjim.infrastructure.store.kinds import durable_store_hint
from nenjim.infrastructure.store.urls import StoreLocation, UnsupportedStoreError, resolve_store_url
from nenjim.infrastructure.store.versions import IDENTITY_TABLE, SCHEMA_TABLE

PAGE = 1000
"""Rows read or written per round trip."""


class StoreNotEmptyError(StoreUnavailableError):
    """An import into a store that already holds a log, an owner or derived rows."""


class UnreadableEventError(StoreError):
    """A stored row that cannot be exported as an event (edited behind the engine's back)."""


class LogSnapshot(ABC):
    """One consistent, read-only state of a store's logs, as one transaction's connection
    sees it; the statements are each kind's SQL, spelled by :attr:`mark` and :meth:`_name`."""

    mark: ClassVar[str]
    """The driver's parameter placeholder."""

    def __init__(self, connection: Any, location: StoreLocation) -> None:
        self.connection = connection
        """The transaction's database connection (``sqlite3`` or psycopg)."""
        self.location = location

    @abstractmethod
    def _exists(self, table: EventTable, name: str) -> bool:
        """Whether the table ``name`` beside ``table`` exists."""

    @abstractmethod
    def _name(self, table: EventTable, name: str) -> str:
        """The table ``name`` beside ``table``, as a statement names it."""

    @abstractmethod
    def _id_column(self, table: EventTable) -> str:
        """The column of ``table`` that holds the notification id."""

    def holds(self, table: EventTable) -> bool:
        """Whether the events table exists."""
        return self._exists(table, table.table)

    def schema_version(self, table: EventTable) -> int | None:
        """The log's recorded schema version, if any."""
        row = self._component(table, SCHEMA_TABLE, "version", table.version_component)
        return None if row is None else int(row[0])

    def identity(self, table: EventTable) -> str | None:
        """The log's recorded owner, if any."""
        if table.identity_component is None:
            return None
        row = self._component(table, IDENTITY_TABLE, "identity", table.identity_component)
        return None if row is None else str(row[0])

    def count(self, table: EventTable) -> int:
        """How many events the log holds."""
        return self._count(table, table.table)

    def events(self, table: EventTable, after: int = 0) -> Iterator[LoggedEvent]:
        """Every event of the log above notification id ``after``, in increasing id."""
        id_, mark = self._id_column(table), self.mark
        query = (
            f"SELECT {id_}, originator_id, originator_version, topic, state "
            f"FROM {self._name(table, table.table)} WHERE {id_} > {mark} ORDER BY {id_} "
            f"LIMIT {mark}"
        )
        while True:
            rows = self.connection.execute(query, (after, PAGE)).fetchall()
            for row in rows:
                yield decode_row(table, row)
            if len(rows) < PAGE:
                return
            after = int(rows[-1][0])

    def _count(self, table: EventTable, name: str) -> int:
        row = self.connection.execute(f"SELECT count(*) FROM {self._name(table, name)}").fetchone()
        return 0 if row is None else int(row[0])

    def _component(
        self, table: EventTable, components: str, column: str, component: str
    ) -> Sequence[Any] | None:
        """The row of ``component`` in the table ``components`` (``None``: no such table)."""
        if not self._exists(table, components):
            return None
        query = (
            f"SELECT {column} FROM {self._name(table, components)} WHERE component = {self.mark}"
        )
        row: Sequence[Any] | None = self.connection.execute(query, (component,)).fetchone()
        return row


class LogFilling(LogSnapshot):
    """One open transaction on a store, for writing logs into it."""

    @abstractmethod
    def _exclude_writers(self, table: EventTable, name: str) -> str:
        """Lock the existing table ``name`` beside ``table`` against other writers until
        the transaction ends; how messages name it."""

    def occupied(self, table: EventTable) -> str | None:
        """Why the store is not empty for this log (events, owner, derived rows), else ``None``.

        Locks the log's tables against other writers until the transaction ends.
        """
        for name in (table.table, *table.companions):
            if self._exists(table, name):
                shown = self._exclude_writers(table, name)
                rows = self._count(table, name)
                if rows:
                    return f"{shown} holds {rows} rows"
        identity = self.identity(table)
        if identity is not None:
            return f"its {table.log} log belongs to {identity!r}"
        return None

    @abstractmethod
    def create_log(self, table: EventTable) -> None:
        """Create the tables of an application log (``application_log``) in this transaction."""

    @abstractmethod
    def insert_events(self, table: EventTable, events: Iterable[LoggedEvent]) -> int:
        """Insert events with their ids (in pages); how many were inserted."""

    @abstractmethod
    def finish_events(self, table: EventTable) -> None:
        """Make the database number the next event after the highest id inserted."""

    def insert_claims(self, table: EventTable, claims: Sequence[Claim]) -> None:
        """Insert an application log's claims."""
        (claims_table,) = table.companions
        mark = self.mark
        with closing(self.connection.cursor()) as cursor:
            cursor.executemany(
                f"INSERT INTO {self._name(table, claims_table)} (namespace, key, owner) "
                f"VALUES ({mark}, {mark}, {mark})",
                [(claim.namespace, claim.key, claim.owner) for claim in claims],
            )

    def record_identity(self, table: EventTable, identity: str) -> None:
        """Record the log's owner."""
        self.connection.execute(
            f"INSERT INTO {self._name(table, IDENTITY_TABLE)} (component, identity) "
            f"VALUES ({self.mark}, {self.mark})",
            (table.identity_component, identity),
        )


class LogStore(ABC):
    """An SQLite file or a PostgreSQL database whose logs are read or filled raw."""

    logs: ClassVar[type[LogFilling]]
    """The kind's reads and writes on one transaction's connection."""
    gapless_storage: bool = False
    """Whether an imported storage log must be numbered without gaps (SQLite's audit reads
    a gap as a removed event)."""

    def __init__(self, location: StoreLocation) -> None:
        self.location = location
        self.where = location.where
        """How messages name the store (a password is never shown)."""

    @property
    def schema(self) -> str | None:
        """The PostgreSQL schema the URL names (``None``: it names none; always for SQLite)."""
        return None

    @contextmanager
    def snapshot(self) -> Iterator[LogSnapshot]:
        """A read-only transaction on one consistent state (the kind's reader);
        ``StoreUnavailableError`` if the store does not exist (nothing is created)."""
        kind = self.location.store_kind
        with kind.load(kind.reader)(self.location) as connection:
            yield self.logs(connection, self.location)

    @abstractmethod
    def filling(self) -> AbstractContextManager[LogFilling]:
        """One transaction that excludes other writers of the filled logs; commits on a
        normal exit, rolls back (and removes an SQLite file it created) on an exception."""


def open_log_store(url: str) -> LogStore:
    """The store a URL names; ``UnsupportedStoreError`` for ``memory:`` or a bad URL."""
    location = resolve_store_url(url)
    kind = location.store_kind
    if kind.log_store is None:
        raise UnsupportedStoreError(
            f"{location.display} keeps nothing between processes, so it has no log to export "
            f"or import; name {durable_store_hint()}"
        )
    store: LogStore = kind.load(kind.log_store)(location)
    return store


def decode_row(table: EventTable, row: Sequence[Any]) -> LoggedEvent:
    """A stored row ``(notification id, originator id, version, topic, state)`` as an event;
    ``UnreadableEventError`` naming the row if it is not one."""
    notification_id, originator, version, topic, state = row
    where = f"{table.table} notification {notification_id}"
    if not isinstance(topic, str) or not topic:
        raise UnreadableEventError(f"{where}: the topic is not text")
    if not isinstance(state, bytes | memoryview):
        raise UnreadableEventError(f"{where}: the state is not bytes")
    if not isinstance(version, int) or version < 1:
        raise UnreadableEventError(f"{where}: originator version {version!r} is not positive")
    try:
        originator_id = originator if isinstance(originator, UUID) else UUID(str(originator))
    except ValueError:
        raise UnreadableEventError(f"{where}: originator id {originator!r} is not a UUID") from None
    return LoggedEvent(table.log, int(notification_id), originator_id, version, topic, bytes(state))
