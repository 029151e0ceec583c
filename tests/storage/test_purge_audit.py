"""The audit and the repair after purges: stubs count as the versions they hold, markers are a
log stream of their own, every marker is checked against its stubs, and replaying the log rebuilds
the same inline tables.

Every test runs on SQLite and on PostgreSQL. The tampering is plain SQL on a connection of the
test's own, as an operator's would be.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from storage_side_door import Store as SideDoor

from nenjim.infrastructure.storage import AppendEntry, DurableRecord
from nenjim.infrastructure.storage import purge as purge_module
from nenjim.infrastructure.storage.audit import AuditReport, audit_backend, repair_backend
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)

WF = "wf-1"
OTHER = "other"
BLOB_DATA = b"\x00\xffbytes"


class Store(SideDoor):
    """The side door, an event's state written as a mapping, and the inline tables wiped."""

    def set_state(self, log_stream: uuid.UUID, version: int, state: dict[str, Any]) -> None:
        text = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
        self.set_event_state(log_stream, version, text)

    def wipe_inline_tables(self) -> None:
        for table in ("storage_records", "storage_stream_heads", "storage_stream_ids"):
            self.execute(f"DELETE FROM {table}")
        self.execute("DELETE FROM storage_blobs")


@pytest.fixture
def store(nenjim_durable_store_url: str) -> Iterator[Store]:
    """A store with a workflow row at revision 2 (and another), a run, a journal of five entries,
    an inventory item and a blob; the audit is clean."""
    backend = open_backend(nenjim_durable_store_url, FIXTURE_RESOURCES)
    view = backend.view
    for root in (OWNER, "side"):
        view.records(ROOTS).insert(key=root, revision=0, attributes={}, record=_record(root))
    workflows = view.records(WORKFLOW_STATES)
    for key in (WF, OTHER):
        workflows.insert(key=key, revision=1, attributes={}, record=_record(f"{key}-one"))
        workflows.replace(
            key=key, expected_revision=1, next_revision=2, attributes={}, record=_record("two")
        )
    view.records(EXECUTIONS).insert(
        key="run-1", revision=0, attributes={"owner": OWNER, "active": True}, record=_record("r")
    )
    view.streams(JOURNAL).append(
        stream=OWNER, expected_head=0, entries=[_entry(name) for name in "abcde"]
    )
    view.streams(JOURNAL).append(stream="side", expected_head=0, entries=[_entry("s")])
    view.records(INVENTORY_ITEMS).insert(
        key="item", revision=0, attributes=_item("X1"), record=_record("i")
    )
    view.blobs(CONTENT_BLOBS).put_if_absent(
        key="blob", data=BLOB_DATA, attributes={"canonicalization_version": 1}
    )
    assert audit_backend(backend).ok
    yield Store(nenjim_durable_store_url, backend)
    backend.close()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.audit", "0.1", {"value": value})


def _entry(entry_id: str) -> AppendEntry:
    return AppendEntry(entry_id, _record(entry_id))


def _item(code: str) -> dict[str, Any]:
    return {
        "code": code,
        "label": "thing",
        "quantity": 1,
        "reserved": None,
        "available": True,
        "flagged": None,
    }


def _purge_every_kind(store: Store) -> None:
    """Purges of a record, a whole stream, a stream's first entries and a blob, and writes of
    the purged keys afterwards."""
    view = store.backend.view
    workflows = view.records(WORKFLOW_STATES)
    assert workflows.purge(key=WF) is not None
    workflows.insert(key=WF, revision=1, attributes={}, record=_record("again"))
    workflows.delete(key=OTHER)
    assert workflows.purge(key=OTHER) is not None
    journal = view.streams(JOURNAL)
    assert journal.purge(stream=OWNER, before=3) is not None
    journal.append(stream=OWNER, expected_head=5, entries=[_entry("a"), _entry("f")])
    assert journal.purge(stream="side") is not None
    journal.append(stream="side", expected_head=0, entries=[_entry("s")])
    blobs = view.blobs(CONTENT_BLOBS)
    assert blobs.purge(key="blob") is not None
    blobs.put_if_absent(key="blob", data=b"new", attributes={"canonicalization_version": 1})
    assert view.records(EXECUTIONS).purge_matching(index="owner", equals={"owner": OWNER})


def _lines(report: AuditReport, key: str) -> list[str]:
    """The finding lines naming ``key``; every finding must name it."""
    lines = report.lines()
    assert lines, "the audit found nothing"
    assert all(f'["{key}"]' in line for line in lines), lines
    return lines


# clean after purges


def test_purges_of_every_kind_audit_clean(store: Store) -> None:
    _purge_every_kind(store)

    report = audit_backend(store.backend)

    assert report.ok, report.lines()
    assert report.live == {"records": 4, "streams": 2, "blobs": 1}
    assert not repair_backend(store.backend).changed


def test_replaying_the_log_after_purges_rebuilds_the_same_inline_tables(store: Store) -> None:
    _purge_every_kind(store)
    before = store.snapshot()
    store.wipe_inline_tables()
    assert not audit_backend(store.backend).ok

    assert repair_backend(store.backend).changed

    assert store.snapshot() == before
    assert audit_backend(store.backend).ok


def test_a_repair_after_purges_restores_an_edited_row(store: Store) -> None:
    _purge_every_kind(store)
    before = store.snapshot()
    store.execute("UPDATE storage_stream_heads SET head = 6 WHERE stream = ?", (OWNER,))
    store.execute("DELETE FROM storage_stream_ids WHERE stream = ? AND entry_id = 'd'", (OWNER,))
    store.execute("UPDATE storage_blobs SET data = ?", (b"forged",))
    assert len(audit_backend(store.backend).findings) == 3

    assert repair_backend(store.backend).changed

    assert store.snapshot() == before
    assert audit_backend(store.backend).ok


def test_a_purged_blob_put_again_is_compared_with_its_second_put(store: Store) -> None:
    _purge_every_kind(store)
    store.execute("UPDATE storage_blobs SET data = ?", (BLOB_DATA,))

    lines = _lines(audit_backend(store.backend), "blob")

    assert lines[0].startswith('storage_blobs content.blobs["blob"] data: log says 3 bytes')


# tampering with stubs and markers


def _record_stream() -> uuid.UUID:
    return events.record_stream(WORKFLOW_STATES.id, OTHER)


def _marker_stream() -> uuid.UUID:
    return purge_module.purge_stream("records", WORKFLOW_STATES.id, OTHER)


def test_an_edited_stub_digest_is_a_finding_in_the_log(store: Store) -> None:
    _purge_every_kind(store)
    topic, stub = store.event(_record_stream(), 1)
    assert topic == purge_module.PURGED
    store.set_state(_record_stream(), 1, {**stub, "digest": "0" * 64})

    report = audit_backend(store.backend)

    assert _lines(report, OTHER) == [
        'storage_events workflow.states["other"] version 1: '
        "purge marker 1: its stubs do not match its digest"
    ]
    assert not report.repairable


def test_a_deleted_stub_is_a_finding_in_the_log(store: Store) -> None:
    _purge_every_kind(store)
    store.delete_event(_record_stream(), 2)

    report = audit_backend(store.backend)

    lines = [line for line in report.lines() if "notification id" not in line]
    assert lines == [
        'storage_events workflow.states["other"] version 1: '
        "purge marker 1 counts 2 events; the log holds 1 stubs of it",
        'storage_events workflow.states["other"] version 3: version 2 missing before it',
    ]


def test_a_marker_with_another_count_is_a_finding_in_the_log(store: Store) -> None:
    _purge_every_kind(store)
    topic, marker = store.event(_marker_stream(), 1)
    assert topic == purge_module.PURGE
    assert marker["events"] == 2
    store.set_state(_marker_stream(), 1, {**marker, "events": 3})

    assert _lines(audit_backend(store.backend), OTHER) == [
        'storage_events workflow.states["other"] version 1: '
        "purge marker 1 counts 3 events; the log holds 2 stubs of it"
    ]


def test_a_deleted_marker_leaves_stubs_without_a_marker(store: Store) -> None:
    _purge_every_kind(store)
    store.delete_event(_marker_stream(), 1)

    lines = [line for line in audit_backend(store.backend).lines() if "notification" not in line]

    assert lines == [
        'storage_events workflow.states["other"] version 1: '
        "purge stub names marker 1; the key's purge log stream has none"
    ]


def test_a_stub_naming_another_marker_is_a_finding_in_the_log(store: Store) -> None:
    _purge_every_kind(store)
    _, stub = store.event(_record_stream(), 2)
    store.set_state(_record_stream(), 2, {**stub, "marker": 2})

    assert _lines(audit_backend(store.backend), OTHER) == [
        'storage_events workflow.states["other"] version 2: '
        "purge stub names marker 2; the key's purge log stream has none",
        'storage_events workflow.states["other"] version 1: '
        "purge marker 1 counts 2 events; the log holds 1 stubs of it",
    ]


def test_a_stub_of_a_topic_without_payload_is_a_finding_in_the_log(store: Store) -> None:
    _purge_every_kind(store)
    _, stub = store.event(_record_stream(), 1)
    store.set_state(_record_stream(), 1, {**stub, "topic": events.RECORD_DELETED})

    lines = _lines(audit_backend(store.backend), OTHER)

    assert lines[0] == (
        'storage_events workflow.states["other"] version 1: purge stub of topic '
        "'nenjim.storage:RecordDeleted', not a payload topic of records"
    )


def test_a_marker_of_a_key_whose_stubs_are_gone_is_a_finding_in_the_log(store: Store) -> None:
    _purge_every_kind(store)
    blob_stream = events.blob_stream(CONTENT_BLOBS.id, "blob")
    store.execute(
        "DELETE FROM storage_events WHERE originator_id = ?", (store.originator(blob_stream),)
    )
    store.execute("DELETE FROM storage_blobs")

    lines = [line for line in audit_backend(store.backend).lines() if "notification" not in line]

    assert lines == [
        'storage_events content.blobs["blob"] version 1: '
        "purge marker 1 counts 1 events; the log holds no blobs log stream of the key"
    ]
