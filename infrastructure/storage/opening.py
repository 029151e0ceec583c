"""``open_backend(url, resources)``: a storage backend chosen by a store URL.

The URL forms are the log's (:mod:`nenjim.infrastructure.store.urls`): ``memory:``,
``sqlite:///abs/path.db``, ``sqlite:relative.db`` (relative to the working
directory) and ``postgresql://user@host:port/dbname?schema=..&pool_size=..&max_overflow=..``
plus any libpq parameter. Each backend is imported only when a URL names its
kind (:mod:`nenjim.infrastructure.store.kinds`), so ``sqlite3`` loads for an
``sqlite:`` store and psycopg only for a PostgreSQL one; importing this module
loads neither.
"""

from __future__ import annotations

from collections.abc import Sequence

from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.errors import UnsupportedBackendError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.store.urls import UnsupportedStoreError, resolve_store_url


def open_backend(url: str, resources: Sequence[Resource]) -> Backend:
    """A backend over ``resources`` at ``url``; ``UnsupportedBackendError`` for a bad URL."""
    if not isinstance(url, str):
        raise TypeError(f"a store URL is a str, got {type(url).__name__}")
    try:
        location = resolve_store_url(url)
    except UnsupportedStoreError as error:
        raise UnsupportedBackendError(str(error)) from error
    kind = location.store_kind
    backend: Backend = kind.load(kind.backend).at(resources, location)
    return backend
