"""The SQL backends keep records and streams on an append-only log (``storage_events``).

Every test runs on SQLite and on PostgreSQL. The log is read through the
backend's own session, so table names and placeholders follow the dialect.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nenjim.infrastructure.storage import AppendEntry, Backend, ConflictError, DurableRecord
from nenjim.infrastructure.storage.entries import RecordEntry
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)
from storage_sql import log_stream, sql_rows

AWKWARD_KEYS = (
    "it's",
    'say "hi"',
    "back\\slash",
    "100%",
    "_%_",
    "?",
    "{records}",
    "😀 non-BMP",
    "𝄞",
    "'; DROP TABLE storage_records; --",
    "a\nb",
    "Z",
    "é",
    "€ euro",
)


@pytest.fixture
def backend(nenjim_durable_store_url: str) -> Iterator[Backend]:
    """A fresh SQL backend over the kit's resources, with the owner's root at revision 0."""
    url = nenjim_durable_store_url
    opened = open_backend(url, FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("root"))
    yield opened
    opened.close()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.log", "0.1", {"value": value})


def test_every_mutation_appends_to_the_log_in_order(backend: Backend) -> None:
    first = sql_rows(backend, "SELECT max(notification_id) FROM {events}")[0][0]
    records = backend.view.records(WORKFLOW_STATES)
    records.insert(key="wf", revision=1, attributes={}, record=_record("one"))
    records.replace(
        key="wf", expected_revision=1, next_revision=2, attributes={}, record=_record("two")
    )
    records.delete(key="wf")
    journal = backend.view.streams(JOURNAL)
    journal.append(
        stream=OWNER,
        expected_head=0,
        entries=[AppendEntry("a", _record("a")), AppendEntry("b", _record("b"))],
    )
    journal.delete(stream=OWNER)
    backend.view.blobs(CONTENT_BLOBS).put_if_absent(
        key="blob", data=b"\x00\xff", attributes={"canonicalization_version": 1}
    )
    # Reads, no-op deletes and a repeated blob put are not mutations.
    records.read("wf")
    records.delete(key="wf")
    journal.delete(stream=OWNER)
    backend.view.blobs(CONTENT_BLOBS).put_if_absent(
        key="blob", data=b"\x00\xff", attributes={"canonicalization_version": 2}
    )

    rows = sql_rows(
        backend,
        "SELECT notification_id, topic, state FROM {events} WHERE notification_id > ? "
        "ORDER BY notification_id",
        (first,),
    )
    assert [row[1] for row in rows] == [
        events.RECORD_INSERTED,
        events.RECORD_REPLACED,
        events.RECORD_DELETED,
        events.STREAM_ENTRY_APPENDED,
        events.STREAM_ENTRY_APPENDED,
        events.STREAM_DELETED,
        events.BLOB_PUT,
    ]
    ids = [int(row[0]) for row in rows]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    states = [events.decode_event(row[1], row[2]) for row in rows]
    assert [state.get("key", state.get("stream")) for state in states] == [
        "wf",
        "wf",
        "wf",
        OWNER,
        OWNER,
        OWNER,
        "blob",
    ]
    assert states[1]["payload"] == {"value": "two"}
    assert states[4]["id"] == "b"
    assert states[6]["attributes"] == {"canonicalization_version": 1}
    assert states[6]["data"] == b"\x00\xff"


def test_record_history_spans_insert_replace_delete_and_reinsert(backend: Backend) -> None:
    records = backend.view.records(EXECUTIONS)
    attributes = {"owner": OWNER, "active": True}
    records.insert(key="run", revision=0, attributes=attributes, record=_record("started"))
    records.replace(
        key="run",
        expected_revision=0,
        next_revision=1,
        attributes={"owner": OWNER, "active": False},
        record=_record("done"),
    )
    records.delete(key="run", expected_revision=1)
    assert records.read("run") is None
    records.insert(key="run", revision=5, attributes=attributes, record=_record("again"))

    history = records.history("run")
    assert [(entry.revision, entry.record.payload["value"]) for entry in history] == [
        (0, "started"),
        (1, "done"),
        (5, "again"),
    ]
    assert [dict(entry.attributes) for entry in history] == [
        attributes,
        {"owner": OWNER, "active": False},
        attributes,
    ]
    assert history[1].attributes["active"] is False

    log = log_stream(backend, events.record_stream(EXECUTIONS.id, "run"))
    assert [(version, topic) for version, topic, _ in log] == [
        (1, events.RECORD_INSERTED),
        (2, events.RECORD_REPLACED),
        (3, events.RECORD_DELETED),
        (4, events.RECORD_INSERTED),
    ]
    assert log[2][2] == {"resource": EXECUTIONS.id, "key": "run", "revision": 1}
    live = sql_rows(
        backend,
        "SELECT revision, log_version FROM {records} WHERE resource = ? AND key = ?",
        (EXECUTIONS.id, "run"),
    )
    assert [tuple(row) for row in live] == [(5, 4)]


def test_deleted_stream_restarts_at_one_while_the_log_keeps_old_entries(
    backend: Backend,
) -> None:
    journal = backend.view.streams(JOURNAL)
    journal.append(
        stream=OWNER,
        expected_head=0,
        entries=[AppendEntry("a", _record("a")), AppendEntry("b", _record("b"))],
    )
    journal.delete(stream=OWNER)
    again = journal.append(stream=OWNER, expected_head=0, entries=[AppendEntry("a", _record("c"))])
    assert [(entry.position, entry.id) for entry in again] == [(1, "a")]
    assert journal.head(stream=OWNER) == 1
    assert [(e.position, e.id, e.record.payload) for e in journal.read(stream=OWNER)] == [
        (1, "a", {"value": "c"})
    ]
    assert journal.read(stream=OWNER, after=1) == ()

    log = log_stream(backend, events.entry_stream(JOURNAL.id, OWNER))
    assert [(version, topic, state.get("id")) for version, topic, state in log] == [
        (1, events.STREAM_ENTRY_APPENDED, "a"),
        (2, events.STREAM_ENTRY_APPENDED, "b"),
        (3, events.STREAM_DELETED, None),
        (4, events.STREAM_ENTRY_APPENDED, "a"),
    ]
    assert log[0][2]["payload"] == {"value": "a"}
    heads = sql_rows(
        backend,
        "SELECT head, base FROM {heads} WHERE resource = ? AND stream = ?",
        (JOURNAL.id, OWNER),
    )
    assert [tuple(row) for row in heads] == [(1, 3)]


def test_a_restarted_stream_refuses_only_the_ids_of_its_live_entries(backend: Backend) -> None:
    """An id from before the stream's delete goes in again; one of the live stream is
    refused and named, the first of the batch that is, and nothing of the batch stays."""
    journal = backend.view.streams(JOURNAL)
    journal.append(stream=OWNER, expected_head=0, entries=_entries("a", "b", "c"))
    journal.delete(stream=OWNER)
    journal.append(stream=OWNER, expected_head=0, entries=_entries("c", "a"))
    with pytest.raises(ConflictError, match=r"duplicate stream entry identity: .*/owner-1/a$"):
        journal.append(stream=OWNER, expected_head=2, entries=_entries("b", "a", "c"))
    assert [entry.id for entry in journal.read(stream=OWNER)] == ["c", "a"]
    stored = journal.append(stream=OWNER, expected_head=2, entries=_entries("b"))
    assert [(entry.position, entry.id) for entry in stored] == [(3, "b")]


def _entries(*ids: str) -> list[AppendEntry]:
    return [AppendEntry(entry_id, _record(entry_id)) for entry_id in ids]


def test_a_rolled_back_transaction_leaves_nothing_in_the_log(backend: Backend) -> None:
    before = sql_rows(backend, "SELECT count(*) FROM {events}")[0][0]

    def write_then_fail() -> None:
        with backend.transaction() as view:
            view.records(WORKFLOW_STATES).insert(
                key="wf", revision=1, attributes={}, record=_record("x")
            )
            view.streams(JOURNAL).append(
                stream=OWNER, expected_head=0, entries=[AppendEntry("a", _record("a"))]
            )
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError, match="roll back"):
        write_then_fail()
    assert sql_rows(backend, "SELECT count(*) FROM {events}")[0][0] == before
    assert backend.view.streams(JOURNAL).head(stream=OWNER) == 0


def test_awkward_keys_round_trip_everywhere_and_scan_in_utf8_byte_order(
    backend: Backend,
) -> None:
    records = backend.view.records(EXECUTIONS)
    for key in AWKWARD_KEYS:
        backend.view.records(ROOTS).insert(key=key, revision=0, attributes={}, record=_record(key))
        records.insert(
            key=key, revision=0, attributes={"owner": OWNER, "active": False}, record=_record(key)
        )
        stream = backend.view.streams(JOURNAL)
        stream.append(stream=key, expected_head=0, entries=[AppendEntry(key, _record(key))])
        backend.view.blobs(CONTENT_BLOBS).put_if_absent(
            key=key, data=key.encode(), attributes={"canonicalization_version": 1}
        )

    expected = sorted(AWKWARD_KEYS, key=str.encode)
    scanned = records.scan(index="owner", equals={"owner": OWNER})
    assert [entry.key for entry in scanned] == expected
    assert [entry.record.payload["value"] for entry in scanned] == expected
    for cut in (2, 7):
        page = records.scan(index="owner", equals={"owner": OWNER}, after=expected[cut], limit=3)
        assert [entry.key for entry in page] == expected[cut + 1 : cut + 4]
    for key in AWKWARD_KEYS:
        assert records.fetch(key).key == key
        assert backend.view.records(ROOTS).fetch(key).record.payload == {"value": key}
        (entry,) = backend.view.streams(JOURNAL).read(stream=key)
        assert (entry.position, entry.id) == (1, key)
        assert backend.view.blobs(CONTENT_BLOBS).fetch(key).data == key.encode()
        assert [e.key for e in records.history(key)] == [key]


@given(name=st.text())
def test_log_stream_ids_are_the_uuidv5_of_their_names(name: str) -> None:
    """A stored log stream's id is the RFC 9562 UUIDv5 of its name: the same value,
    text, hash and version as the standard library's, so stores written before keep
    their streams. Lone surrogates, which UTF-8 cannot encode, never reach it (keys are
    validated first)."""
    assume(all(not 0xD800 <= ord(character) <= 0xDFFF for character in name))
    made, standard = events.name_based(name), uuid.uuid5(events.NAMESPACE, name)
    assert (made, str(made), hash(made), made.version) == (
        standard,
        str(standard),
        hash(standard),
        5,
    )
    assert made.variant == uuid.RFC_4122
    assert events.record_stream("r", name) == uuid.uuid5(events.NAMESPACE, f"records\0r\0{name}")


_TEXT = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\0"), min_size=1, max_size=12
)


@given(
    key=_TEXT,
    revision=st.integers(0, 2**63 - 1),
    owner=_TEXT,
    active=st.booleans(),
    payload=st.dictionaries(
        _TEXT, st.integers(-(2**53) + 1, 2**53 - 1) | _TEXT | st.none(), max_size=3
    ),
)
def test_a_record_writes_state_is_the_json_text_of_its_row(
    key: str, revision: int, owner: str, active: bool, payload: dict[str, Any]
) -> None:
    """The state text assembled from pieces is the text the log's encoder writes for the
    row as one object, with the payload's Canonical JSON in it, for keys and values that
    JSON escapes (quotes, backslashes, control and non-ASCII characters)."""
    record = DurableRecord("test.state", "0.1", payload)
    entry = RecordEntry(key, revision, {"owner": owner, "active": active}, record)
    text = events.record_state(EXECUTIONS.id, entry, events.attributes_text(entry))
    recorded_at = json.loads(text)["recorded_at"]
    whole = {
        "resource": EXECUTIONS.id,
        "key": key,
        "revision": revision,
        "attributes": {"owner": owner, "active": active},
        "recorded_at": recorded_at,
        "record_type": "test.state",
        "format_version": "0.1",
        "payload": None,
    }
    assert text == dumps(whole)[: -len("null}")] + record.payload_json + "}"
    assert datetime.fromisoformat(recorded_at).tzinfo is not None
