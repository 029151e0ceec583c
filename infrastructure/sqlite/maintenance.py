"""The maintenance store of an SQLite file (imports ``sqlite3``: SQLite stores only)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.sqlite.files import read_only_reason, reading_uri
from nenjim.infrastructure.sqlite.storage import DEFAULT_BUSY_TIMEOUT, SQLiteDriver
from nenjim.infrastructure.storage.audit.sessions import SqlStore, StoreNotFoundError
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreReadOnlyError
from nenjim.infrastructure.store.urls import StoreLocation


class SQLiteStore(SqlStore):
    """An SQLite file, opened by URI so that nothing ever creates it."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"SQLite database {path}", SQLiteDialect())
        self.path = path

    @classmethod
    def at(cls, location: StoreLocation) -> SQLiteStore:
        return cls(Path(location.env["SQLITE_DBNAME"]))

    @classmethod
    def of_driver(cls, driver: SqlDriver) -> SQLiteStore:
        assert isinstance(driver, SQLiteDriver)
        return cls(driver.path)

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        with closing(self._connection("ro")) as connection:
            connection.execute("BEGIN")
            try:
                session = Session(connection, self.dialect)
                self._require_storage(session)
                yield session
            finally:
                connection.execute("ROLLBACK")

    @contextmanager
    def exclusive(self) -> Iterator[Session]:
        with closing(self._connection("rw")) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                session = Session(connection, self.dialect)
                self._require_storage(session)
                yield session
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _connection(self, mode: str) -> sqlite3.Connection:
        if not self.path.is_file():
            reason = "it is a directory" if self.path.is_dir() else "the file does not exist"
            raise StoreNotFoundError(f"no {self.description}: {reason}")
        # A URI with mode=ro/rw never creates the file.
        if mode == "ro":
            uri = reading_uri(self.path)
        elif (read_only := read_only_reason(self.path)) is not None:
            raise StoreReadOnlyError(f"{self.description} is read-only ({read_only})")
        else:
            uri = f"{self.path.absolute().as_uri()}?mode=rw"
        try:
            return sqlite3.connect(
                uri, uri=True, isolation_level=None, timeout=DEFAULT_BUSY_TIMEOUT
            )
        except sqlite3.Error as error:
            raise StoreNotFoundError(f"cannot open {self.description}: {error}") from error

    def _has_table(self, session: Session, table: str) -> bool:
        row = session.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None
