"""``Session``: one connection inside an open transaction, speaking a dialect."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from nenjim.infrastructure.storage.sql.dialect import Dialect

Row = tuple[Any, ...]


class RecordGuard(NamedTuple):
    """The anchor that attribute ``via`` of stored row ``key`` names: found and locked by
    one statement, without reading the row first."""

    anchor: str
    resource: str
    key: str
    via: str


Guard = tuple[str, str] | RecordGuard
"""An anchor to lock: ``(resource, key)``, or one named by a stored row's attribute."""


class Session:
    """The driver context of the SQL backends: a connection in a transaction.

    ``depth`` counts the savepoints opened on top of the outermost
    transaction (SQLite names its savepoints by it). Errors raised by the
    database pass through unchanged.
    """

    def __init__(self, connection: Any, dialect: Dialect, depth: int = 0) -> None:
        self.connection = connection
        self.dialect = dialect
        self.depth = depth
        self.guards: list[Guard] = []
        # A template's finished text is looked up here, not through a call per statement.
        self._texts = dialect.texts
        """Anchors the next operation locks first (sent with its first statement)."""

    def nested(self) -> Session:
        """The context of a savepoint opened inside this one."""
        return Session(self.connection, self.dialect, self.depth + 1)

    def execute(self, template: str, params: Sequence[object] = ()) -> int:
        """Run a statement template; the number of rows it changed."""
        rowcount: int = self.send(template, params).rowcount
        return rowcount

    def one(self, template: str, params: Sequence[object] = ()) -> Row | None:
        """The first row of a query template, or ``None``."""
        row: Row | None = self.send(template, params).fetchone()
        return row

    def all(self, template: str, params: Sequence[object] = ()) -> list[Row]:
        """Every row of a query template."""
        rows: list[Row] = self.send(template, params).fetchall()
        return rows

    def pipeline(self) -> AbstractContextManager[Any]:
        """A block whose statements (:meth:`send`) go out together: one round trip on
        PostgreSQL. Their results are read after the block; an error raises at its end."""
        return self.dialect.pipeline(self.connection)

    def send(self, template: str, params: Sequence[object] = ()) -> Any:
        """Run a statement template; its cursor (``rowcount``, ``fetchall()``), read after
        the block when sent inside :meth:`pipeline`. Every statement goes through here."""
        return self.connection.execute(self.text(template), params)

    def text(self, template: str) -> str:
        """A template's finished SQL text for this session's dialect."""
        return self._texts.get(template) or self.dialect.sql(template)

    def alone(
        self, template: str, params: Sequence[object] = (), *, in_transaction: str | None = None
    ) -> Any:
        """Run the one statement that is all of an operation's writes and checks; its answer
        (``rowcount``, ``fetchall()``), to be read before the session's next statement (a
        backend may run such statements on cursors it keeps and hand back the answer read
        off them). A session
        whose transaction has not begun yet may send ``template`` as a transaction of its
        own, so it must write all or nothing whatever it meets. Here the transaction is
        open: ``in_transaction`` (a statement of the same parameters that may leave misses
        to the transaction's rollback; by default ``template``) is one more of its
        statements."""
        return self.send(in_transaction or template, params)

    def execute_ddl(self, statement: str) -> None:
        """Run finished DDL text as is (it may quote literals holding ``?`` or braces)."""
        self.connection.execute(statement)
