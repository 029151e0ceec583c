"""Entries and tiles: two inline tables derived from a log's events, in their transaction.

A *tiled* log keeps, beside its events, a numbered sequence of **entries**
(``<name>_entries``: position from 0, the notification id of the event it
came from, and opaque bytes) and a table of **tiles** (``<name>_tiles``:
opaque bytes keyed by ``(level, index)``). Both are written in the same
transaction as the events they cover, so they never lag or disagree with
the log. The log knows nothing of what they mean: an :class:`EntryTiler`,
given by the log's owner, says which bytes an event contributes as an entry
and which tiles new entries change (a tiler may leave a tile unstored when
it can rebuild it from the entries). The Journal uses it for its Merkle tree.

Between appends, the log keeps what the tiler says of the tree's right edge
(:class:`CommittedEdge`): after a committed append, the next append that
finds the log at exactly the size that append left hands it back, so a
writer does not read again what it wrote last.

The owner passes the entries of the events it appends (one per event, or
``None``); events appended without entries (by an older build, or by a
bulk import) are caught up, from the events themselves, at the next append
or open, before anything else is added: entries follow notification order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Notification

from nenjim.infrastructure.store.errors import TiledLogDamagedError

TileKey = tuple[int, int]
"""A tile's ``(level, index)``."""

Decode = Callable[[Notification], DomainEventProtocol[UUID]]


@dataclass(frozen=True, slots=True)
class StoredTile:
    """The bytes of tile ``(level, index)`` as stored (a partial tile grows in place)."""

    level: int
    index: int
    data: bytes


class TilesMissingError(TiledLogDamagedError, LookupError):
    """A tile that the entries call for is not stored (or too short to be that tile)."""


class TileReads(Protocol):
    """Reads of a tiled log's stored tiles and entries (committed, or inside a writing
    transaction)."""

    def read_tiles(self, keys: Sequence[TileKey]) -> Sequence[bytes]:
        """The stored bytes of each tile (``TilesMissingError`` for a missing one)."""
        ...

    def read_entries(self, start: int, stop: int) -> Sequence[tuple[int, bytes]]:
        """``(notification id, data)`` of the entries at positions ``start`` to ``stop - 1``."""
        ...


@dataclass(frozen=True, slots=True)
class TileGrowth:
    """What an append changes: the tiles to store, and the tiler's own account of the
    tree's right edge after it (opaque to the log, handed back by :class:`CommittedEdge`)."""

    tiles: Sequence[StoredTile]
    edge: object


class EntryTiler(Protocol):
    """What a tiled log's owner computes: entries of events, tiles of entries."""

    def entry_of(self, notification: Notification, decode: Decode) -> bytes | None:
        """The entry an already stored event contributes (``None``: none)."""
        ...

    def tiles_after(
        self, size: int, entries: Sequence[bytes], reads: TileReads, edge: object | None
    ) -> TileGrowth:
        """The tiles that change when ``entries`` follow the ``size`` stored ones.

        ``edge`` is the ``TileGrowth.edge`` of the append that left the log at
        exactly ``size`` entries, when this process committed it; ``None``
        when unknown (read what is needed through ``reads``).
        """
        ...


class CommittedEdge:
    """A tiler's right edge as of this process's last committed append, and the size
    it holds for.

    The log's writer (the only one touching it: the leader of its commit
    group) wraps each writing transaction in :meth:`transaction`. An edge
    grown in a transaction is kept only once that transaction commits, and it
    is handed back only to an append that finds the log at its size: entries
    are never removed, so any other writer's append changes the size. A
    savepoint rolled back inside the transaction :meth:`discard` s it.

    With the edge it keeps where that append left the log (:attr:`end`), so
    that a writer may compute its next append's entries and tiles before
    sending anything, provided the log checks, under its lock, that it still
    ends there.
    """

    __slots__ = ("_committed", "_pending")

    def __init__(self) -> None:
        self._committed: _GrownEdge | None = None
        self._pending: _GrownEdge | None = None

    @property
    def committed(self) -> bool:
        """Whether an edge was committed (for some size)."""
        return self._committed is not None

    @property
    def end(self) -> LogEnd | None:
        """Where the last committed append left the log, if this process knows it."""
        return None if self._committed is None else self._committed.end

    def end_before(self, first_id: int) -> LogEnd | None:
        """Where the log ended when an append was numbered from ``first_id``, if this
        process's last append (committed, or earlier in the open transaction) left it
        there with an entry for every event: the log numbers an event one past the last
        stored, so ``first_id`` right after that append's last event means nobody
        appended between them."""
        for known in (self._pending, self._committed):
            if known is not None:
                end = known.end
                return end if first_id == end.last_id + 1 and end.covered == end.last_id else None
        return None

    def at(self, size: int) -> object | None:
        """The edge of a log of ``size`` entries, if known."""
        for known in (self._pending, self._committed):
            if known is not None and known.end.size == size:
                return known.edge
        return None

    def grown(self, end: LogEnd, edge: object) -> None:
        """The open transaction's append left the log at ``end``, with ``edge``."""
        self._pending = _GrownEdge(end, edge)

    def discard(self) -> None:
        """The open transaction's last append was rolled back (to a savepoint)."""
        self._pending = None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Around one writing transaction, its commit included."""
        self._pending = None
        try:
            yield
        except BaseException:
            self._pending = None
            raise
        if self._pending is not None:
            self._committed, self._pending = self._pending, None


class LogEnd(NamedTuple):
    """Where a tiled log ends: its number of entries, the notification id of the last
    entry, and the notification id of its last event (later than the last entry's
    when the last events have no entries)."""

    size: int
    covered: int
    last_id: int


class _GrownEdge(NamedTuple):
    end: LogEnd
    edge: object


@dataclass(frozen=True, slots=True)
class Tiling:
    """A tiled log's tiler, and how its events are decoded for :meth:`EntryTiler.entry_of`."""

    tiler: EntryTiler
    decode: Decode


class TileTransaction(Protocol):
    """A backend's view of the entries and tiles inside one writing transaction."""

    def end(self) -> tuple[int, int]:
        """The number of entries, and the notification id of the last (0: none)."""
        ...

    def notifications(self, after: int, upto: int | None) -> Iterable[Notification]:
        """The stored events after id ``after`` (up to ``upto``), in order."""
        ...

    def read_tiles(self, keys: Sequence[TileKey]) -> Sequence[bytes]:
        """The stored bytes of each tile (``TilesMissingError`` for a missing one)."""
        ...

    def read_entries(self, start: int, stop: int) -> Sequence[tuple[int, bytes]]:
        """``(notification id, data)`` of the entries at positions ``start`` to ``stop - 1``."""
        ...

    def write(
        self, first: int, entries: Sequence[tuple[int, bytes]], tiles: Sequence[StoredTile]
    ) -> None:
        """Store ``(notification id, data)`` entries from position ``first``; upsert tiles."""
        ...


class TiledLog(Protocol):
    """The read side of a tiled log (every call reads committed state)."""

    def entry_count(self) -> int:
        """How many entries the log holds (the size of its tree)."""
        ...

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        """The stored bytes of each tile, in request order; a missing one is an error."""
        ...

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        """``(notification id, data)`` of the entries at positions ``start`` to ``stop - 1``."""
        ...

    def entry_position(self, data: bytes) -> int | None:
        """The position of the first entry whose bytes are ``data``, or ``None``."""
        ...

    def stored_tiles(self) -> list[StoredTile]:
        """Every stored tile, by level then index (for audits)."""
        ...

    def catch_up_entries(self) -> None:
        """Give entries and tiles to every stored event that lacks them, in one transaction."""
        ...

    def rebuild_entries(self) -> None:
        """Delete every entry and tile and give every stored event its entry and tiles
        again, from the events, in one transaction (an explicit repair)."""
        ...

    def missing_tables(self) -> list[str]:
        """The names of the entries and tiles tables that the store does not hold."""
        ...

    def mistyped_value(self) -> str | None:
        """The first value in the entries or tiles tables of another type than its column's,
        described (``None``: none). Only SQLite lets a column hold any type (a BLOB
        edited into TEXT holding the same bytes reads back the same, yet is an edit)."""
        ...


def new_entries(ids: Sequence[int] | None, kwargs: dict[str, Any]) -> list[tuple[int, bytes]]:
    """The ``(notification id, data)`` pairs of an append's ``entries`` keyword.

    ``entries`` holds one item per appended event, in the events' order:
    its entry's bytes, or ``None``.
    """
    given: Sequence[bytes | None] = kwargs.get("entries", ())
    if not given:
        return []
    if ids is None or len(ids) != len(given):
        raise ValueError(
            f"an append gave {len(given)} entries for {0 if ids is None else len(ids)} events"
        )
    return [(id_, data) for id_, data in zip(ids, given, strict=True) if data is not None]


def extend_entries(
    tx: TileTransaction,
    tiling: Tiling,
    new: Sequence[tuple[int, bytes]] = (),
    upto: int | None = None,
    edge: CommittedEdge | None = None,
    *,
    last_id: int | None = None,
) -> None:
    """Inside a writing transaction: catch up the events up to ``upto``, then add ``new``.

    ``edge``: the writer's :class:`CommittedEdge`, inside its ``transaction()``;
    ``last_id``: the notification id of the transaction's last event (by
    default, that of the last entry).
    """
    size, covered = tx.end()
    behind = upto is None or covered < upto  # else nothing to catch up: skip the read
    pending = [
        (notification.id, data)
        for notification in (tx.notifications(covered, upto) if behind else ())
        if (data := tiling.tiler.entry_of(notification, tiling.decode)) is not None
    ]
    pending.extend(new)
    if not pending:
        return
    known = None if edge is None else edge.at(size)
    growth = tiling.tiler.tiles_after(size, [data for _, data in pending], tx, known)
    tx.write(size, pending, growth.tiles)
    if edge is not None:
        covered = pending[-1][0]
        end = LogEnd(size + len(pending), covered, covered if last_id is None else last_id)
        edge.grown(end, growth.edge)
