"""The entries and tiles of a tiled in-memory log (see :mod:`nenjim.infrastructure.log.tiles`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from threading import RLock

from eventsourcing.persistence import Notification, StoredEvent

from nenjim.infrastructure.log.tiles import (
    CommittedEdge,
    StoredTile,
    TileKey,
    TilesMissingError,
    Tiling,
    extend_entries,
)


class MemoryTiles:
    """Entries and tiles in memory, guarded by the recorder's lock.

    An append computes its entries and tiles first and applies them after
    the events, so a tiler that fails leaves nothing behind.
    """

    def __init__(
        self, tiling: Tiling, lock: RLock, events: Callable[[], Sequence[StoredEvent]]
    ) -> None:
        self.tiling = tiling
        self._lock = lock
        self._events = events
        self._entries: list[tuple[int, bytes]] = []
        self._positions: dict[bytes, int] = {}
        self._tiles: dict[TileKey, bytes] = {}
        self.committed_edge = CommittedEdge()

    def prepare(self, ids: Sequence[int], new: Sequence[tuple[int, bytes]]) -> _Staged:
        """Compute (not yet store) what an append of events ``ids`` adds (inside
        ``self.committed_edge.transaction()``, which must end after ``apply()``)."""
        staged = _Staged(self)
        extend_entries(staged, self.tiling, new, ids[0] - 1 if ids else None, self.committed_edge)
        return staged

    def catch_up_entries(self) -> None:
        with self._lock:
            staged = _Staged(self)
            extend_entries(staged, self.tiling)
            staged.apply()

    def rebuild_entries(self) -> None:
        with self._lock:
            self._entries, self._positions, self._tiles = [], {}, {}
            self.catch_up_entries()

    def missing_tables(self) -> list[str]:
        return []  # kept in memory: nothing to lose

    def mistyped_value(self) -> str | None:
        return None  # kept as Python values: no row to edit

    def entry_count(self) -> int:
        with self._lock:
            return len(self._entries)

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        with self._lock:
            return [self._tile(key) for key in keys]

    def _tile(self, key: TileKey) -> bytes:
        try:
            return self._tiles[key]
        except KeyError:
            raise TilesMissingError(
                f"tile (level {key[0]}, index {key[1]}) is not stored in memory"
            ) from None

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        with self._lock:
            return self._entries[max(start, 0) : max(stop, 0)]

    def entry_position(self, data: bytes) -> int | None:
        with self._lock:
            return self._positions.get(data)

    def stored_tiles(self) -> list[StoredTile]:
        with self._lock:
            return [
                StoredTile(level, index, data)
                for (level, index), data in sorted(self._tiles.items())
            ]


class _Staged:
    def __init__(self, tables: MemoryTiles) -> None:
        self.tables = tables
        self.entries: list[tuple[int, bytes]] = []
        self.first = 0
        self.tiles: list[StoredTile] = []

    def end(self) -> tuple[int, int]:
        entries = self.tables._entries
        return (len(entries), entries[-1][0]) if entries else (0, 0)

    def notifications(self, after: int, upto: int | None) -> Iterator[Notification]:
        events = self.tables._events()
        for position in range(after, len(events) if upto is None else upto):
            event = events[position]
            yield Notification(
                id=position + 1,
                originator_id=event.originator_id,
                originator_version=event.originator_version,
                topic=event.topic,
                state=event.state,
            )

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        return [self.tables._tile(key) for key in keys]

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        return self.tables._entries[max(start, 0) : max(stop, 0)]

    def write(
        self, first: int, entries: Sequence[tuple[int, bytes]], tiles: Sequence[StoredTile]
    ) -> None:
        self.first = first
        self.entries = list(entries)
        self.tiles = list(tiles)

    def apply(self) -> None:
        tables = self.tables
        for n, (id_, data) in enumerate(self.entries):
            tables._entries.append((id_, data))
            tables._positions.setdefault(data, self.first + n)
        for tile in self.tiles:
            tables._tiles[(tile.level, tile.index)] = tile.data
