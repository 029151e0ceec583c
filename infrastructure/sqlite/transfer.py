"""Moving the logs of an SQLite file (imports ``sqlite3``: SQLite stores only)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from itertools import islice
from pathlib import Path

from nenjim.infrastructure.log.claims import Claim
from nenjim.infrastructure.log.transfer.format import LoggedEvent
from nenjim.infrastructure.log.transfer.stores import (
    PAGE,
    LogFilling,
    LogSnapshot,
    LogStore,
    decode_row,
)
from nenjim.infrastructure.log.transfer.tables import EventTable
from nenjim.infrastructure.sqlite.files import check_writable, connect, prepare_database_file
from nenjim.infrastructure.sqlite.log import log_table_statements
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.urls import StoreLocation
from nenjim.infrastructure.store.versions import IDENTITY_TABLE, SCHEMA_TABLE


class SQLiteLogStore(LogStore):
    """One SQLite file, opened by URI so that reading never creates it."""

    gapless_storage = True

    def __init__(self, location: StoreLocation) -> None:
        super().__init__(location)
        self.path = Path(location.env["SQLITE_DBNAME"])

    def _snapshot(self, connection: sqlite3.Connection) -> LogSnapshot:
        return _SQLiteSnapshot(connection)

    @contextmanager
    def filling(self) -> Iterator[LogFilling]:
        path = self.path
        created = check_writable(self.location)
        try:
            prepare_database_file(path, float(self.location.env["SQLITE_LOCK_TIMEOUT"]))
            with closing(
                connect(self.location, f"{path.absolute().as_uri()}?mode=rw")
            ) as connection:
                connection.execute("BEGIN IMMEDIATE")  # the only writer until COMMIT
                try:
                    yield _SQLiteFilling(connection)
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
        except sqlite3.Error as error:
            self._remove(created)
            raise StoreUnavailableError(f"cannot write {self.where}: {error}") from error
        except BaseException:
            self._remove(created)
            raise

    def _remove(self, created: bool) -> None:
        """Remove the file (and its WAL files) if this import created it."""
        if not created:
            return
        for suffix in ("", "-wal", "-shm"):
            with suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()


class _SQLiteSnapshot(LogSnapshot):
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def holds(self, table: EventTable) -> bool:
        return _has_table(self.connection, table.table)

    def schema_version(self, table: EventTable) -> int | None:
        if not _has_table(self.connection, SCHEMA_TABLE):
            return None
        row = self.connection.execute(
            f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?", (table.version_component,)
        ).fetchone()
        return None if row is None else int(row[0])

    def identity(self, table: EventTable) -> str | None:
        return _identity(self.connection, table)

    def count(self, table: EventTable) -> int:
        row = self.connection.execute(f"SELECT count(*) FROM {table.table}").fetchone()
        return int(row[0])

    def events(self, table: EventTable, after: int = 0) -> Iterator[LoggedEvent]:
        query = (
            f"SELECT {table.sqlite_id}, originator_id, originator_version, topic, state "
            f"FROM {table.table} WHERE {table.sqlite_id} > ? ORDER BY {table.sqlite_id} LIMIT ?"
        )
        while True:
            rows = self.connection.execute(query, (after, PAGE)).fetchall()
            for row in rows:
                yield decode_row(table, row)
            if len(rows) < PAGE:
                return
            after = int(rows[-1][0])


class _SQLiteFilling(LogFilling):
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def occupied(self, table: EventTable) -> str | None:
        # BEGIN IMMEDIATE already excludes every other writer.
        for name in (table.table, *table.companions):
            if _has_table(self.connection, name):
                row = self.connection.execute(f"SELECT count(*) FROM {name}").fetchone()
                if row[0]:
                    return f"{name} holds {row[0]} rows"
        identity = _identity(self.connection, table)
        if identity is not None:
            return f"its {table.log} log belongs to {identity!r}"
        return None

    def create_log(self, table: EventTable) -> None:
        for statement in log_table_statements(table.log):
            self.connection.execute(statement)

    def insert_events(self, table: EventTable, events: Iterable[LoggedEvent]) -> int:
        statement = (
            f"INSERT INTO {table.table} "
            f"({table.sqlite_id}, originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?, ?)"
        )
        inserted = 0
        iterator = iter(events)
        while page := list(islice(iterator, PAGE)):
            self.connection.executemany(
                statement,
                [
                    (
                        event.id,
                        event.originator_id.hex
                        if table.sqlite_hex_ids
                        else str(event.originator_id),
                        event.originator_version,
                        event.topic,
                        event.state,
                    )
                    for event in page
                ],
            )
            inserted += len(page)
        return inserted

    def finish_events(self, table: EventTable) -> None:
        """Nothing to do: SQLite numbers the next event ``max + 1``."""

    def insert_claims(self, table: EventTable, claims: Sequence[Claim]) -> None:
        (claims_table,) = table.companions
        self.connection.executemany(
            f"INSERT INTO {claims_table} (namespace, key, owner) VALUES (?, ?, ?)",
            [(claim.namespace, claim.key, claim.owner) for claim in claims],
        )

    def record_identity(self, table: EventTable, identity: str) -> None:
        self.connection.execute(
            f"INSERT INTO {IDENTITY_TABLE} (component, identity) VALUES (?, ?)",
            (table.identity_component, identity),
        )


def _has_table(connection: sqlite3.Connection, name: str) -> bool:
    row = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def _identity(connection: sqlite3.Connection, table: EventTable) -> str | None:
    if table.identity_component is None or not _has_table(connection, IDENTITY_TABLE):
        return None
    row = connection.execute(
        f"SELECT identity FROM {IDENTITY_TABLE} WHERE component = ?",
        (table.identity_component,),
    ).fetchone()
    return None if row is None else str(row[0])
