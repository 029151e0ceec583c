"""SQLite's log events go in without a copy of the log: the row id numbers them, densely."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.storage import AppendEntry, Backend, DurableRecord
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)
from storage_sql import sql_rows

DIALECT = SQLiteDialect()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.ids", "0.1", {"value": value})


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    opened = open_backend(f"sqlite:///{tmp_path / 'store.db'}", FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("r"))
    yield opened
    opened.close()


@pytest.mark.parametrize(
    "statement",
    [
        DIALECT.append_event,
        DIALECT.append_event_at_row,
        DIALECT.append_events(1),
        DIALECT.append_events(3),
        DIALECT.append_events(100),
        DIALECT.append_event_at_anchored_row or "",
        DIALECT.append_events(1, anchored=True),
        DIALECT.append_events(100, anchored=True),
    ],
    ids=[
        "event",
        "event at its row",
        "one of a stream",
        "three",
        "a hundred",
        "event at its row, anchored",
        "one of a stream, anchored",
        "a hundred, anchored",
    ],
)
def test_an_event_statement_reads_no_copy_of_the_log(backend: Backend, statement: str) -> None:
    # A statement that reads the table it writes (max(notification_id) + 1) makes SQLite
    # copy the rows it will insert to an ephemeral table first.
    program = sql_rows(backend, "EXPLAIN " + statement, [None] * statement.count("?"))
    assert [row for row in program if row[1] == "OpenEphemeral"] == []


def test_every_write_takes_the_next_notification_id(backend: Backend) -> None:
    (first,) = sql_rows(backend, "SELECT max(notification_id) FROM {events}")[0]
    records = backend.view.records(WORKFLOW_STATES)
    journal = backend.view.streams(JOURNAL)
    records.insert(key="wf", revision=1, attributes={}, record=_record("one"))
    journal.append(
        stream=OWNER,
        expected_head=0,
        entries=[AppendEntry(f"e{n}", _record("e")) for n in range(3)],
    )
    records.replace(
        key="wf", expected_revision=1, next_revision=2, attributes={}, record=_record("two")
    )
    journal.append(stream=OWNER, expected_head=3, entries=[AppendEntry("e3", _record("e"))])
    records.delete(key="wf")
    rows = sql_rows(
        backend,
        "SELECT notification_id, originator_version FROM {events} WHERE notification_id > ? "
        "ORDER BY notification_id",
        (first,),
    )
    assert [int(row[0]) for row in rows] == list(range(first + 1, first + 8))
    # The stream's entries took their ids in version order.
    stream_versions = [int(row[1]) for row in rows[1:4]]
    assert stream_versions == sorted(stream_versions)
