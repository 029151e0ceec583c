"""Replaying the SQL storage log (``storage_events``) rebuilds every live row.

For SQLite and PostgreSQL, a history of domain writes (creates, CAS saves,
deletes, re-inserts after deletes, journal deletes and restarts, blobs, a
rolled-back transaction and refused writes) is replayed from the log alone,
in notification order, following how ``infrastructure/storage/sql`` writes it:
``RecordInserted``/``RecordReplaced`` carry the whole row, ``RecordDeleted``
removes it, ``StreamEntryAppended`` carries an entry at its SPI position,
``StreamDeleted`` empties the stream, ``BlobPut`` carries the bytes. The
rebuilt state must equal the projection tables and what the repositories load.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from domain.persistence import errors as perr
from domain.teams import TeamExecution, TeamRoot
from infrastructure.persistence import CATALOG, Persistence, Repositories
from infrastructure.persistence.codecs import (
    decode_agent_execution,
    decode_agent_root,
    decode_handoff_state,
    decode_journal_record,
    decode_team_execution,
    decode_team_root,
    decode_workflow_state,
)
from infrastructure.storage import RecordEntry, StreamEntry
from infrastructure.storage.sql import codec, events
from storage_sql import sql_rows

RESOURCES = {resource.id: resource for resource in CATALOG}


class RolledBackError(Exception):
    """Raised by a test to make its transaction roll back."""


@dataclass
class Rebuilt:
    """What the log says is live."""

    records: dict[tuple[str, str], RecordEntry] = field(default_factory=dict)
    streams: dict[tuple[str, str], list[StreamEntry]] = field(default_factory=dict)
    blobs: dict[tuple[str, str], tuple[bytes, dict[str, Any]]] = field(default_factory=dict)
    topics: list[str] = field(default_factory=list)


def _session_rows(p: Persistence, template: str) -> list[tuple[Any, ...]]:
    return sql_rows(p.backend, template)


def _replay(p: Persistence) -> Rebuilt:
    rebuilt = Rebuilt()
    rows = _session_rows(p, "SELECT topic, state FROM {events} ORDER BY notification_id")
    for topic, raw in rows:
        state = events.decode(raw)
        rebuilt.topics.append(str(topic))
        if topic in (events.RECORD_INSERTED, events.RECORD_REPLACED):
            resource = RESOURCES[state["resource"]]
            slot = (resource.id, state["key"])
            if topic == events.RECORD_INSERTED:
                assert slot not in rebuilt.records, f"insert over a live row {slot}"
            else:
                assert slot in rebuilt.records, f"replace of a missing row {slot}"
                assert rebuilt.records[slot].revision + 1 == state["revision"]
            rebuilt.records[slot] = codec.record_event(resource, state)
        elif topic == events.RECORD_DELETED:
            slot = (state["resource"], state["key"])
            assert rebuilt.records.pop(slot).revision == state["revision"]
        elif topic == events.STREAM_ENTRY_APPENDED:
            entries = rebuilt.streams.setdefault((state["resource"], state["stream"]), [])
            assert state["position"] == len(entries) + 1
            entries.append(codec.stream_event(state["position"], state))
        elif topic == events.STREAM_DELETED:
            entries = rebuilt.streams.pop((state["resource"], state["stream"]))
            assert len(entries) == state["head"]
        elif topic == events.BLOB_PUT:
            slot = (state["resource"], state["key"])
            assert slot not in rebuilt.blobs
            rebuilt.blobs[slot] = (base64.b64decode(state["data"]), dict(state["attributes"]))
        else:  # pragma: no cover - a topic this replay does not know
            raise AssertionError(f"unknown topic {topic}")
    return rebuilt


def _projection(p: Persistence) -> dict[tuple[str, str], RecordEntry]:
    dialect = p.backend.driver.dialect  # type: ignore[attr-defined]
    rows = _session_rows(
        p,
        "SELECT resource, key, revision, attributes, record_type, format_version, payload "
        "FROM {records}",
    )
    return {
        (resource, key): codec.record_row(
            RESOURCES[resource],
            (key, revision, dialect.load_json(attributes), record_type, version, payload),
        )
        for resource, key, revision, attributes, record_type, version, payload in rows
    }


def _history(p: Persistence) -> None:
    """A busy life across all eight resources."""
    contents = p.contents
    text = contents.put_text("hello")
    contents.put(b"\x00\x01\xff", canonicalization_version=7)
    contents.put(b"\x00\x01\xff", canonicalization_version=8)  # first attributes win
    contents.put_json({"b": [1, None], "a": "é"})

    root = p.agents.create(AgentRoot.create("agent-1", definition_id="d"))
    root = p.agents.save(
        "agent-1", expected_revision=0, root=root.evolve(lifecycle_status="active")
    )
    other = p.agents.create(AgentRoot.create("agent-'2'", definition_id="d"))
    p.journals.append(
        "agent-1",
        expected_position=0,
        records=[
            AgentJournalRecord.create("j1", agent_id="agent-1", kind="message", content_ref=text),
            AgentJournalRecord.create("j2", agent_id="agent-1", kind="message"),
        ],
    )
    p.journals.delete("agent-1")
    p.journals.append(
        "agent-1",
        expected_position=0,
        records=[AgentJournalRecord.create("j1", agent_id="agent-1", kind="restart")],
    )
    p.journals.append(
        "agent-'2'",
        expected_position=0,
        records=[AgentJournalRecord.create("k1", agent_id="agent-'2'", kind="message")],
    )

    run = p.executions.create_active(AgentExecution.start("exec-1", agent_id="agent-1", base=root))
    p.executions.save("exec-1", expected_revision=0, execution=run.evolve(status="completed"))
    p.executions.create_active(AgentExecution.start("exec-2", agent_id="agent-1", base=root))
    p.executions.create_active(AgentExecution.start("exec-3", agent_id="agent-'2'", base=other))
    p.executions.delete("exec-3")
    p.executions.create_active(AgentExecution.start("exec-3", agent_id="agent-'2'", base=other))
    with pytest.raises(perr.AgentBusyError):
        p.executions.create_active(AgentExecution.start("exec-4", agent_id="agent-1", base=root))

    snapshot = {"fields": {"n": 1}, "phase": "one"}
    p.workflow_states.save("wf-1", expected_revision=None, snapshot=snapshot)
    p.workflow_states.save(
        "wf-1", expected_revision=1, snapshot={"fields": {"n": 2}, "phase": None}
    )
    p.workflow_states.save("wf-gone", expected_revision=None, snapshot=snapshot)
    p.workflow_states.delete("wf-gone", expected_revision=1)
    p.workflow_states.save("wf-again", expected_revision=None, snapshot=snapshot)
    p.workflow_states.delete("wf-again", expected_revision=1)
    p.workflow_states.save(
        "wf-again", expected_revision=None, snapshot={"fields": {}, "phase": "x"}
    )

    state = p.handoff_states.save(
        "agent-1", expected_revision=None, state=HandoffState.create("agent-1", active_agent_id="a")
    )
    p.handoff_states.save("agent-1", expected_revision=1, state=state.evolve(active_agent_id="b"))

    team = p.teams.create(TeamRoot.create("team-1", definition_id="crew"))
    p.teams.save("team-1", expected_revision=0, root=team.evolve(lifecycle_status="active"))
    p.teams.create(TeamRoot.create("team-gone", definition_id="crew"))
    p.teams.delete("team-gone")
    team_run = p.team_executions.create_active(TeamExecution.start("run-1", team_id="team-1"))
    p.team_executions.save("run-1", expected_revision=0, execution=team_run.evolve(status="failed"))
    p.team_executions.create_active(TeamExecution.start("run-2", team_id="team-1"))

    def rolled_back(tx: Repositories) -> None:
        tx.contents.put_text("never committed")
        tx.agents.create(AgentRoot.create("agent-rolled-back", definition_id="d"))
        tx.workflow_states.save("wf-1", expected_revision=2, snapshot=snapshot)
        tx.journals.append(
            "agent-1",
            expected_position=1,
            records=[AgentJournalRecord.create("j9", agent_id="agent-1", kind="message")],
        )
        raise RolledBackError

    with pytest.raises(RolledBackError):
        p.run_in_transaction(rolled_back)
    with pytest.raises(perr.ConflictError):
        p.agents.save("agent-1", expected_revision=0, root=root)


DECODERS: dict[str, Callable[[RecordEntry], object]] = {
    "agent.roots": decode_agent_root,
    "agent.executions": decode_agent_execution,
    "team.roots": decode_team_root,
    "team.executions": decode_team_execution,
    "handoff.states": decode_handoff_state,
}


def _load(p: Persistence, resource: str, key: str) -> Any:
    return {
        "agent.roots": p.agents.load,
        "agent.executions": p.executions.load,
        "team.roots": p.teams.load,
        "team.executions": p.team_executions.load,
        "handoff.states": p.handoff_states.load,
    }[resource](key)


def test_replaying_the_log_rebuilds_every_live_row(durable_store: Any) -> None:
    p: Persistence = durable_store.persistence
    _history(p)
    p = durable_store.reopen()
    rebuilt = _replay(p)

    # The log rebuilds exactly the projection rows.
    assert rebuilt.records == _projection(p)
    assert ("agent.roots", "agent-rolled-back") not in rebuilt.records
    assert ("team.roots", "team-gone") not in rebuilt.records
    assert ("workflow.states", "wf-gone") not in rebuilt.records
    assert rebuilt.records[("workflow.states", "wf-again")].revision == 1
    assert events.RECORD_DELETED in rebuilt.topics
    assert events.STREAM_DELETED in rebuilt.topics

    # ... and what the repositories load.
    kinds = {resource for resource, _ in rebuilt.records}
    assert kinds == {
        "agent.roots",
        "agent.executions",
        "team.roots",
        "team.executions",
        "handoff.states",
        "workflow.states",
    }
    for (resource, key), entry in rebuilt.records.items():
        if resource == "workflow.states":
            loaded = p.workflow_states.load(key)
            assert loaded is not None
            state = decode_workflow_state(entry)
            assert (loaded["revision"], loaded["snapshot"]) == (
                state.workflow_revision,
                state.snapshot,
            )
        else:
            assert _load(p, resource, key) == DECODERS[resource](entry), (resource, key)

    # Journals: positions restart after a delete; rebuilt entries equal the repository's.
    assert set(rebuilt.streams) == {("agent.journal", "agent-1"), ("agent.journal", "agent-'2'")}
    for (_, agent_id), entries in rebuilt.streams.items():
        assert p.journals.head(agent_id) == len(entries)
        assert p.journals.read(agent_id) == tuple(
            decode_journal_record(entry, agent_id=agent_id) for entry in entries
        )
    assert [r.kind for r in p.journals.read("agent-1")] == ["restart"]

    # Blobs: bytes and the first attributes.
    assert len(rebuilt.blobs) == 3
    for (resource, key), (data, attributes) in rebuilt.blobs.items():
        assert resource == "content.blobs"
        assert p.contents.fetch(key) == data
        stored = p.backend.view.blobs(resource).fetch(key)
        assert dict(stored.attributes) == attributes
    assert {attributes["canonicalization_version"] for _, attributes in rebuilt.blobs.values()} == {
        1,
        7,
    }


def test_replay_of_a_key_follows_its_history(durable_store: Any) -> None:
    """The log of one key holds every revision, so replay and ``history`` agree."""
    p: Persistence = durable_store.persistence
    _history(p)
    rebuilt_agent = _replay(p).records[("agent.roots", "agent-1")]
    history = p.agents.history("agent-1")
    assert [h.revision for h in history] == [0, 1]
    assert history[-1].value == decode_agent_root(rebuilt_agent)
    assert [h.revision for h in p.workflow_states.history("wf-again")] == [1, 1]
