"""Reads prepared to run together: several independent reads, one trip to the database.

A caller that needs two or more reads none of which depends on another's
answer (a thread's newest entries and its pending writes, say) prepares each
with its handle (``Streams.prepared_read``, ``Records.prepared_scan``,
``Records.prepared_read``) and runs them with ``View.read_together``. Each
answers exactly what its own call would (``Streams.read``, ``Records.scan``,
``Records.read``), and they run in the order given, each seeing at least what
the one before it saw. A driver may send them to its database at once: on
PostgreSQL they are one statement, a single round trip where the calls one
by one wait for one answer each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from nenjim.infrastructure.storage.entries import RecordEntry, StreamEntry
from nenjim.infrastructure.storage.resource import Resource

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class PreparedRead(Generic[_T]):
    """A validated read; ``_T`` is what ``View.read_together`` answers for it."""

    resource: Resource


@dataclass(frozen=True, slots=True)
class StreamRead(PreparedRead[tuple[StreamEntry, ...]]):
    """``Streams.read(stream=, after=, limit=)`` of the resource."""

    stream: str
    after: int
    limit: int | None


@dataclass(frozen=True, slots=True)
class RecordScan(PreparedRead[tuple[RecordEntry, ...]]):
    """``Records.scan`` of the resource: its rows equal on the validated index values
    whose keys start with ``key_prefix`` (``None``: any key)."""

    equals: Mapping[str, str | int | bool | None]
    after: str | None
    limit: int | None
    key_prefix: str | None = None


@dataclass(frozen=True, slots=True)
class RecordRead(PreparedRead["RecordEntry | None"]):
    """``Records.read(key)`` of the resource."""

    key: str
