"""The storage schema's version: what this build writes, what it upgrades, what it refuses.

Version 1 is the original layout. Version 2 adds, on PostgreSQL, the id of
the writing transaction to each event (``storage_events.transaction_id``,
``xid8``) and a notification on every commit that appends events, which is
what followers of the log need (:mod:`nenjim.infrastructure.storage.follow`); on
SQLite the tables are unchanged. Version 3 keys SQLite's ``storage_events``
by its notification id (one b-tree fewer written per event); on PostgreSQL
nothing changes. Version 4 notifies, on PostgreSQL, only while a follower
listens (the trigger's function is replaced); on SQLite nothing changes. An
older store is upgraded in place on open; a store of a
later version than this build's is refused.

The rows of ``storage_events`` that the log transfer reads and writes did
not change: their own version (``storage.events``) stays 1.
"""

from __future__ import annotations

from nenjim.infrastructure.store.log_versions import IncompatibleStoreError

STORAGE_SCHEMA_VERSION = 4
"""The version a store has once this build opened it."""

FOLLOWED_SINCE = 2
"""The first version whose log followers can read, and so whose projections may have been
tracked."""

EVENTS_COMPONENT = "storage.events"
"""The ``nenjim_schema`` row versioning the exported columns of ``storage_events``."""

EVENTS_VERSION = 1


class IncompatibleStorageError(IncompatibleStoreError):
    """The store holds storage of a schema version this build cannot read."""

    def __init__(self, where: str, found: int) -> None:
        RuntimeError.__init__(
            self,
            f"{where} holds nenjim storage of schema version {found}; this build reads "
            f"versions 1 to {STORAGE_SCHEMA_VERSION} only. Use a matching nenjim release "
            "or a new database.",
        )
        self.found = found


def check_storage_version(where: str, found: int | None) -> None:
    """Refuse a version this build does not know (``None``: the store is being created)."""
    if found is not None and not 1 <= found <= STORAGE_SCHEMA_VERSION:
        raise IncompatibleStorageError(where, found)
