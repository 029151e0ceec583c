"""Appends larger than one multi-row ``INSERT``: every chunk stored, numbered and checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nenjim.infrastructure.storage import AppendEntry, Backend, ConflictError, DurableRecord
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events, streams
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES, JOURNAL, OWNER, ROOTS
from storage_sql import log_stream, sql_rows

SIZE = events.EVENTS_PER_STATEMENT * 2 + 200  # three statements' worth of events and of ids
assert streams.IDS_PER_STATEMENT * 2 < SIZE


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.batch", "0.1", {"value": value, "ratio": 1e-7})


def _entries(ids: list[str]) -> list[AppendEntry]:
    return [AppendEntry(entry_id, _record(entry_id)) for entry_id in ids]


@pytest.fixture
def backend(durable_store_url: str) -> Iterator[Backend]:
    opened = open_backend(durable_store_url, FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("r"))
    yield opened
    opened.close()


def test_an_append_over_several_statements_stores_every_entry_in_order(backend: Backend) -> None:
    journal = backend.view.streams(JOURNAL)
    journal.append(stream=OWNER, expected_head=0, entries=_entries(["first"]))
    ids = [f"e{n}" for n in range(SIZE)]
    stored = journal.append(stream=OWNER, expected_head=1, entries=_entries(ids))

    assert [entry.position for entry in stored] == list(range(2, SIZE + 2))
    read = journal.read(stream=OWNER)
    assert [(entry.position, entry.id) for entry in read] == [(1, "first")] + [
        (n + 2, entry_id) for n, entry_id in enumerate(ids)
    ]
    assert read[5].record == _record(ids[4])
    logged = log_stream(backend, events.entry_stream(JOURNAL.id, OWNER))
    assert [version for version, _, _ in logged] == list(range(1, SIZE + 2))
    assert [state["id"] for _, _, state in logged] == ["first", *ids]
    assert logged[3][2]["payload"] == {"value": ids[2], "ratio": 1e-7}
    notifications = [
        int(row[0])
        for row in sql_rows(
            backend,
            "SELECT notification_id FROM {events} WHERE originator_id = ? "
            "ORDER BY originator_version",
            (backend.driver.dialect.originator(events.entry_stream(JOURNAL.id, OWNER)),),  # type: ignore[attr-defined]
        )
    ]
    assert notifications == sorted(notifications)
    if backend.driver.dialect.dense_notification_ids:  # type: ignore[attr-defined]
        # SQLite numbers without gaps: the batch took the next ids in version order.
        assert notifications == list(range(notifications[0], notifications[0] + SIZE + 1))


def test_a_known_id_in_a_later_statement_refuses_the_whole_append(backend: Backend) -> None:
    journal = backend.view.streams(JOURNAL)
    journal.append(stream=OWNER, expected_head=0, entries=_entries(["known"]))
    ids = [f"e{n}" for n in range(SIZE)]
    ids[SIZE - 50] = "known"  # in the last statement of ids

    with pytest.raises(ConflictError, match=f"{JOURNAL.id}/{OWNER}/known"):
        journal.append(stream=OWNER, expected_head=1, entries=_entries(ids))

    assert journal.head(stream=OWNER) == 1
    assert [entry.id for entry in journal.read(stream=OWNER)] == ["known"]
    assert len(log_stream(backend, events.entry_stream(JOURNAL.id, OWNER))) == 1
    journal.append(stream=OWNER, expected_head=1, entries=_entries(["e0"]))
