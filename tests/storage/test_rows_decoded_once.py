"""A SQL backend decodes a stored text once per process and keeps the result, but what it
serves is always what the database holds now: a row or stream entry edited behind the
engine's back after it was read reads as edited, and a malformed one is refused every time
it is read (a failure is never remembered).

Every test runs on SQLite and on PostgreSQL; the edits are plain SQL on a connection of the
test's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from storage_side_door import Store

from nenjim.infrastructure.storage import AppendEntry, DurableRecord, SerializationError
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.testing.resources import (
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)

WF = "wf-1"


@pytest.fixture
def store(nenjim_durable_store_url: str) -> Iterator[Store]:
    backend = open_backend(nenjim_durable_store_url, FIXTURE_RESOURCES)
    yield Store(nenjim_durable_store_url, backend)
    backend.close()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.decoded", "0.1", {"value": value})


def _set_payload(store: Store, key: str, payload: str) -> None:
    assert store.execute("UPDATE storage_records SET payload = ? WHERE key = ?", (payload, key))


def test_a_record_edited_after_it_was_read_reads_as_edited(store: Store) -> None:
    records = store.backend.view.records(WORKFLOW_STATES)
    records.insert(key=WF, revision=1, attributes={}, record=_record("one"))
    assert records.read(WF) is not None
    _set_payload(store, WF, '{"value":"two"}')
    found = records.read(WF)
    assert found is not None
    assert found.record.payload == {"value": "two"}
    _set_payload(store, WF, '{"value":"one"}')
    again = records.read(WF)
    assert again is not None
    assert again.record.payload == {"value": "one"}


def test_a_malformed_payload_is_refused_on_every_read(store: Store) -> None:
    records = store.backend.view.records(WORKFLOW_STATES)
    records.insert(key=WF, revision=1, attributes={}, record=_record("one"))
    _set_payload(store, WF, '{"value": "one"}')  # JSON, but not its canonical text
    for _ in range(2):
        with pytest.raises(SerializationError, match="Canonical JSON"):
            records.read(WF)


def test_attributes_edited_to_a_wrong_type_are_refused_on_every_read(store: Store) -> None:
    items = store.backend.view.records(INVENTORY_ITEMS)
    attributes = {
        "code": "X1",
        "label": "thing",
        "quantity": 1,
        "reserved": None,
        "available": True,
        "flagged": None,
    }
    items.insert(key="item", revision=0, attributes=attributes, record=_record("i"))
    assert items.read("item") is not None
    wrong = json.dumps(attributes | {"quantity": "one"}, separators=(",", ":"))
    assert store.execute("UPDATE storage_records SET attributes = ? WHERE key = ?", (wrong, "item"))
    for _ in range(2):
        with pytest.raises(SerializationError, match="attributes"):
            items.read("item")


def test_a_stream_entry_edited_after_it_was_read_reads_as_edited(store: Store) -> None:
    view = store.backend.view
    view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("root"))
    streams = view.streams(JOURNAL)
    streams.append(stream=OWNER, expected_head=0, entries=[AppendEntry("a", _record("a"))])
    assert streams.read(stream=OWNER)[0].record.payload == {"value": "a"}
    log_stream = events.entry_stream(JOURNAL.id, OWNER)
    _, state = store.event(log_stream, 1)
    store.set_event_state(
        log_stream, 1, json.dumps(state | {"payload": {"value": "b"}}).encode("utf-8")
    )
    assert streams.read(stream=OWNER)[0].record.payload == {"value": "b"}
    store.set_event_state(log_stream, 1, b"not json")
    for _ in range(2):
        with pytest.raises(SerializationError, match="not JSON"):
            streams.read(stream=OWNER)
