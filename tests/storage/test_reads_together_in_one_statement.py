"""``View.read_together`` on PostgreSQL sends its reads as one statement, a ``UNION ALL``
whose rows each read gets back in its own order whatever order the server returns them
in; on SQLite, where a statement costs no round trip, the reads go one after the other."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.sqlite.storage import SQLiteBackend
from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.sql import together
from nenjim.infrastructure.storage.testing.resources import (
    INVENTORY_ITEMS,
    PLAIN_LOG,
    WORKFLOW_STATES,
)
from nenjim.infrastructure.storage.testing.together import filled

RESOURCES = (INVENTORY_ITEMS, PLAIN_LOG, WORKFLOW_STATES)


def _reads_and_calls(backend: Backend) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Five prepared reads, and what their own calls answer."""
    view = backend.view
    log, items = view.streams(PLAIN_LOG), view.records(INVENTORY_ITEMS)
    states = view.records(WORKFLOW_STATES)
    reads = (
        (log.prepared_read, log.read, {"stream": "s", "after": 1}),
        (items.prepared_scan, items.scan, {"index": "available", "equals": {"available": True}}),
        (states.prepared_read, states.read, {"key": "state"}),
        (items.prepared_scan, items.scan, {"index": None, "equals": {}, "after": "a", "limit": 2}),
        (states.prepared_read, states.read, {"key": "missing"}),
    )
    return (
        tuple(prepare(**arguments) for prepare, _, arguments in reads),
        tuple(call(**arguments) for _, call, arguments in reads),
    )


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every statement a psycopg cursor runs from now on."""
    texts: list[str] = []
    execute = psycopg.Cursor.execute

    def recorded(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        texts.append(str(query))
        return execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    return texts


@pytest.fixture
def postgres(postgres_schema_url: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(RESOURCES, postgres_schema_url)
    filled(backend)
    yield backend
    backend.close()


def test_on_postgresql_the_reads_are_one_statement_inside_and_outside_a_transaction(
    postgres: PostgresBackend, sent: list[str]
) -> None:
    reads, expected = _reads_and_calls(postgres)
    sent.clear()
    assert postgres.view.read_together(*reads) == expected
    (statement,) = sent
    assert statement.count("UNION ALL") == 4
    sent.clear()
    with postgres.transaction() as view:
        assert view.read_together(*reads) == expected
    assert [text for text in sent if "UNION ALL" in text] == [statement]


def test_on_sqlite_the_reads_go_one_after_the_other(tmp_path: Any) -> None:
    backend = SQLiteBackend(RESOURCES, tmp_path / "reads.db")
    try:
        filled(backend)
        reads, expected = _reads_and_calls(backend)
        texts: list[str] = []
        with backend.transaction() as view:
            connection = view._scope.context.connection  # type: ignore[union-attr]
            connection.set_trace_callback(texts.append)
            assert view.read_together(*reads) == expected
            connection.set_trace_callback(None)
        assert len(texts) == 5
        assert not any("UNION ALL" in text for text in texts)
    finally:
        backend.close()


def test_each_read_gets_its_rows_in_its_order_whatever_order_they_came_in() -> None:
    queries = [
        together.Query("A", [1], ("NULL::bigint", "NULL::bytea")),
        together.Query("B", [2, 3], ("NULL::text",) * 3),
        together.Query("C", [], ("NULL::text",) * 3),
    ]
    entries = [(position, f"state {position}".encode()) for position in (1, 2, 3)]
    rows = [("é", 1, "x"), ("Z", 2, "y"), ("a", 3, "z"), ("\U0001f600", 4, "w")]
    tagged = [(0, *entry, None, None, None, None, None, None) for entry in entries]
    tagged += [(1, None, None, *row, None, None, None) for row in rows]
    for _ in range(20):
        random.shuffle(tagged)
        found = together.answers(queries, tagged)
        assert found[0] == entries
        # By code point, which is UTF-8 byte order: "Z" < "a" < "é" < U+1F600.
        assert found[1] == sorted(rows, key=lambda row: row[0].encode())
        assert found[2] == []


def test_the_statement_gives_each_query_its_own_typed_columns() -> None:
    dialect = PostgresDialect("s")
    queries = [
        together.Query("SELECT a, b FROM t WHERE x = ?", [1], ("NULL::bigint", "NULL::bytea")),
        together.Query("SELECT c FROM u WHERE y = ?", [2], ("NULL::text",)),
    ]
    template, params = together.statement(dialect, queries)
    assert template == (
        "SELECT 0, q0.*, NULL::text FROM (SELECT a, b FROM t WHERE x = ?) AS q0 UNION ALL "
        "SELECT 1, NULL::bigint, NULL::bytea, q1.* FROM (SELECT c FROM u WHERE y = ?) AS q1"
    )
    assert params == [1, 2]
    assert together.statement(dialect, queries)[0] is template  # built once
