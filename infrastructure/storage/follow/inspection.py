"""Looking at a store's storage log without opening (or creating) the store.

``log_session(url)`` yields a read-only :class:`Session` on the store's
storage tables, or ``None`` when the URL names no storage log: ``memory:``
(its log lives in one process), a missing SQLite file, a database or
schema without ``storage_events``. Nothing is ever created or upgraded, so
status commands can be pointed at any URL.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.urls import resolve_store_url


@contextmanager
def log_session(url: str) -> Iterator[Session | None]:
    """A session on the storage log at ``url`` (one read-only transaction), or ``None``."""
    location = resolve_store_url(url)
    if location.kind == "memory":
        yield None
    elif location.kind == "sqlite":
        with _sqlite_session(Path(location.env["SQLITE_DBNAME"])) as session:
            yield session
    else:
        module: Any = importlib.import_module("nenjim.infrastructure.postgresql.inspection")
        with module.postgres_session(url) as session:
            yield session


@contextmanager
def _sqlite_session(path: Path) -> Iterator[Session | None]:
    import sqlite3  # noqa: PLC0415 - only SQLite stores load the driver

    from nenjim.infrastructure.sqlite.dialect import SQLiteDialect  # noqa: PLC0415
    from nenjim.infrastructure.sqlite.files import reading_uri  # noqa: PLC0415

    if not path.is_file():
        yield None
        return
    try:
        connection = sqlite3.connect(reading_uri(path.resolve()), uri=True)
    except sqlite3.Error as error:
        raise StoreUnavailableError(f"cannot open SQLite database {path}: {error}") from None
    try:
        found = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'storage_events'"
        ).fetchone()
        connection.execute("BEGIN")
        yield None if found is None else Session(connection, SQLiteDialect())
        connection.execute("COMMIT")
    finally:
        connection.close()
