"""The maintenance store of an SQLite file (imports ``sqlite3``: SQLite stores only).

Compacting (:meth:`SQLiteStore.compact`): ``PRAGMA wal_checkpoint(TRUNCATE)``
copies every committed page into the database file and empties ``-wal``;
``VACUUM`` rebuilds the database from its live rows only (in WAL mode it
writes the new pages to ``-wal``); a second ``wal_checkpoint(TRUNCATE)``
writes them over the old pages, cuts the database file to its new length and
empties ``-wal`` again. Every page of the file is then a page of the rebuilt
database, so no byte of a deleted or overwritten row is left in either file.
The connection sets ``PRAGMA secure_delete = ON`` so that pages freed while
``VACUUM`` runs are zeroed too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import quote

from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.sqlite.files import check_writable, connect, require_file
from nenjim.infrastructure.sqlite.storage import SQLiteDriver
from nenjim.infrastructure.storage.audit.compaction import CompactedPart, CompactionReport
from nenjim.infrastructure.storage.audit.sessions import SqlStore, StoreNotFoundError
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.kinds import StoreMissingError
from nenjim.infrastructure.store.progress import Progress
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

    def compact(self, progress: Progress) -> CompactionReport:
        """Checkpoint, ``VACUUM``, checkpoint: see the module's docstring.

        ``VACUUM`` takes the writer lock and the checkpoints wait for readers of
        older snapshots, each up to the store's busy timeout (``SQLITE_LOCK_TIMEOUT``,
        30 s); a checkpoint still blocked then is a ``StoreUnavailableError``.
        """
        try:
            path = require_file(self.location)
        except StoreMissingError as error:
            raise StoreNotFoundError(str(error)) from None
        check_writable(self.location)
        files = (path, Path(f"{path}-wal"))
        before = [_size(file) for file in files]
        task, steps = f"compacting {path.name}", 3
        with closing(connect(self.location, f"{path.absolute().as_uri()}?mode=rw")) as connection:
            connection.execute("BEGIN")
            try:
                self._require_storage(Session(connection, self.dialect))
            finally:
                connection.execute("ROLLBACK")
            connection.execute("PRAGMA secure_delete = ON")
            progress(task, 0, steps)
            self._checkpoint(connection)
            progress(task, 1, steps)
            connection.execute("VACUUM")
            progress(task, 2, steps)
            self._checkpoint(connection)
            progress(task, 3, steps)
        parts = (
            CompactedPart(str(file), size, _size(file))
            for file, size in zip(files, before, strict=True)
        )
        return CompactionReport(self.description, "file", tuple(parts))

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        row = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row is not None and row[0] != 0:
            timeout = self.location.env["SQLITE_LOCK_TIMEOUT"]
            raise StoreUnavailableError(
                f"cannot compact {self.description}: another connection kept its write-ahead "
                f"log busy for {timeout} s; try again when it is idle"
            )

    def _has_table(self, session: Session, table: str) -> bool:
        row = session.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None


def _size(file: Path) -> int:
    """The file's size in bytes; 0 for a file that does not exist."""
    try:
        return file.stat().st_size
    except FileNotFoundError:
        return 0
