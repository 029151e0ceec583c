"""The audit replays ``storage_events`` and finds every inline row edited behind the engine's back;
the repair rebuilds those rows from the log in one transaction, or refuses when the log itself is
inconsistent.

Every test runs on SQLite and on PostgreSQL. The edits are plain SQL on a connection of the
test's own, as an operator's would be.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from storage_side_door import Store as SideDoor

from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    BlobConflictError,
    BlobEntry,
    ConflictError,
    DurableRecord,
    SerializationError,
    UniqueConstraintError,
    UnsupportedBackendError,
)
from nenjim.infrastructure.storage.audit import (
    AuditReport,
    RepairRefusedError,
    StoreNotFoundError,
    audit_backend,
    audit_store,
    compare,
    repair_backend,
    repair_store,
    replay,
)
from nenjim.infrastructure.storage.audit import repair as repair_module
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.session import Session
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
TIMEOUT = 20.0
RUN = "run-1"
BLOB_DATA = b"\x00\xffbytes"


class Store(SideDoor):
    """The side door, and one event's decoded state."""

    def event_state(self, log_stream: uuid.UUID, version: int) -> dict[str, Any]:
        return self.event(log_stream, version)[1]


@pytest.fixture
def store(nenjim_durable_store_url: str) -> Iterator[Store]:
    """A fresh store with the owner's root, a workflow row at revision 2, one active run,
    a journal of three entries, an inventory item and a blob; the audit is clean."""
    url = nenjim_durable_store_url
    opened = _populated(url)
    yield opened
    opened.backend.close()


@pytest.fixture
def postgres_store(postgres_schema_url: str) -> Iterator[Store]:
    """The same store on PostgreSQL only."""
    opened = _populated(postgres_schema_url)
    yield opened
    opened.backend.close()


def _populated(url: str) -> Store:
    backend = open_backend(url, FIXTURE_RESOURCES)
    view = backend.view
    view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("root"))
    workflows = view.records(WORKFLOW_STATES)
    workflows.insert(key=WF, revision=1, attributes={}, record=_record("one"))
    workflows.replace(
        key=WF, expected_revision=1, next_revision=2, attributes={}, record=_record("two")
    )
    _admit(backend, RUN)
    view.streams(JOURNAL).append(
        stream=OWNER, expected_head=0, entries=[_entry("a"), _entry("b"), _entry("c")]
    )
    view.records(INVENTORY_ITEMS).insert(
        key="item", revision=0, attributes=_item("X1"), record=_record("i")
    )
    view.blobs(CONTENT_BLOBS).put_if_absent(
        key="blob", data=BLOB_DATA, attributes={"canonicalization_version": 1}
    )
    assert audit_backend(backend).ok
    return Store(url, backend)


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.audit", "0.1", {"value": value})


def _entry(entry_id: str) -> AppendEntry:
    return AppendEntry(entry_id, _record(entry_id))


def _item(code: str | None) -> dict[str, Any]:
    return {
        "code": code,
        "label": "thing",
        "quantity": 1,
        "reserved": None,
        "available": True,
        "flagged": None,
    }


def _admit(backend: Backend, key: str) -> None:
    backend.view.records(EXECUTIONS).insert(
        key=key, revision=0, attributes={"owner": OWNER, "active": True}, record=_record(key)
    )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _only_line(report: AuditReport) -> str:
    assert len(report.findings) == 1, report.lines()
    return report.lines()[0]


def _repaired(store: Store) -> None:
    """Repair, then require a clean audit."""
    result = repair_backend(store.backend)
    assert result.changed
    after = audit_backend(store.backend)
    assert after.ok, after.lines()


def _refused(store: Store) -> AuditReport:
    """A repair that must refuse and change nothing; its audit."""
    before = store.snapshot()
    with pytest.raises(RepairRefusedError) as refused:
        repair_backend(store.backend)
    assert store.snapshot() == before
    assert "\n" not in str(refused.value)
    return refused.value.report


# a clean store


def test_a_store_written_only_through_the_engine_audits_clean(store: Store) -> None:
    view = store.backend.view
    workflows = view.records(WORKFLOW_STATES)
    workflows.delete(key=WF)
    workflows.insert(key=WF, revision=7, attributes={}, record=_record("again"))
    view.records(EXECUTIONS).delete_matching(index="owner", equals={"owner": OWNER})
    journal = view.streams(JOURNAL)
    journal.delete(stream=OWNER)
    journal.append(stream=OWNER, expected_head=0, entries=[_entry("a")])
    report = audit_backend(store.backend)
    assert report.ok, report.lines()
    assert report.live == {"records": 3, "streams": 1, "blobs": 1}
    assert not repair_backend(store.backend).changed
    assert audit_store(store.url, FIXTURE_RESOURCES).ok


# the nine edits of the issue, and the `active` flip


def test_a_consistent_payload_edit_is_found_and_repaired(store: Store) -> None:
    other = DurableRecord("test.audit", "0.1", {"value": "forged"}).payload_json
    store.execute("UPDATE storage_records SET payload = ? WHERE key = ?", (other, WF))
    assert store.backend.view.records(WORKFLOW_STATES).fetch(WF).record == _record("forged")

    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_records workflow.states["wf-1"] payload: log says {"value":"two"}; '
        'table says {"value":"forged"}'
    )
    _repaired(store)
    assert store.backend.view.records(WORKFLOW_STATES).fetch(WF).record == _record("two")


def test_a_revision_bump_is_found_and_repaired(store: Store) -> None:
    store.execute("UPDATE storage_records SET revision = 5 WHERE key = ?", (WF,))

    line = _only_line(audit_backend(store.backend))
    assert line == 'storage_records workflow.states["wf-1"] revision: log says 2; table says 5'
    _repaired(store)
    workflows = store.backend.view.records(WORKFLOW_STATES)
    assert workflows.fetch(WF).revision == 2
    with pytest.raises(ConflictError):
        workflows.replace(
            key=WF, expected_revision=5, next_revision=6, attributes={}, record=_record("x")
        )
    workflows.replace(
        key=WF, expected_revision=2, next_revision=3, attributes={}, record=_record("three")
    )
    assert audit_backend(store.backend).ok


def test_a_save_that_continued_from_a_bumped_revision_is_a_finding_in_the_log(
    store: Store,
) -> None:
    store.execute("UPDATE storage_records SET revision = 5 WHERE key = ?", (WF,))
    store.backend.view.records(WORKFLOW_STATES).replace(
        key=WF, expected_revision=5, next_revision=6, attributes={}, record=_record("six")
    )

    report = audit_backend(store.backend)
    assert _only_line(report) == (
        'storage_events workflow.states["wf-1"] version 3: RecordReplaced to revision 6 from '
        "revision 2 (a replace advances the revision by one)"
    )
    assert not report.repairable
    _refused(store)


def test_a_deleted_row_is_found_and_restored(store: Store) -> None:
    store.execute("DELETE FROM storage_records WHERE key = ?", (WF,))

    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_records workflow.states["wf-1"] row: log says revision 2 at log version 2; '
        "table says no row"
    )
    _repaired(store)
    workflows = store.backend.view.records(WORKFLOW_STATES)
    assert workflows.fetch(WF).record == _record("two")
    with pytest.raises(ConflictError):
        workflows.insert(key=WF, revision=1, attributes={}, record=_record("new"))


def test_a_row_recreated_after_a_hidden_delete_is_a_finding_in_the_log(store: Store) -> None:
    store.execute("DELETE FROM storage_records WHERE key = ?", (WF,))
    store.backend.view.records(WORKFLOW_STATES).insert(
        key=WF, revision=1, attributes={}, record=_record("new")
    )

    report = audit_backend(store.backend)
    assert _only_line(report) == (
        'storage_events workflow.states["wf-1"] version 3: RecordInserted over a live row at '
        "revision 2 (no RecordDeleted before it)"
    )
    _refused(store)


def test_a_consistent_edit_of_the_log_state_is_found_and_the_tables_follow_the_log(
    store: Store,
) -> None:
    log_stream = events.record_stream(WORKFLOW_STATES.id, WF)
    state = store.event_state(log_stream, 2)
    state["payload"] = {"value": "rewritten"}
    store.set_event_state(log_stream, 2, json.dumps(state).encode())

    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_records workflow.states["wf-1"] payload: log says {"value":"rewritten"}; '
        'table says {"value":"two"}'
    )
    # The log is the record: the repair serves what it says.
    _repaired(store)
    assert store.backend.view.records(WORKFLOW_STATES).fetch(WF).record == _record("rewritten")


def test_an_undecodable_log_state_is_a_finding_in_the_log_and_blocks_repair(store: Store) -> None:
    log_stream = events.record_stream(WORKFLOW_STATES.id, WF)
    store.set_event_state(log_stream, 2, b"{not json")
    store.execute("UPDATE storage_records SET revision = 9 WHERE key = ?", (WF,))

    report = audit_backend(store.backend)
    # The damaged key's table row is not compared: only the log finding is reported.
    assert _only_line(report) == (
        'storage_events workflow.states["wf-1"] version 2: RecordReplaced state is not a JSON '
        "object"
    )
    _refused(store)


def test_a_log_state_naming_another_key_is_a_finding_in_the_log(store: Store) -> None:
    log_stream = events.record_stream(WORKFLOW_STATES.id, WF)
    state = store.event_state(log_stream, 2)
    state["key"] = "someone-else"
    store.set_event_state(log_stream, 2, json.dumps(state).encode())

    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_events workflow.states["wf-1"] version 2: RecordReplaced names records '
        'workflow.states["someone-else"] of another log stream'
    )


def test_a_deleted_last_log_event_is_found_and_repair_refuses(store: Store) -> None:
    store.delete_event(events.record_stream(WORKFLOW_STATES.id, WF), 2)

    report = audit_backend(store.backend)
    assert report.lines()[-1] == (
        'storage_events workflow.states["wf-1"] version 2: missing: storage_records holds the '
        "row as of log version 2; the log stream ends at version 1"
    )
    if store.is_sqlite:  # dense notification ids show the hole as well
        assert any(line.startswith("storage_events notification id ") for line in report.lines())
    _refused(store)
    # The acknowledged write is still served.
    assert store.backend.view.records(WORKFLOW_STATES).fetch(WF).revision == 2


def test_a_deleted_middle_log_event_is_a_gap_and_repair_refuses(store: Store) -> None:
    store.delete_event(events.entry_stream(JOURNAL.id, OWNER), 2)

    report = audit_backend(store.backend)
    assert 'storage_events agent.journal["owner-1"] version 3: version 2 missing before it' in (
        report.lines()
    )
    _refused(store)


def test_a_lowered_stream_head_wedges_appends_until_repaired(store: Store) -> None:
    store.execute("UPDATE storage_stream_heads SET head = 1 WHERE stream = ?", (OWNER,))
    journal = store.backend.view.streams(JOURNAL)
    for expected_head in (1, 3):
        with pytest.raises(ConflictError):
            journal.append(stream=OWNER, expected_head=expected_head, entries=[_entry("d")])

    line = _only_line(audit_backend(store.backend))
    assert line == 'storage_stream_heads agent.journal["owner-1"] head: log says 3; table says 1'
    _repaired(store)
    stored = journal.append(stream=OWNER, expected_head=3, entries=[_entry("d")])
    assert [entry.position for entry in stored] == [4]
    assert [entry.id for entry in journal.read(stream=OWNER)] == ["a", "b", "c", "d"]
    assert audit_backend(store.backend).ok


def test_an_active_flag_flipped_off_is_found_and_admission_is_restored(store: Store) -> None:
    store.execute(
        "UPDATE storage_records SET attributes = ? WHERE key = ?",
        (json.dumps({"owner": OWNER, "active": False}), RUN),
    )

    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_records agent.executions["run-1"] attributes: log says '
        '{"active":true,"owner":"owner-1"}; table says {"active":false,"owner":"owner-1"}'
    )
    _repaired(store)
    with pytest.raises(UniqueConstraintError):
        _admit(store.backend, "run-2")


def test_a_second_run_admitted_after_the_flip_is_a_finding_in_the_log(store: Store) -> None:
    store.execute(
        "UPDATE storage_records SET attributes = ? WHERE key = ?",
        (json.dumps({"owner": OWNER, "active": False}), RUN),
    )
    _admit(store.backend, "run-2")

    report = audit_backend(store.backend)
    assert sorted(report.lines()) == [
        'storage_events agent.executions unique one_active_owner: live rows "run-1", "run-2" all '
        'hold {"owner":"owner-1"}',
        'storage_records agent.executions["run-1"] attributes: log says '
        '{"active":true,"owner":"owner-1"}; table says {"active":false,"owner":"owner-1"}',
    ]
    _refused(store)


# siblings: the other inline rows


def test_a_raised_stream_head_reads_as_lost_events_and_repair_refuses(store: Store) -> None:
    store.execute("UPDATE storage_stream_heads SET head = 5 WHERE stream = ?", (OWNER,))

    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_events agent.journal["owner-1"] versions 4..5: missing: storage_stream_heads '
        "says the stream reached log version 5 (head 5, base 0); the log stream ends at version 3"
    )
    _refused(store)


def test_a_deleted_stream_id_is_found_and_restored(store: Store) -> None:
    store.execute("DELETE FROM storage_stream_ids WHERE entry_id = ?", ("b",))
    journal = store.backend.view.streams(JOURNAL)
    # Without the id row a duplicate id would be accepted.
    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_stream_ids agent.journal["owner-1"] entry ids: log says 3 live ids; '
        'table says 2 ids; missing "b"'
    )
    _repaired(store)
    with pytest.raises(ConflictError):
        journal.append(stream=OWNER, expected_head=3, entries=[_entry("b")])


def test_a_deleted_stream_head_row_is_found_and_restored(store: Store) -> None:
    store.execute("DELETE FROM storage_stream_heads WHERE stream = ?", (OWNER,))
    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_stream_heads agent.journal["owner-1"] row: log says head 3, base 0; '
        "table says no row"
    )
    _repaired(store)
    assert store.backend.view.streams(JOURNAL).head(stream=OWNER) == 3


def test_a_head_and_base_after_a_stream_delete_are_compared(store: Store) -> None:
    journal = store.backend.view.streams(JOURNAL)
    journal.delete(stream=OWNER)
    journal.append(stream=OWNER, expected_head=0, entries=[_entry("z")])
    store.execute("UPDATE storage_stream_heads SET base = 0 WHERE stream = ?", (OWNER,))

    line = _only_line(audit_backend(store.backend))
    assert line == 'storage_stream_heads agent.journal["owner-1"] base: log says 4; table says 0'
    _repaired(store)
    assert [entry.id for entry in journal.read(stream=OWNER)] == ["z"]


def test_edited_blob_bytes_and_attributes_are_found_and_restored(store: Store) -> None:
    store.execute(
        "UPDATE storage_blobs SET data = ?, attributes = ? WHERE key = ?",
        (b"other", json.dumps({"canonicalization_version": 2}), "blob"),
    )
    report = audit_backend(store.backend)
    assert sorted(report.lines()) == [
        'storage_blobs content.blobs["blob"] attributes: log says {"canonicalization_version":1}; '
        'table says {"canonicalization_version":2}',
        'storage_blobs content.blobs["blob"] data: log says 7 bytes '
        f"sha256:{_digest(BLOB_DATA)}; table says 5 bytes sha256:{_digest(b'other')}",
    ]
    _repaired(store)
    assert store.backend.view.blobs(CONTENT_BLOBS).fetch("blob").data == BLOB_DATA


def test_a_deleted_blob_row_is_found_and_restored(store: Store) -> None:
    store.execute("DELETE FROM storage_blobs WHERE key = ?", ("blob",))
    assert _only_line(audit_backend(store.backend)).startswith(
        'storage_blobs content.blobs["blob"] row: log says 7 bytes'
    )
    _repaired(store)
    assert store.backend.view.blobs(CONTENT_BLOBS).exists("blob")


def test_a_row_the_log_never_wrote_is_found_and_removed(store: Store) -> None:
    store.execute(
        "INSERT INTO storage_records (resource, key, revision, attributes, record_type, "
        "format_version, payload, log_version) VALUES (?, ?, 0, '{}', 't', '0.1', '{}', 0)",
        (WORKFLOW_STATES.id, "forged"),
    )
    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_records workflow.states["forged"] row: log says no row (never written); '
        "table says revision 0 at log version 0"
    )
    _repaired(store)
    assert store.backend.view.records(WORKFLOW_STATES).read("forged") is None


def test_a_row_of_a_resource_outside_the_catalog_is_found(store: Store) -> None:
    store.execute(
        "INSERT INTO storage_records (resource, key, revision, attributes, record_type, "
        "format_version, payload, log_version) VALUES (?, ?, 0, '{}', 't', '0.1', '{}', 0)",
        ("elsewhere", "k"),
    )
    line = _only_line(audit_backend(store.backend))
    assert line == (
        'storage_records elsewhere["k"] row: log says no row (elsewhere is not in the catalog); '
        "table says revision 0"
    )
    _repaired(store)


def test_an_attribute_edit_under_a_unique_constraint_is_found_and_restored(store: Store) -> None:
    store.execute(
        "UPDATE storage_records SET attributes = ? WHERE key = ?", (json.dumps(_item(None)), "item")
    )
    assert _only_line(audit_backend(store.backend)).startswith(
        'storage_records inventory.items["item"] attributes: log says {"available":true,"code":"X1"'
    )
    _repaired(store)
    with pytest.raises(UniqueConstraintError):
        store.backend.view.records(INVENTORY_ITEMS).insert(
            key="item-2", revision=0, attributes=_item("X1"), record=_record("i")
        )


def test_a_dropped_unique_index_is_found_and_rebuilt(store: Store) -> None:
    (name,) = next(
        row
        for row in store.rows("SELECT index_name FROM {generated}")
        if "one_active_owner" in row[0]
    )
    store.execute(f'DROP INDEX "{name}"')

    line = _only_line(audit_backend(store.backend))
    assert line == (
        f"storage_records agent.executions unique one_active_owner: generated index {name} "
        "is missing"
    )
    _repaired(store)


def test_an_unknown_topic_is_a_finding_in_the_log(store: Store) -> None:
    store.execute(
        "UPDATE storage_events SET topic = ? WHERE originator_id = ? AND originator_version = 1",
        ("x:Unknown", store.originator(events.record_stream(WORKFLOW_STATES.id, WF))),
    )
    assert _only_line(audit_backend(store.backend)) == (
        "storage_events workflow.states[\"wf-1\"] version 1: unknown topic 'x:Unknown'"
    )
    _refused(store)


def test_an_event_id_moved_before_its_earlier_version_is_a_finding_in_the_log(
    store: Store,
) -> None:
    # Id 0 is never given out, on either database: a version numbered before the one it follows.
    stream = store.originator(events.entry_stream(JOURNAL.id, OWNER))
    store.execute(
        "UPDATE storage_events SET notification_id = 0 "
        "WHERE originator_id = ? AND originator_version = 3",
        (stream,),
    )
    lines = audit_backend(store.backend).lines()
    assert any(
        line.startswith(
            'storage_events agent.journal["owner-1"] version 3: notification id 0 is not above '
        )
        and line.endswith(" of version 2 (a log stream's ids grow with its versions: edited?)")
        for line in lines
    ), lines
    _refused(store)


def test_an_event_id_above_what_the_sequence_handed_out_is_a_finding_in_the_log(
    postgres_store: Store,
) -> None:
    # (SQLite numbers events without gaps: a raised last id leaves a gap before it.)
    store = postgres_store
    (top,) = store.rows("SELECT max(notification_id) FROM {events}")[0]
    store.execute(
        "UPDATE storage_events SET notification_id = notification_id + 1 WHERE notification_id = ?",
        (top,),
    )
    assert _only_line(audit_backend(store.backend)) == (
        f"storage_events notification id {top + 1}: above the ids its sequence handed out "
        f"(up to {top}): an id was edited"
    )
    _refused(store)


def test_several_disagreements_are_repaired_together(store: Store) -> None:
    store.execute("UPDATE storage_records SET revision = 5 WHERE key = ?", (WF,))
    store.execute("UPDATE storage_stream_heads SET head = 2 WHERE stream = ?", (OWNER,))
    store.execute("DELETE FROM storage_blobs")
    assert len(audit_backend(store.backend).findings) == 3
    _repaired(store)


def test_a_repair_that_fails_midway_changes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.execute("UPDATE storage_records SET revision = 5 WHERE key = ?", (WF,))
    store.execute("DELETE FROM storage_blobs")
    before = store.snapshot()
    original = Session.execute

    def failing(self: Session, template: str, params: Any = ()) -> int:
        if template.startswith("INSERT INTO {blobs}"):  # after the records were rewritten
            raise RuntimeError("disk went away")
        return original(self, template, params)

    monkeypatch.setattr(Session, "execute", failing)
    with pytest.raises(RuntimeError, match="disk went away"):
        repair_backend(store.backend)
    monkeypatch.undo()
    assert store.snapshot() == before
    assert len(audit_backend(store.backend).findings) == 2


def test_the_audit_reads_one_snapshot_while_writers_run(store: Store) -> None:
    progress = threading.Condition()
    written = [0]
    stop = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            head, revision = 3, 2
            while not stop.is_set():
                with store.backend.transaction() as view:
                    view.streams(JOURNAL).append(
                        stream=OWNER, expected_head=head, entries=[_entry(f"e{head}")]
                    )
                    view.records(WORKFLOW_STATES).replace(
                        key=WF,
                        expected_revision=revision,
                        next_revision=revision + 1,
                        attributes={},
                        record=_record(str(revision)),
                    )
                head, revision = head + 1, revision + 1
                with progress:
                    written[0] += 1
                    progress.notify_all()
        except BaseException as error:
            failures.append(error)
            with progress:
                progress.notify_all()

    writer = threading.Thread(target=write)
    writer.start()
    reports = []
    try:
        for _ in range(5):
            with progress:
                target = written[0] + 3
                progress.wait_for(
                    lambda goal=target: written[0] >= goal or bool(failures),
                    timeout=60,
                )
            reports.append(audit_store(store.url, FIXTURE_RESOURCES))
    finally:
        stop.set()
        writer.join()
    assert not failures
    for report in reports:
        assert report.ok, report.lines()
    assert reports[-1].events > reports[0].events


def test_a_stream_entry_at_the_wrong_position_is_a_finding_in_the_log(store: Store) -> None:
    log_stream = events.entry_stream(JOURNAL.id, OWNER)
    state = store.event_state(log_stream, 2)
    state["position"] = 7
    store.set_event_state(log_stream, 2, json.dumps(state).encode())

    assert _only_line(audit_backend(store.backend)) == (
        'storage_events agent.journal["owner-1"] version 2: StreamEntryAppended at position 7; '
        "after base 0 log version 2 is position 2"
    )
    _refused(store)


def test_a_stream_tombstone_with_another_head_is_a_finding_in_the_log(store: Store) -> None:
    store.backend.view.streams(JOURNAL).delete(stream=OWNER)
    log_stream = events.entry_stream(JOURNAL.id, OWNER)
    state = store.event_state(log_stream, 4)
    state["head"] = 2
    store.set_event_state(log_stream, 4, json.dumps(state).encode())

    assert _only_line(audit_backend(store.backend)) == (
        'storage_events agent.journal["owner-1"] version 4: StreamDeleted says head 2, '
        "the stream had 3 entries"
    )


def test_a_repeated_entry_id_in_the_log_is_a_finding_in_the_log(store: Store) -> None:
    log_stream = events.entry_stream(JOURNAL.id, OWNER)
    state = store.event_state(log_stream, 3)
    state["id"] = "a"
    store.set_event_state(log_stream, 3, json.dumps(state).encode())

    lines = audit_backend(store.backend).lines()
    assert (
        'storage_events agent.journal["owner-1"] version 3: StreamEntryAppended repeats live '
        "entry id 'a'"
    ) in lines


def _written_before_bytes_were_kept_once(store: Store, logged: bytes) -> None:
    """The blob as a store of an earlier format holds it: its bytes in its row, and
    ``logged`` base64-encoded in the JSON state of its put."""
    log_stream = events.blob_stream(CONTENT_BLOBS.id, "blob")
    state = store.event_state(log_stream, 1)
    del state["size"]
    state["data"] = base64.b64encode(logged).decode()
    store.set_event_state(log_stream, 1, json.dumps(state).encode())
    store.execute("UPDATE storage_blobs SET data = ? WHERE key = ?", (BLOB_DATA, "blob"))


def test_a_blob_keeps_its_bytes_once_in_its_put_event(store: Store) -> None:
    """The row holds no bytes; the put event holds them as they are, after its header."""
    assert store.rows("SELECT data FROM {blobs} WHERE key = ?", ("blob",)) == [(b"",)]
    topic, state = store.event(events.blob_stream(CONTENT_BLOBS.id, "blob"), 1)
    assert (topic, state["data"], state["size"]) == (events.BLOB_PUT, BLOB_DATA, len(BLOB_DATA))
    assert store.backend.view.blobs(CONTENT_BLOBS).fetch("blob").data == BLOB_DATA


def test_a_blob_written_before_bytes_were_kept_once_is_served_and_audits_clean(
    store: Store,
) -> None:
    _written_before_bytes_were_kept_once(store, BLOB_DATA)
    assert audit_backend(store.backend).ok
    assert store.backend.view.blobs(CONTENT_BLOBS).fetch("blob").data == BLOB_DATA
    # A put of the same bytes finds it; of others, a conflict.
    blobs = store.backend.view.blobs(CONTENT_BLOBS)
    attributes = {"canonicalization_version": 1}
    assert blobs.put_if_absent(key="blob", data=BLOB_DATA, attributes=attributes).data == BLOB_DATA
    with pytest.raises(BlobConflictError):
        blobs.put_if_absent(key="blob", data=b"other", attributes=attributes)


def test_an_edited_blob_put_that_still_decodes_is_served_after_repair(store: Store) -> None:
    """In a store of the earlier format, the row's copy and the log's disagree: the log
    wins, and the repaired row holds no bytes."""
    _written_before_bytes_were_kept_once(store, b"rewritten")

    assert _only_line(audit_backend(store.backend)).startswith(
        'storage_blobs content.blobs["blob"] data: log says 9 bytes'
    )
    _repaired(store)
    assert store.rows("SELECT data FROM {blobs} WHERE key = ?", ("blob",)) == [(b"",)]
    assert store.backend.view.blobs(CONTENT_BLOBS).fetch("blob").data == b"rewritten"


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda state: state[:-1], id="bytes-cut-short"),
        pytest.param(lambda state: state + b"!", id="bytes-added"),
        pytest.param(lambda state: state.replace(b"\n", b" ", 1), id="header-run-on"),
        pytest.param(lambda state: b"{" + state, id="header-not-json"),
    ],
)
def test_a_damaged_blob_put_is_refused_by_fetch_and_found_by_the_audit(
    store: Store, edit: Callable[[bytes], bytes]
) -> None:
    log_stream = events.blob_stream(CONTENT_BLOBS.id, "blob")
    [(state,)] = store.rows(
        "SELECT state FROM {events} WHERE originator_id = ?", (store.originator(log_stream),)
    )
    store.set_event_state(log_stream, 1, edit(bytes(state)))

    with pytest.raises(SerializationError, match=r"stored blob state|not JSON"):
        store.backend.view.blobs(CONTENT_BLOBS).fetch("blob")
    assert sorted(audit_backend(store.backend).lines()) == [
        'storage_events content.blobs["blob"] version 1: missing: storage_blobs holds the '
        "blob; the log stream has no events",
        f"storage_events log stream {log_stream} version 1: no event of this log stream names "
        "the key it belongs to (undecodable states, unknown topics or foreign keys)",
    ]


def test_a_blob_whose_put_event_names_another_key_is_refused_by_fetch(store: Store) -> None:
    log_stream = events.blob_stream(CONTENT_BLOBS.id, "blob")
    other = events.blob_state(CONTENT_BLOBS.id, BlobEntry("other", BLOB_DATA))
    store.set_event_state(log_stream, 1, other)
    with pytest.raises(SerializationError, match="the newest event of its log stream is not"):
        store.backend.view.blobs(CONTENT_BLOBS).fetch("blob")


def test_a_blob_row_whose_put_event_is_gone_is_refused_by_fetch(store: Store) -> None:
    log_stream = events.blob_stream(CONTENT_BLOBS.id, "blob")
    store.execute(
        "DELETE FROM storage_events WHERE originator_id = ?", (store.originator(log_stream),)
    )
    with pytest.raises(SerializationError, match=r"blob content\.blobs/blob has no bytes"):
        store.backend.view.blobs(CONTENT_BLOBS).fetch("blob")


def test_whether_a_blob_exists_reads_its_row_not_its_bytes(store: Store) -> None:
    """``exists`` reads the blob's row only: its put event, which holds the bytes, is
    neither read nor checked (a fetch is what finds it gone)."""
    log_stream = events.blob_stream(CONTENT_BLOBS.id, "blob")
    store.execute(
        "DELETE FROM storage_events WHERE originator_id = ?", (store.originator(log_stream),)
    )
    blobs = store.backend.view.blobs(CONTENT_BLOBS)
    assert (blobs.exists("blob"), blobs.exists("other")) == (True, False)
    with pytest.raises(SerializationError, match="has no bytes"):
        blobs.fetch("blob")


def test_events_of_resources_outside_the_list_are_findings_in_the_log(store: Store) -> None:
    report = audit_store(store.url, [ROOTS, WORKFLOW_STATES])
    assert sorted(report.lines()) == [
        "storage_events agent.executions events: 1 events of a resource that is not in the catalog",
        "storage_events agent.journal events: 3 events of a resource that is not in the catalog",
        "storage_events content.blobs events: 1 events of a resource that is not in the catalog",
        "storage_events inventory.items events: 1 events of a resource that is not in the catalog",
    ]
    assert not report.repairable


def test_the_audit_reads_the_log_and_the_tables_in_pages(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(7):
        store.backend.view.records(WORKFLOW_STATES).insert(
            key=f"page-{index}", revision=0, attributes={}, record=_record(str(index))
        )
        store.backend.view.blobs(CONTENT_BLOBS).put_if_absent(
            key=f"blob-{index}", data=bytes([index]), attributes={"canonicalization_version": 1}
        )
    full = audit_backend(store.backend)
    monkeypatch.setattr(replay, "PAGE", 2)
    monkeypatch.setattr(compare, "BLOB_PAGE", 2)
    assert audit_backend(store.backend) == full
    store.execute("UPDATE storage_records SET revision = 9 WHERE key = ?", ("page-6",))
    store.execute("DELETE FROM storage_blobs WHERE key = ?", ("blob-6",))
    assert len(audit_backend(store.backend).findings) == 2
    _repaired(store)


def test_writers_wait_while_a_repair_runs_on_postgres(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (On SQLite the repair's BEGIN IMMEDIATE is the one writer lock by construction.)
    store = postgres_store
    store.execute("UPDATE storage_stream_heads SET head = 1 WHERE stream = ?", (OWNER,))
    inside, release = threading.Event(), threading.Event()
    repairer: list[int] = []
    original = repair_module._rewrite

    def paused(session: Session, *args: Any) -> dict[str, int]:
        rewritten = original(session, *args)
        repairer.append(session.connection.info.backend_pid)
        inside.set()
        assert release.wait(TIMEOUT)
        return rewritten

    monkeypatch.setattr(repair_module, "_rewrite", paused)
    outcomes: dict[str, Any] = {}

    def run(name: str, action: Callable[[], Any]) -> threading.Thread:
        def target() -> None:
            try:
                outcomes[name] = action()
            except BaseException as error:
                outcomes[name] = error

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    repairing = run("repair", lambda: repair_backend(store.backend))
    assert inside.wait(TIMEOUT)
    journal = store.backend.view.streams(JOURNAL)
    writing = run(
        "append", lambda: journal.append(stream=OWNER, expected_head=3, entries=[_entry("d")])
    )
    try:
        _wait_for_a_waiter(store.url, repairer[0])
    finally:
        release.set()
        repairing.join()
        writing.join()
    assert not isinstance(outcomes["repair"], BaseException), outcomes
    assert [entry.position for entry in outcomes["append"]] == [4]
    assert audit_backend(store.backend).ok


def _wait_for_a_waiter(url: str, holder: int) -> None:
    """Poll until some backend waits on ``holder``'s locks (the writer queued behind it)."""
    with psycopg.connect(url.partition("?")[0], autocommit=True) as observer:
        for _ in range(int(TIMEOUT / 0.01)):
            row = observer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (holder,),
            ).fetchone()
            if row is not None and row[0] > 0:
                return
            time.sleep(0.01)
    raise AssertionError(f"no backend ever waited on the repair (backend {holder})")


# opening


def test_auditing_a_missing_sqlite_store_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    for action in (audit_store, repair_store):
        with pytest.raises(StoreNotFoundError, match=r"absent\.db"):
            action(f"sqlite://{path}", FIXTURE_RESOURCES)
    assert not path.exists()


def test_auditing_an_sqlite_file_without_storage_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE unrelated (x)")
    content = path.read_bytes()
    with pytest.raises(StoreNotFoundError, match="no storage tables"):
        audit_store(f"sqlite://{path}", FIXTURE_RESOURCES)
    assert path.read_bytes() == content


def test_auditing_a_missing_postgres_schema_creates_nothing(postgres_url: str) -> None:
    schema = f"t_absent_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(postgres_url)
    url = parts._replace(query=f"schema={schema}").geturl()
    for action in (audit_store, repair_store):
        with pytest.raises(StoreNotFoundError, match=schema):
            action(url, FIXTURE_RESOURCES)
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert found.fetchone() is None


def test_the_in_memory_backend_has_nothing_to_audit() -> None:
    with pytest.raises(UnsupportedBackendError):
        audit_backend(InMemoryBackend(FIXTURE_RESOURCES))
    with pytest.raises(UnsupportedBackendError, match="memory:"):
        audit_store("memory:", FIXTURE_RESOURCES)
