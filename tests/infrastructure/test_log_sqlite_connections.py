"""The SQLite connections of a log: each keeps its compiled statements, as a writer needs.

An append runs the same few statements in turn (the event, the claim, the
transparency entry, the commit). A connection that keeps only the last
compiled statement compiles every one of them again on every append.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from eventsourcing.domain import Aggregate

from nenjim.infrastructure.log import Claim, LogApplication


class Item(Aggregate):
    """An aggregate with nothing in it."""


@contextmanager
def pooled_connection(app: LogApplication) -> Iterator[sqlite3.Connection]:
    """A connection of the log's pool, in a read transaction."""
    with app.recorder.datastore.transaction(commit=False) as cursor:  # type: ignore[attr-defined]
        yield cursor.sqlite_cursor.connection


def compilations(connection: sqlite3.Connection, statements: list[str], rounds: int) -> int:
    """How often SQLite compiled a ``SELECT`` while ``statements`` ran in turn, ``rounds`` times.

    The authorizer is consulted when a statement is compiled, never when a compiled
    one runs again.
    """
    compiled = 0

    def authorizer(action: int, *_: object) -> int:
        nonlocal compiled
        if action == sqlite3.SQLITE_SELECT:
            compiled += 1
        return sqlite3.SQLITE_OK

    connection.set_authorizer(authorizer)
    try:
        for _ in range(rounds):
            for statement in statements:
                connection.execute(statement).fetchall()
    finally:
        connection.set_authorizer(None)
    return compiled


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LogApplication]:
    application = LogApplication(f"sqlite:///{tmp_path / 'log.sqlite'}")
    item = Item()
    application.append([item], [Claim("name", "k", str(item.id))])
    yield application
    application.close()


def test_statements_run_in_turn_are_compiled_once(app: LogApplication) -> None:
    statements = [f"SELECT {n}" for n in range(8)]
    with pooled_connection(app) as connection:
        assert compilations(connection, statements, rounds=5) == len(statements)


def test_a_connection_is_the_stock_one_otherwise(app: LogApplication) -> None:
    with pooled_connection(app) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.row_factory is sqlite3.Row
        assert connection.isolation_level is None


def test_appends_after_many_statements_are_all_readable(app: LogApplication) -> None:
    items = [Item() for _ in range(200)]
    for index, item in enumerate(items):  # more distinct statements than the cache holds
        app.append([item], [Claim("name", f"k{index}", str(item.id))])
    assert app.claim_owner("name", "k199") == str(items[-1].id)
    assert len(app.recorder.select_notifications(start=None, limit=500)) == 201
