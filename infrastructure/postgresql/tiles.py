"""The entries and tiles of a tiled PostgreSQL log (see :mod:`nenjim.infrastructure.log.tiles`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import Notification
from eventsourcing.postgres import PostgresDatastore
from psycopg.sql import SQL, Identifier

from nenjim.infrastructure.log.tiles import (
    CommittedEdge,
    LogEnd,
    StoredTile,
    TileKey,
    TilesMissingError,
    Tiling,
    extend_entries,
)
from nenjim.infrastructure.postgresql.arrays import arguments, array_argument, as_scalars

_PAGE = 500
# The SQL types of the columns of the entries and tiles tables, in their order.
_ENTRY_COLUMNS = ("bigint", "bigint", "bytea")
_TILE_COLUMNS = ("integer", "bigint", "bytea")
Connection = psycopg.Connection[Any]


class PostgresTiles:
    """The entries and tiles tables of the PostgreSQL log whose events are ``events_table``."""

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        name: str,
        events_table: str,
        tiling: Tiling,
        lock: Callable[[Connection], None],
        committed_edge: CommittedEdge,
    ) -> None:
        self.datastore = datastore
        self.tiling = tiling
        self._lock = lock
        self.committed_edge = committed_edge  # shared by the log's recorders in this process
        self._names = {"entries": f"{name}_entries", "tiles": f"{name}_tiles"}
        names = {
            "schema": Identifier(datastore.schema),
            "entries": Identifier(f"{name}_entries"),
            "entries_data": Identifier(f"{name}_entries_data"),
            "tiles": Identifier(f"{name}_tiles"),
            "events": Identifier(events_table),
        }
        self.statements = [
            SQL(statement).format(**names)
            for statement in (
                "CREATE TABLE IF NOT EXISTS {schema}.{entries} (position bigint PRIMARY KEY, "
                "notification_id bigint NOT NULL, data bytea NOT NULL)",
                # A hash index: a B-tree refuses keys longer than a third of a page.
                "CREATE INDEX IF NOT EXISTS {entries_data} ON {schema}.{entries} USING hash (data)",
                "CREATE TABLE IF NOT EXISTS {schema}.{tiles} (level integer NOT NULL, "
                "idx bigint NOT NULL, data bytea NOT NULL, PRIMARY KEY (level, idx))",
            )
        ]
        self._write_into = {
            "entries": SQL("{schema}.{entries}").format(**names).as_string(None),
            "tiles": SQL("{schema}.{tiles}").format(**names).as_string(None),
        }
        self._writes: dict[tuple[int, int], bytes] = {}
        self.sql = {
            key: SQL(statement).format(**names)
            for key, statement in {
                "end": "SELECT position, notification_id FROM {schema}.{entries} "
                "ORDER BY position DESC LIMIT 1",
                # The end in the edge's row shape, without its tiles.
                "end_row": "SELECT NULL::integer AS level, NULL::bigint AS idx, "
                "NULL::bytea AS data, position, notification_id FROM {schema}.{entries} "
                "ORDER BY position DESC LIMIT 1",
                # The end and, per level, the right-most tile of that tree (the tiles
                # an append reads): sent with the append, one round trip for both.
                "edge": "SELECT l.level, t.idx, t.data, e.position, e.notification_id "
                "FROM (SELECT position, notification_id FROM {schema}.{entries} "
                "ORDER BY position DESC LIMIT 1) AS e "
                "CROSS JOIN generate_series(0, 7) AS l(level) "
                "LEFT JOIN {schema}.{tiles} AS t "
                "ON t.level = l.level AND t.idx = (e.position + 1) >> (8 * l.level + 8)",
                "events": "SELECT notification_id, originator_id, originator_version, topic, "
                "state FROM {schema}.{events} WHERE notification_id > %s "
                "AND notification_id <= %s ORDER BY notification_id LIMIT %s",
                "tiles": "SELECT k.n, t.data FROM unnest(%s::integer[], %s::bigint[]) "
                "WITH ORDINALITY AS k(level, idx, n) "
                "JOIN {schema}.{tiles} AS t USING (level, idx)",
                "entries": "SELECT notification_id, data FROM {schema}.{entries} "
                "WHERE position >= %s AND position < %s ORDER BY position",
                "position": "SELECT min(position) AS position FROM {schema}.{entries} "
                "WHERE data = %s",
                "all_tiles": "SELECT level, idx, data FROM {schema}.{tiles} ORDER BY level, idx",
            }.items()
        }

    def edge(self, conn: Connection) -> psycopg.Cursor[Any]:
        """Queue the read of the tree's end and edge tiles (in pipeline mode: not sent yet).

        A writer that committed an append before reads the end alone: the edge
        it kept is what the tiler needs when no other writer appended since
        (otherwise the tiler reads the tiles it lacks).
        """
        known = self.committed_edge.committed
        return conn.execute(self.sql["end_row" if known else "edge"], prepare=True)

    def extend(
        self,
        conn: Connection,
        ids: Sequence[int],
        new: Sequence[tuple[int, bytes]],
        edge: Sequence[Any],
        *,
        last_id: int | None = None,
    ) -> None:
        """In the events' transaction: entries for the events before ``ids``, then ``new``.

        ``edge`` holds the rows of :meth:`edge`, read after the events were
        inserted, under the append's lock; ``last_id`` is the transaction's
        last notification id. Runs inside ``self.committed_edge.transaction()``.
        """
        upto = ids[0] - 1 if ids else None
        tx = _Transaction(self, conn, edge)
        extend_entries(tx, self.tiling, new, upto, self.committed_edge, last_id=last_id)

    def extend_at(
        self, conn: Connection, end: LogEnd, new: Sequence[tuple[int, bytes]], last_id: int
    ) -> None:
        """The same for appends sent but not yet answered, which the log refuses unless it
        ends at ``end`` (where this process's last committed append left it): nothing is
        read for what ``end`` and the kept edge tell."""
        tx = _Transaction(self, conn, end=(end.size, end.covered))
        extend_entries(tx, self.tiling, new, end.last_id, self.committed_edge, last_id=last_id)

    def write_statement(self, entries: int, tiles: int) -> bytes:
        """The statement writing ``entries`` entries and upserting ``tiles`` tiles: one
        round trip for both (the entries in a data-modifying ``WITH``)."""
        shape = (entries, tiles)
        statement = self._writes.get(shape)
        if statement is None:
            scalars = as_scalars(shape)
            entry_columns = [array_argument(entries, kind, scalars) for kind in _ENTRY_COLUMNS]
            tile_columns = [array_argument(tiles, kind, scalars) for kind in _TILE_COLUMNS]
            statement = self._writes[shape] = (
                f"WITH entries AS (INSERT INTO {self._write_into['entries']} "
                f"SELECT * FROM unnest({', '.join(entry_columns)})) "
                f"INSERT INTO {self._write_into['tiles']} "
                f"SELECT * FROM unnest({', '.join(tile_columns)}) "
                "ON CONFLICT (level, idx) DO UPDATE SET data = excluded.data"
            ).encode()
        return statement

    def catch_up_entries(self, *, rebuild: bool = False) -> None:
        """Create the tables if need be and cover every stored event, in one transaction
        (with ``rebuild``, after emptying the tables)."""
        with self.datastore.get_connection() as conn, conn.transaction():
            self._lock(conn)
            for statement in self.statements:
                conn.execute(statement, prepare=False)
            if rebuild:
                conn.execute(SQL("DELETE FROM {}").format(SQL(self._write_into["entries"])))
                conn.execute(SQL("DELETE FROM {}").format(SQL(self._write_into["tiles"])))
            extend_entries(_Transaction(self, conn), self.tiling)

    def rebuild_entries(self) -> None:
        """Empty the tables, then cover every stored event, in one transaction."""
        self.catch_up_entries(rebuild=True)

    def missing_tables(self) -> list[str]:
        names = [self._names["entries"], self._names["tiles"]]
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename = ANY(%s)",
                (self.datastore.schema, names),
            ).fetchall()
        present = {row["tablename"] for row in rows}
        return [name for name in names if name not in present]

    def mistyped_value(self) -> str | None:
        return None  # PostgreSQL holds only values of a column's type

    def entry_count(self) -> int:
        with self.datastore.get_connection() as conn:
            return _Transaction(self, conn).end()[0]

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        with self.datastore.get_connection() as conn:
            return _Transaction(self, conn).read_tiles(keys)

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        with self.datastore.get_connection() as conn:
            return _Transaction(self, conn).read_entries(start, stop)

    def entry_position(self, data: bytes) -> int | None:
        with self.datastore.get_connection() as conn:
            row = conn.execute(self.sql["position"], (data,)).fetchone()
        return None if row is None or row["position"] is None else int(row["position"])

    def stored_tiles(self) -> list[StoredTile]:
        with self.datastore.get_connection() as conn:
            rows = conn.execute(self.sql["all_tiles"]).fetchall()
        return [StoredTile(int(r["level"]), int(r["idx"]), bytes(r["data"])) for r in rows]


class _Transaction:
    def __init__(
        self,
        tables: PostgresTiles,
        conn: Connection,
        edge: Sequence[Any] | None = None,
        end: tuple[int, int] | None = None,
    ) -> None:
        self.tables = tables
        self.conn = conn
        self._end: tuple[int, int] | None = end
        self._edge: dict[TileKey, bytes] = {}
        if edge is not None:
            self._end = (0, 0)
            for row in edge:
                self._end = (int(row["position"]) + 1, int(row["notification_id"]))
                if row["data"] is not None:
                    self._edge[(int(row["level"]), int(row["idx"]))] = bytes(row["data"])

    def end(self) -> tuple[int, int]:
        if self._end is not None:
            return self._end
        row = self.conn.execute(self.tables.sql["end"]).fetchone()
        return (0, 0) if row is None else (int(row["position"]) + 1, int(row["notification_id"]))

    def notifications(self, after: int, upto: int | None) -> Iterator[Notification]:
        last = upto if upto is not None else 2**63 - 1
        while True:
            rows = self.conn.execute(self.tables.sql["events"], (after, last, _PAGE)).fetchall()
            for row in rows:
                originator: UUID | str = row["originator_id"]
                yield Notification(
                    id=int(row["notification_id"]),
                    originator_id=originator,
                    originator_version=int(row["originator_version"]),
                    topic=str(row["topic"]),
                    state=bytes(row["state"]),
                )
            if len(rows) < _PAGE:
                return
            after = int(rows[-1]["notification_id"])

    def read_tiles(self, keys: Sequence[TileKey]) -> list[bytes]:
        if all(key in self._edge for key in keys):
            return [self._edge[key] for key in keys]
        params = ([level for level, _ in keys], [index for _, index in keys])
        rows = self.conn.execute(self.tables.sql["tiles"], params).fetchall()
        found = {int(row["n"]): bytes(row["data"]) for row in rows}
        for n, (level, index) in enumerate(keys, start=1):
            if n not in found:
                raise TilesMissingError(f"tile (level {level}, index {index}) is not stored")
        return [found[n] for n in range(1, len(keys) + 1)]

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        rows = self.conn.execute(self.tables.sql["entries"], (start, stop)).fetchall()
        return [(int(row["notification_id"]), bytes(row["data"])) for row in rows]

    def write(
        self, first: int, entries: Sequence[tuple[int, bytes]], tiles: Sequence[StoredTile]
    ) -> None:
        columns: list[list[Any]] = [
            list(range(first, first + len(entries))),
            [id_ for id_, _ in entries],
            [data for _, data in entries],
            [tile.level for tile in tiles],
            [tile.index for tile in tiles],
            [tile.data for tile in tiles],
        ]
        params = arguments(columns, as_scalars((len(entries), len(tiles))))
        statement = self.tables.write_statement(len(entries), len(tiles))
        self.conn.execute(statement, params, prepare=True)
