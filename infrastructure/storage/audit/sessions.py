"""Maintenance connections to an SQL store: a read-only snapshot and an exclusive writer.

The audit and the repair open connections of their own instead of a
backend: opening a backend creates a missing store and brings its schema up
to date, while maintenance must find the store exactly as it is. A store
"exists" when its storage tables and its ``nenjim_schema`` row do; anything
less is a :class:`StoreNotFoundError` and nothing is created.

- :meth:`SqlStore.snapshot` reads one consistent state without blocking
  writers (SQLite: a deferred read transaction on a read-only connection;
  PostgreSQL: ``REPEATABLE READ READ ONLY``).
- :meth:`SqlStore.exclusive` is one transaction no other writer can enter
  (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: ``LOCK TABLE ... IN EXCLUSIVE
  MODE`` on the storage tables, which readers pass); it commits on a normal
  exit and rolls back on any exception.
- :meth:`SqlStore.compact` gives back the space of deleted and overwritten
  rows, and leaves none of their old bytes in the store's files (SQLite:
  ``VACUUM`` between two ``wal_checkpoint(TRUNCATE)``; PostgreSQL: ``VACUUM
  FULL`` of every table of the schema).

Each database's store is its kind's (:mod:`nenjim.infrastructure.store.kinds`),
imported only for a store of that kind: auditing an SQLite file never imports
psycopg.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.errors import StorageError, UnsupportedBackendError
from nenjim.infrastructure.storage.sql.dialect import Dialect
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.schema import COMPONENT
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.kinds import StoreMissingError, durable_store_hint, store_kind
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.store.urls import StoreLocation, UnsupportedStoreError, resolve_store_url
from nenjim.infrastructure.store.versions import check_storage_version

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.audit.compaction import CompactionReport

STORAGE_TABLES = ("events", "records", "heads", "ids", "blobs", "versions", "generated")
"""The dialect's table keys every storage schema has."""
WRITTEN_TABLES = ("events", "records", "heads", "ids", "blobs")
"""The tables storage writers write (and a repair locks)."""


class StoreNotFoundError(StorageError):
    """The URL names no storage: no file, no schema, or no storage tables in it."""


class IncompleteStoreError(StorageError):
    """The store holds some storage tables but not all, or no storage schema version row:
    damage (a table dropped or a row deleted behind the engine's back), not a missing
    store."""


class SqlStore(ABC):
    """An SQLite file or PostgreSQL schema holding (or said to hold) storage tables."""

    def __init__(self, location: StoreLocation, description: str, dialect: Dialect) -> None:
        self.location = location
        self.description = description
        """How messages name the store, e.g. ``SQLite database /var/state.db``."""
        self.dialect = dialect

    @staticmethod
    def from_url(url: str, purpose: str = "audit or repair") -> SqlStore:
        """The store a URL names; ``UnsupportedBackendError`` for ``memory:`` or a bad URL
        (whose message says it has nothing to ``purpose``)."""
        try:
            location = resolve_store_url(url)
        except UnsupportedStoreError as error:
            raise UnsupportedBackendError(str(error)) from error
        kind = location.store_kind
        if kind.maintenance is None:
            raise UnsupportedBackendError(
                f"{location.display} keeps nothing between processes, so it has no log to "
                f"{purpose}; name {durable_store_hint()}"
            )
        store: SqlStore = kind.load(kind.maintenance)(location)
        return store

    @staticmethod
    def of_backend(backend: Backend) -> SqlStore:
        """The store an open SQL backend works on (the in-memory backend has none)."""
        driver = backend.driver
        if not isinstance(driver, SqlDriver):
            raise UnsupportedBackendError(
                f"{type(backend).__name__} keeps no log and no inline tables to audit or repair"
            )
        kind = store_kind(driver.kind)
        store: SqlStore = kind.load(kind.maintenance).of_driver(driver)
        return store

    @classmethod
    @abstractmethod
    def of_driver(cls, driver: SqlDriver) -> SqlStore:
        """The store an open driver of this class's kind works on."""

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A read-only session on one consistent state of the store (the kind's reader)."""
        kind = self.location.store_kind
        try:
            reading = kind.load(kind.reader)(self.location)
        except StoreMissingError as error:
            raise StoreNotFoundError(str(error)) from None
        with reading as connection:
            session = Session(connection, self.dialect)
            self._require_storage(session)
            yield session

    @abstractmethod
    def exclusive(self) -> AbstractContextManager[Session]:
        """One transaction that excludes every other writer; commits on a normal exit."""

    @abstractmethod
    def compact(self, progress: Progress) -> CompactionReport:
        """Give back the space of deleted and overwritten rows, leaving none of their old
        bytes in the store's files; ``StoreNotFoundError`` (nothing created) if the store
        holds no storage. Tells ``progress`` of each step."""

    @abstractmethod
    def _has_table(self, session: Session, table: str) -> bool:
        """Whether the (schema-qualified) table exists."""

    def _require_storage(self, session: Session) -> None:
        missing = [
            name
            for name in STORAGE_TABLES
            if not self._has_table(session, self.dialect.tables[name])
        ]
        if len(missing) == len(STORAGE_TABLES):
            raise StoreNotFoundError(f"no storage in {self.description}: no storage tables")
        if missing:
            names = ", ".join(self.dialect.tables[name].split(".")[-1] for name in missing)
            raise IncompleteStoreError(
                f"incomplete storage in {self.description}: no {names} (a table was dropped)"
            )
        row = session.one("SELECT version FROM {versions} WHERE component = ?", (COMPONENT,))
        if row is None or type(row[0]) is not int:
            found = "no" if row is None else repr(row[0])
            raise IncompleteStoreError(
                f"incomplete storage in {self.description}: {found} storage schema version "
                f"in {self.dialect.tables['versions'].split('.')[-1]}"
            )
        check_storage_version(self.description, row[0])


def locked_tables(store: SqlStore) -> Iterator[str]:
    """The written tables' (schema-qualified) names, in lock order."""
    return (store.dialect.tables[name] for name in WRITTEN_TABLES)
