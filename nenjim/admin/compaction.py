"""Compacting a durable-state store: the space of deleted and overwritten rows given back.

:func:`compact_storage` rewrites an SQLite file (``VACUUM`` between two
``wal_checkpoint(TRUNCATE)``) or every table of a PostgreSQL schema (``VACUUM
FULL``), so that none of the bytes of rows deleted or overwritten before it
(a purge's) remain in the store's files. It never creates a store: a URL
naming no storage is a ``StoreNotFoundError``, ``memory:`` an
``UnsupportedBackendError``.
"""

from __future__ import annotations

from nenjim.infrastructure.storage.audit.compaction import (
    CompactedPart,
    CompactionReport,
    compact_store,
)
from nenjim.infrastructure.store.progress import Progress, silent

__all__ = ["CompactedPart", "CompactionReport", "compact_storage"]


def compact_storage(url: str, progress: Progress = silent) -> CompactionReport:
    """Compact the store ``url``; ``progress`` is told of each step (each table on PostgreSQL)."""
    return compact_store(url, progress)
