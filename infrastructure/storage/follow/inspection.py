"""Looking at a store's storage log without opening (or creating) the store.

``log_session(url)`` yields a read-only :class:`Session` on the store's
storage tables, or ``None`` when the URL names no storage log: ``memory:``
(its log lives in one process), a missing SQLite file, a database or
schema without ``storage_events``. Nothing is ever created or upgraded, so
status commands can be pointed at any URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.urls import resolve_store_url


@contextmanager
def log_session(url: str) -> Iterator[Session | None]:
    """A session on the storage log at ``url`` (one read-only transaction), or ``None``."""
    location = resolve_store_url(url)
    kind = location.store_kind
    if kind.storage_session is None:  # its storage log lives in one process
        yield None
        return
    with kind.load(kind.storage_session)(location) as session:
        yield session
