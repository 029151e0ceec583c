"""The schema versions of what a store holds, checked on every open.

Each component of a store records its version in one table,
:data:`SCHEMA_TABLE`: a log one row keyed by its events table, the Storage
SPI's schema the rows ``storage`` and :data:`EVENTS_COMPONENT`.

The log is at version 1 and reads no other. The storage schema's version 1
is the original layout. Version 2 adds, on PostgreSQL, the id of the writing
transaction to each event (``storage_events.transaction_id``, ``xid8``) and a
notification on every commit that appends events, which is what followers
of the log need (:mod:`nenjim.infrastructure.storage.follow`); on SQLite the
tables are unchanged. Version 3 keys SQLite's ``storage_events`` by its
notification id (one b-tree fewer written per event); on PostgreSQL nothing
changes. Version 4 notifies, on PostgreSQL, only while a follower listens
(the trigger's function is replaced); on SQLite nothing changes. Version 5
keeps a blob's bytes once, in its ``BlobPut`` event, and a new blob's
``storage_blobs`` row holds none; rows written before keep theirs and are
read as before, so the upgrade rewrites nothing. A build that reads up to
version 4 would serve such a row's empty bytes: it refuses the store. An older
storage schema is upgraded in place on open; a store of a later version
than this build's is refused. The rows of ``storage_events`` that the log
transfer reads and writes did not change: their own version stays 1.
"""

from __future__ import annotations

from collections.abc import Callable

from nenjim.infrastructure.store.errors import LogDamagedError, StoreError, StoreUnavailableError

SCHEMA_TABLE = "nenjim_schema"
"""The versions' table: ``component TEXT PRIMARY KEY, version INTEGER``."""

IDENTITY_TABLE = "nenjim_identity"
"""Which owner a log belongs to: one row per log (keyed by its events table), written
once by the first owner to open the log and never changed."""

LOG_SCHEMA_VERSION = 1
"""The version of a log's tables."""

STORAGE_SCHEMA_VERSION = 5
"""The version a storage schema has once this build opened it."""

FOLLOWED_SINCE = 2
"""The first storage version whose log followers can read, and so whose projections may
have been tracked."""

EVENTS_COMPONENT = "storage.events"
"""The row versioning the exported columns of ``storage_events``."""

EVENTS_VERSION = 1


class IncompatibleStoreError(StoreError):
    """The store holds a log or storage of a schema version this build cannot read."""

    def __init__(self, where: str, what: str, found: int, oldest: int, newest: int) -> None:
        versions = f"version {newest}" if oldest == newest else f"versions {oldest} to {newest}"
        super().__init__(
            f"{where} holds {what} of schema version {found}; this build reads {versions} "
            "only. Use a matching nenjim release or a new database."
        )
        self.found = found


def check_log_version(where: str, found: int | None) -> None:
    """Refuse a log whose recorded version is not ours (``None``: just created)."""
    if found is not None and found != LOG_SCHEMA_VERSION:
        raise IncompatibleStoreError(
            where, "a nenjim log", found, LOG_SCHEMA_VERSION, LOG_SCHEMA_VERSION
        )


def check_storage_version(where: str, found: int | None) -> None:
    """Refuse a storage version this build does not know (``None``: being created)."""
    if found is not None and not 1 <= found <= STORAGE_SCHEMA_VERSION:
        raise IncompatibleStoreError(where, "nenjim storage", found, 1, STORAGE_SCHEMA_VERSION)


def require_log_tables(where: str, events: str, has_table: Callable[[str], bool]) -> None:
    """Refuse to read a log whose tables (its events, claims and schema tables, which
    ``has_table`` finds in the store or not) are not all there.

    None of them, or neither the events nor the claims table: the store holds no
    such log (``StoreUnavailableError``); some of them: the store is damaged
    (``LogDamagedError``, naming the missing table).
    """
    claims = events.removesuffix("_events") + "_claims"
    present = {table for table in (events, claims, SCHEMA_TABLE) if has_table(table)}
    if events not in present and claims not in present:
        raise StoreUnavailableError(f"{where} holds no log {events!r}")
    for table in (events, claims, SCHEMA_TABLE):
        if table not in present:
            raise LogDamagedError(
                f"{where}: table {table} of the log {events!r} is missing: the store is damaged"
            )


def recorded_version(where: str, events: str, found: object) -> int:
    """The schema version read for ``events`` (``found``: the row's value, ``None`` for no
    row); ``LogDamagedError`` when the row is missing or holds no integer."""
    if type(found) is not int:
        raise LogDamagedError(
            f"{where}: {SCHEMA_TABLE} holds {'no' if found is None else repr(found)} schema "
            f"version for the log {events!r}: the store is damaged"
        )
    return found
