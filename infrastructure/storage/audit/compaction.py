"""What compacting an SQL store returned to the file system: bytes before and after, per part.

A compaction rewrites a store so that the space its deleted and overwritten
rows took is given back, and their old bytes are no longer in any file of
the store: SQLite checkpoints its write-ahead log, runs ``VACUUM`` and
truncates the log; PostgreSQL runs ``VACUUM FULL`` on every table of the
store's schema. Each kind's maintenance store does it
(:meth:`nenjim.infrastructure.storage.audit.sessions.SqlStore.compact`);
:func:`compact_store` is the entry point by URL.
"""

from __future__ import annotations

from dataclasses import dataclass

from nenjim.infrastructure.storage.audit.sessions import SqlStore
from nenjim.infrastructure.store.progress import Progress, silent


@dataclass(frozen=True)
class CompactedPart:
    """One file (SQLite: the database, its ``-wal``) or table (PostgreSQL, with its TOAST
    table and indexes) of a store, and its size in bytes before and after."""

    name: str
    bytes_before: int
    bytes_after: int


@dataclass(frozen=True)
class CompactionReport:
    """The store compacted (as messages name it) and its parts' sizes."""

    store: str
    unit: str
    """What a part is: ``file`` (SQLite) or ``table`` (PostgreSQL)."""
    parts: tuple[CompactedPart, ...]

    @property
    def bytes_before(self) -> int:
        """The store's size before, in bytes: the sum over its parts."""
        return sum(part.bytes_before for part in self.parts)

    @property
    def bytes_after(self) -> int:
        """The store's size after, in bytes: the sum over its parts."""
        return sum(part.bytes_after for part in self.parts)

    def as_json(self) -> dict[str, object]:
        """``{"store", "bytes_before", "bytes_after", "files"|"tables": {name: {...}}}``."""
        return {
            "store": self.store,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            f"{self.unit}s": {
                part.name: {"bytes_before": part.bytes_before, "bytes_after": part.bytes_after}
                for part in self.parts
            },
        }


def compact_store(url: str, progress: Progress = silent) -> CompactionReport:
    """Compact the SQL store at ``url``, telling ``progress`` of each step.

    Nothing is created: a URL naming no storage raises ``StoreNotFoundError``;
    ``memory:`` raises ``UnsupportedBackendError``.
    """
    return SqlStore.from_url(url, "compact").compact(progress)
