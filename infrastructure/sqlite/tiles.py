"""The entries and tiles of a tiled SQLite log (see :mod:`nenjim.infrastructure.log.tiles`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from uuid import UUID

from eventsourcing.persistence import Notification
from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore

from nenjim.infrastructure.log.tiles import (
    CommittedEdge,
    LogEnd,
    StoredTile,
    TileKey,
    TilesMissingError,
    Tiling,
    extend_entries,
)
from nenjim.infrastructure.sqlite.files import retry_when_locked
from nenjim.infrastructure.store.errors import LogDamagedError, TiledLogDamagedError

_PAGE = 500
# The SQLite storage class of each column of the entries and tiles tables.
_ENTRY_TYPES = {"position": "integer", "notification_id": "integer", "data": "blob"}
_TILE_TYPES = {"level": "integer", "idx": "integer", "data": "blob"}


class SQLiteTiles:
    """The entries and tiles tables of the SQLite log whose events are ``events_table``."""

    def __init__(
        self,
        datastore: SQLiteDatastore,
        *,
        name: str,
        events_table: str,
        tiling: Tiling,
        originator_id: Callable[[str], UUID | str],
        committed_edge: CommittedEdge,
    ) -> None:
        self.datastore = datastore
        self.tiling = tiling
        self.entries_table = f"{name}_entries"
        self.tiles_table = f"{name}_tiles"
        self.events_table = events_table
        self._originator_id = originator_id
        self.committed_edge = committed_edge  # shared by the log's recorders in this process
        self.statements = [
            f"CREATE TABLE IF NOT EXISTS {self.entries_table} ("
            "position INTEGER PRIMARY KEY, notification_id INTEGER NOT NULL, data BLOB NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS {self.entries_table}_data ON {self.entries_table} (data)",
            f"CREATE TABLE IF NOT EXISTS {self.tiles_table} ("
            "level INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, "
            "PRIMARY KEY (level, idx)) WITHOUT ROWID",
        ]

    def transaction(self, c: SQLiteCursor, end: LogEnd | None = None) -> _Transaction:
        """The tables as seen by the open writing transaction of cursor ``c``; ``end``:
        where the entries end, if known (else read when asked)."""
        return _Transaction(self, c, None if end is None else (end.size, end.covered))

    def extend(self, c: SQLiteCursor, ids: Sequence[int], new: Sequence[tuple[int, bytes]]) -> None:
        """In the events' transaction: entries for the events before ``ids``, then ``new``
        (inside ``self.committed_edge.transaction()``). Where the entries end is not read
        when this process's last append left the log right before ``ids``."""
        upto = ids[0] - 1 if ids else None
        end = None if upto is None else self.committed_edge.end_before(upto + 1)
        extend_entries(self.transaction(c, end), self.tiling, new, upto, self.committed_edge)

    def catch_up_entries(self) -> None:
        """Create the tables if need be and cover every stored event, in one transaction."""
        with self._typed():
            retry_when_locked(self._catch_up)

    def rebuild_entries(self) -> None:
        """Empty the tables, then cover every stored event, in one transaction."""
        with self._typed():
            retry_when_locked(lambda: self._catch_up(rebuild=True))

    def missing_tables(self) -> list[str]:
        with self.datastore.transaction(commit=False) as c:
            c.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                (self.entries_table, self.tiles_table),
            )
            present = {row[0] for row in c.fetchall()}
        return [name for name in (self.entries_table, self.tiles_table) if name not in present]

    def mistyped_value(self) -> str | None:
        for table, keys, columns in (
            (self.entries_table, ("position",), _ENTRY_TYPES),
            (self.tiles_table, ("level", "idx"), _TILE_TYPES),
        ):
            selected = ", ".join([*keys, *(f"typeof({name})" for name in columns)])
            wrong = " OR ".join(f"typeof({name}) <> '{kind}'" for name, kind in columns.items())
            with self.datastore.transaction(commit=False) as c:
                c.execute(f"SELECT {selected} FROM {table} WHERE {wrong} LIMIT 1")
                row = c.fetchone()
            if row is None:
                continue
            where = ", ".join(f"{key} {value!r}" for key, value in zip(keys, row, strict=False))
            name, found = next(
                (name, found)
                for name, found in zip(columns, row[len(keys) :], strict=True)
                if found != columns[name]
            )
            return (
                f"{table} row ({where}) holds {name} of SQLite type {found}, "
                f"not {columns[name]} (an edited row)"
            )
        return None

    def _catch_up(self, *, rebuild: bool = False) -> None:
        with self.datastore.get_connection(commit=True) as conn:
            c = conn.cursor()
            c.execute("BEGIN IMMEDIATE")  # the write lock first: no read to upgrade later
            try:
                for statement in self.statements:
                    c.execute(statement)
                if rebuild:
                    c.execute(f"DELETE FROM {self.entries_table}")
                    c.execute(f"DELETE FROM {self.tiles_table}")
                extend_entries(self.transaction(c), self.tiling)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def entry_count(self) -> int:
        with self._typed(), self.datastore.transaction(commit=False) as c:
            return _Transaction(self, c).end()[0]

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        with self._typed(), self.datastore.transaction(commit=False) as c:
            return _Transaction(self, c).read_tiles(keys)

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        with self._typed(), self.datastore.transaction(commit=False) as c:
            return _Transaction(self, c).read_entries(start, stop)

    @contextmanager
    def _typed(self) -> Iterator[None]:
        """SQLite lets a column hold any type: a value edited into another one is damage."""
        try:
            yield
        except (TypeError, ValueError) as error:
            raise LogDamagedError(
                f"{self.events_table}, {self.entries_table} or {self.tiles_table} holds a "
                f"value of the wrong type (an edited row: {type(error).__name__}: {error})"
            ) from error

    def entry_position(self, data: bytes) -> int | None:
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT min(position) FROM {self.entries_table} WHERE data = ?", (data,))
            row = c.fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def stored_tiles(self) -> list[StoredTile]:
        with self._typed(), self.datastore.transaction(commit=False) as c:
            c.execute(
                f"SELECT level, idx, CAST(data AS BLOB) FROM {self.tiles_table} ORDER BY level, idx"
            )
            return [StoredTile(int(r[0]), int(r[1]), bytes(r[2])) for r in c.fetchall()]


class _Transaction:
    def __init__(
        self, tables: SQLiteTiles, c: SQLiteCursor, end: tuple[int, int] | None = None
    ) -> None:
        self.tables = tables
        self.c = c
        self._end = end

    def end(self) -> tuple[int, int]:
        if self._end is not None:
            return self._end
        self.c.execute(
            f"SELECT position, notification_id FROM {self.tables.entries_table} "
            "ORDER BY position DESC LIMIT 1"
        )
        row = self.c.fetchone()
        return (0, 0) if row is None else (int(row[0]) + 1, self._notification_id(row[1]))

    def notifications(self, after: int, upto: int | None) -> Iterator[Notification]:
        last = upto if upto is not None else -1
        while True:
            bound = "AND rowid <= ? " if last >= 0 else ""
            self.c.execute(
                "SELECT rowid, originator_id, originator_version, topic, state "
                f"FROM {self.tables.events_table} WHERE rowid > ? {bound}ORDER BY rowid LIMIT ?",
                (after, last, _PAGE) if last >= 0 else (after, _PAGE),
            )
            rows = self.c.fetchall()
            for row in rows:
                yield Notification(
                    id=int(row[0]),
                    originator_id=self.tables._originator_id(row[1]),
                    originator_version=int(row[2]),
                    topic=str(row[3]),
                    state=bytes(row[4]),
                )
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][0])

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        found: list[bytes] = []
        for level, index in keys:
            self.c.execute(
                f"SELECT CAST(data AS BLOB) FROM {self.tables.tiles_table} "
                "WHERE level = ? AND idx = ?",
                (level, index),
            )
            row = self.c.fetchone()
            if row is None:
                raise TilesMissingError(
                    f"tile (level {level}, index {index}) is not stored "
                    f"in {self.tables.tiles_table}"
                )
            found.append(bytes(row[0]))
        return found

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        self.c.execute(
            f"SELECT notification_id, CAST(data AS BLOB) FROM {self.tables.entries_table} "
            "WHERE position >= ? AND position < ? ORDER BY position",
            (start, stop),
        )
        return [(self._notification_id(row[0]), bytes(row[1])) for row in self.c.fetchall()]

    def _notification_id(self, value: object) -> int:
        """An entry's notification id, as read (SQLite lets the column hold any type)."""
        if type(value) is not int:
            raise TiledLogDamagedError(
                f"{self.tables.entries_table} holds notification id {value!r}: not an integer "
                "(an edited row)"
            )
        return value

    def write(
        self, first: int, entries: Sequence[tuple[int, bytes]], tiles: Sequence[StoredTile]
    ) -> None:
        self.c.executemany(
            f"INSERT INTO {self.tables.entries_table} VALUES (?, ?, ?)",
            [(first + n, id_, data) for n, (id_, data) in enumerate(entries)],
        )
        if not tiles:
            return
        self.c.executemany(
            f"INSERT INTO {self.tables.tiles_table} VALUES (?, ?, ?) "
            "ON CONFLICT (level, idx) DO UPDATE SET data = excluded.data",
            [(tile.level, tile.index, tile.data) for tile in tiles],
        )
