"""A root-view read outside a transaction of its thread (``read``, ``scan``, ``scan_keys``,
and every read of a read scope: ``Backend.reading``, ``Backend.run_reading``)
is one statement sent without a transaction around it: on SQLite no ``BEGIN IMMEDIATE``
and no ``COMMIT``, on PostgreSQL no ``BEGIN`` and no ``COMMIT``. It reads what was
committed; inside a transaction of its thread it is part of it and sees its writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sent_statements import record_statements

from nenjim.infrastructure.sqlite.storage import SQLiteDriver
from nenjim.infrastructure.storage import Backend, DurableRecord, View
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    WORKFLOW_STATES,
)


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.lone-reads", "0.1", {"value": value})


@pytest.fixture
def statements(durable_store_url: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word of each statement the backend sends: on SQLite every one,
    transaction control included; on PostgreSQL every one, and ``BEGIN`` for each
    transaction a connection begins."""
    if durable_store_url.startswith("postgresql"):
        return record_statements(monkeypatch, psycopg.Cursor)
    sent: list[str] = []
    connect = SQLiteDriver._connect

    def traced(driver: SQLiteDriver) -> Any:
        connection = connect(driver)
        connection.set_trace_callback(lambda text: sent.append(text.split()[0].upper()))
        return connection

    monkeypatch.setattr(SQLiteDriver, "_connect", traced)
    return sent


@pytest.fixture
def backend(durable_store_url: str, statements: list[str]) -> Iterator[Backend]:
    opened = open_backend(durable_store_url, FIXTURE_RESOURCES)
    opened.view.records(WORKFLOW_STATES).insert(
        key="k", revision=0, attributes={}, record=_record("stored")
    )
    yield opened
    opened.close()


def test_a_lone_read_is_one_statement_without_a_transaction(
    backend: Backend, statements: list[str]
) -> None:
    states = backend.view.records(WORKFLOW_STATES)
    statements.clear()
    row = states.read("k")
    assert row is not None
    assert row.record == _record("stored")
    assert statements == ["SELECT"]
    statements.clear()
    assert states.read("missing") is None
    assert statements == ["SELECT"]


def test_lone_scans_are_one_statement_each(backend: Backend, statements: list[str]) -> None:
    items = backend.view.records(INVENTORY_ITEMS)
    for key in ("b", "a"):
        items.insert(
            key=key,
            revision=0,
            attributes={
                "code": None,
                "label": key,
                "quantity": 1,
                "reserved": None,
                "available": True,
                "flagged": None,
            },
            record=_record(key),
        )
    statements.clear()
    rows = items.scan(index="available", equals={"available": True})
    keys = items.scan_keys(index="available", equals={"available": True})
    assert [row.key for row in rows] == list(keys) == ["a", "b"]
    assert statements == ["SELECT", "SELECT"]


def test_a_lone_read_sees_what_another_thread_committed(backend: Backend) -> None:
    states = backend.view.records(WORKFLOW_STATES)
    with backend.transaction() as view:
        view.records(WORKFLOW_STATES).replace(
            key="k",
            expected_revision=0,
            next_revision=1,
            attributes={},
            record=_record("replaced"),
        )
    row = states.read("k")
    assert row is not None
    assert (row.revision, row.record) == (1, _record("replaced"))


def test_a_read_inside_a_transaction_of_the_thread_sees_its_writes(backend: Backend) -> None:
    states = backend.view.records(WORKFLOW_STATES)

    def write_read_then_roll_back() -> None:
        with backend.transaction():
            states.insert(key="uncommitted", revision=0, attributes={}, record=_record("u"))
            found = states.read("uncommitted")  # the root view joins the open transaction
            assert found is not None
            assert found.record == _record("u")
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError, match="roll back"):
        write_read_then_roll_back()
    assert states.read("uncommitted") is None


def _two_reads(view: View) -> tuple[Any, Any]:
    states = view.records(WORKFLOW_STATES)
    return states.read("k"), states.read("missing")


def test_a_read_scope_sends_its_reads_without_a_transaction(
    backend: Backend, statements: list[str]
) -> None:
    statements.clear()
    found, missing = backend.run_reading(_two_reads)
    assert found is not None
    assert (found.record, missing) == (_record("stored"), None)
    with backend.reading() as view:
        assert _two_reads(view)[0] == found
    assert statements == ["SELECT"] * 4


def test_a_read_scope_waits_for_no_writer(durable_store_url: str, backend: Backend) -> None:
    """Another store's writer holds the write lock (SQLite) or the row (PostgreSQL): a read
    scope still reads the last commit, at once."""
    other = open_backend(durable_store_url, FIXTURE_RESOURCES)
    try:
        with other.transaction() as view:
            view.records(WORKFLOW_STATES).replace(
                key="k", expected_revision=0, next_revision=1, attributes={}, record=_record("new")
            )
            found, _ = backend.run_reading(_two_reads)
            with backend.reading() as reading:
                again, _ = _two_reads(reading)
        assert found is not None
        assert again is not None
        assert (found.revision, again.revision) == (0, 0)
        after, _ = backend.run_reading(_two_reads)
        assert after is not None
        assert after.revision == 1
    finally:
        other.close()
