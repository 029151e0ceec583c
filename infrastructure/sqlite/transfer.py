"""Moving the logs of an SQLite file (imports ``sqlite3``: SQLite stores only)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager, suppress
from itertools import islice
from pathlib import Path

from nenjim.infrastructure.log.transfer.format import LoggedEvent
from nenjim.infrastructure.log.transfer.stores import PAGE, LogFilling, LogStore
from nenjim.infrastructure.log.transfer.tables import EventTable
from nenjim.infrastructure.sqlite.files import check_writable, connect, prepare_database_file
from nenjim.infrastructure.sqlite.log import log_table_statements
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.urls import StoreLocation


class _SQLiteLogs(LogFilling):
    mark = "?"

    def _exists(self, table: EventTable, name: str) -> bool:
        row = self.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def _name(self, table: EventTable, name: str) -> str:
        return name

    def _id_column(self, table: EventTable) -> str:
        return table.sqlite_id

    def _exclude_writers(self, table: EventTable, name: str) -> str:
        return name  # BEGIN IMMEDIATE already excludes every other writer

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


class SQLiteLogStore(LogStore):
    """One SQLite file, opened by URI so that reading never creates it."""

    logs = _SQLiteLogs
    gapless_storage = True

    def __init__(self, location: StoreLocation) -> None:
        super().__init__(location)
        self.path = Path(location.env["SQLITE_DBNAME"])

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
                    yield _SQLiteLogs(connection, self.location)
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
