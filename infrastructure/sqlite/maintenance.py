"""The maintenance store of an SQLite file (imports ``sqlite3``: SQLite stores only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import quote

from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.sqlite.files import check_writable, connect, require_file
from nenjim.infrastructure.sqlite.storage import SQLiteDriver
from nenjim.infrastructure.storage.audit.sessions import SqlStore, StoreNotFoundError
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.kinds import StoreMissingError
from nenjim.infrastructure.store.urls import StoreLocation, resolve_store_url


class SQLiteStore(SqlStore):
    """An SQLite file, opened by URI so that nothing ever creates it."""

    def __init__(self, location: StoreLocation) -> None:
        self.path = Path(location.env["SQLITE_DBNAME"])
        super().__init__(location, f"SQLite database {self.path}", SQLiteDialect())

    @classmethod
    def of_driver(cls, driver: SqlDriver) -> SQLiteStore:
        assert isinstance(driver, SQLiteDriver)
        return cls(resolve_store_url("sqlite:" + quote(str(driver.path.absolute()))))

    @contextmanager
    def exclusive(self) -> Iterator[Session]:
        try:
            path = require_file(self.location)
        except StoreMissingError as error:
            raise StoreNotFoundError(str(error)) from None
        check_writable(self.location)
        with closing(connect(self.location, f"{path.absolute().as_uri()}?mode=rw")) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                session = Session(connection, self.dialect)
                self._require_storage(session)
                yield session
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _has_table(self, session: Session, table: str) -> bool:
        row = session.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None
