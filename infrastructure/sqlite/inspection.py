"""Looking at an SQLite store's storage log without creating or upgrading anything."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.sqlite.files import reading
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.kinds import StoreMissingError
from nenjim.infrastructure.store.urls import StoreLocation


@contextmanager
def storage_session(location: StoreLocation) -> Iterator[Session | None]:
    """A read-only transaction on the file the URL names, or ``None`` without a storage
    log (no file, or no ``storage_events`` in it)."""
    try:
        transaction = reading(location)  # refuses a missing file at once
    except StoreMissingError:
        yield None
        return
    with transaction as connection:
        found = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'storage_events'"
        ).fetchone()
        yield None if found is None else Session(connection, SQLiteDialect())
