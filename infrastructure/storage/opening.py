"""``open_backend(url, resources)``: a storage backend chosen by a store URL.

The URL forms are the log's (:mod:`infrastructure.log.urls`): ``memory:``,
``sqlite:///abs/path.db``, ``sqlite:relative.db`` (relative to the working
directory) and ``postgresql://user@host:port/dbname?schema=..&pool_size=..&max_overflow=..``
plus any libpq parameter. The PostgreSQL backend (and psycopg) is imported
only for a PostgreSQL URL.
"""

from __future__ import annotations

from collections.abc import Sequence

from infrastructure.log.urls import UnsupportedStoreError, resolve_store_url
from infrastructure.storage.backend import Backend
from infrastructure.storage.errors import UnsupportedBackendError
from infrastructure.storage.memory import InMemoryBackend
from infrastructure.storage.resource import Resource
from infrastructure.storage.sqlite import SQLiteBackend


def open_backend(url: str, resources: Sequence[Resource]) -> Backend:
    """A backend over ``resources`` at ``url``; ``UnsupportedBackendError`` for a bad URL."""
    if not isinstance(url, str):
        raise TypeError(f"a store URL is a str, got {type(url).__name__}")
    try:
        location = resolve_store_url(url)
    except UnsupportedStoreError as error:
        raise UnsupportedBackendError(str(error)) from error
    if location.kind == "memory":
        return InMemoryBackend(resources)
    if location.kind == "sqlite":
        return SQLiteBackend(resources, location.env["SQLITE_DBNAME"])
    from infrastructure.storage.postgres import PostgresBackend  # noqa: PLC0415 - needs psycopg

    return PostgresBackend(resources, url)
