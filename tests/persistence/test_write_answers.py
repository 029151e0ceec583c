"""A write the store answers with something else is rolled back, on every backend.

Each test lets the driver really perform one write and then hand back a
corrupt answer (other bytes, another payload, another revision, entries of
another batch). The repository must notice inside the same atomic step, so
the error it raises (``IntegrityError`` for content, ``SerializationError``
for records) rolls the write back: the store is left as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.content_store import content_id
from nenjim.infrastructure.storage import BlobEntry, DurableRecord, RecordEntry, StreamEntry

AGENT = "agent-1"
TEAM = "team-1"


def _tampered(record: DurableRecord) -> DurableRecord:
    """The same envelope with a self-consistent but different payload."""
    payload = record.payload
    if "metadata" in payload:
        payload["metadata"] = {"tampered": True}
    else:
        payload["snapshot"] = {"fields": {"tampered": True}, "phase": None}
    return DurableRecord(record.record_type, record.format_version, payload)


def _corrupt_record(entry: RecordEntry) -> RecordEntry:
    return dataclasses.replace(entry, record=_tampered(entry.record))


def _bumped_revision(entry: RecordEntry) -> RecordEntry:
    return dataclasses.replace(entry, revision=entry.revision + 1)


def _corrupt_stream(entries: Sequence[StreamEntry]) -> list[StreamEntry]:
    return [dataclasses.replace(entry, record=_tampered(entry.record)) for entry in entries]


def _corrupt_blob(blob: BlobEntry) -> BlobEntry:
    return BlobEntry(blob.key, b"not what was written", blob.attributes)


def _answering(
    monkeypatch: pytest.MonkeyPatch,
    persistence: Persistence,
    method: str,
    corrupt: Callable[[Any], Any],
) -> None:
    driver = persistence.backend.driver
    original = getattr(driver, method)

    def corrupted(*args: Any) -> Any:
        return corrupt(original(*args))

    monkeypatch.setattr(driver, method, corrupted)


@pytest.fixture
def seeded(persistence: Persistence) -> Persistence:
    """An Agent (with a finished run), a Team, a Workflow and a Handoff, all at revision 1."""
    root = persistence.agents.create(AgentRoot.create(AGENT, definition_id="assistant"))
    persistence.agents.save(AGENT, expected_revision=0, root=root.evolve(lifecycle_status="active"))
    run = persistence.executions.create_active(
        AgentExecution.start("run-1", agent_id=AGENT, base=root)
    )
    persistence.executions.save(
        "run-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    team = persistence.teams.create(TeamRoot.create(TEAM, definition_id="crew"))
    persistence.teams.save(TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active"))
    team_run = persistence.team_executions.create_active(
        TeamExecution.start("team-run-1", team_id=TEAM)
    )
    persistence.team_executions.save(
        "team-run-1", expected_revision=0, execution=team_run.evolve(status="completed")
    )
    persistence.workflow_states.save("wf-1", expected_revision=None, snapshot=_snapshot(1))
    persistence.handoff_states.save(
        AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    )
    return persistence


def _snapshot(value: int) -> dict[str, Any]:
    return {"fields": {"value": value}, "phase": None}


def _state(p: Persistence) -> dict[str, Any]:
    """Everything the writes below could change."""
    handoff = p.handoff_states.load(AGENT)
    workflow = p.workflow_states.load("wf-1")
    return {
        "agents": [(a.agent_id, a.agent_revision) for a in (p.agents.load(AGENT),)],
        "new agent": p.backend.view.records("agent.roots").read("agent-2") is None,
        "runs": [(r.execution_id, r.execution_revision) for r in p.executions.list(AGENT)],
        "team": p.teams.load(TEAM).team_revision,
        "new team": p.backend.view.records("team.roots").read("team-2") is None,
        "team runs": [
            (r.team_execution_id, r.execution_revision) for r in p.team_executions.list(TEAM)
        ],
        "journal": p.journals.head(AGENT),
        "workflow": None if workflow is None else workflow["revision"],
        "new workflow": p.workflow_states.load("wf-2"),
        "handoff": None if handoff is None else handoff.handoff_revision,
        "new handoff": p.handoff_states.load("agent-2"),
        "content": p.contents.exists(content_id(b"new content")),
    }


WRITES: dict[str, tuple[str, Callable[[Any], Any], Callable[[Persistence], object]]] = {
    "contents.put": (
        "put_blob",
        _corrupt_blob,
        lambda p: p.contents.put(b"new content", canonicalization_version=1),
    ),
    "agents.create": (
        "insert_record",
        _corrupt_record,
        lambda p: p.agents.create(AgentRoot.create("agent-2", definition_id="assistant")),
    ),
    "agents.save": (
        "replace_record",
        _corrupt_record,
        lambda p: p.agents.save(
            AGENT, expected_revision=1, root=p.agents.load(AGENT).evolve(journal_position=0)
        ),
    ),
    "teams.create": (
        "insert_record",
        _corrupt_record,
        lambda p: p.teams.create(TeamRoot.create("team-2", definition_id="crew")),
    ),
    "teams.save": (
        "replace_record",
        _corrupt_record,
        lambda p: p.teams.save(
            TEAM, expected_revision=1, root=p.teams.load(TEAM).evolve(lifecycle_status="active")
        ),
    ),
    "executions.create_active": (
        "insert_record",
        _corrupt_record,
        lambda p: p.executions.create_active(
            AgentExecution.start("run-2", agent_id=AGENT, base=p.agents.load(AGENT))
        ),
    ),
    "executions.save": (
        "replace_record",
        _corrupt_record,
        lambda p: p.executions.save(
            "run-1",
            expected_revision=1,
            execution=p.executions.load("run-1").evolve(phase="archived"),
        ),
    ),
    "team_executions.create_active": (
        "insert_record",
        _corrupt_record,
        lambda p: p.team_executions.create_active(TeamExecution.start("team-run-2", team_id=TEAM)),
    ),
    "team_executions.save": (
        "replace_record",
        _corrupt_record,
        lambda p: p.team_executions.save(
            "team-run-1",
            expected_revision=1,
            execution=p.team_executions.load("team-run-1").evolve(phase="archived"),
        ),
    ),
    "journals.append": (
        "append_stream",
        _corrupt_stream,
        lambda p: p.journals.append(
            AGENT,
            expected_position=0,
            records=[AgentJournalRecord.create("r1", agent_id=AGENT, kind="message")],
        ),
    ),
    "workflow_states.save (insert)": (
        "insert_record",
        _corrupt_record,
        lambda p: p.workflow_states.save("wf-2", expected_revision=None, snapshot=_snapshot(0)),
    ),
    "workflow_states.save (replace)": (
        "replace_record",
        _corrupt_record,
        lambda p: p.workflow_states.save("wf-1", expected_revision=1, snapshot=_snapshot(2)),
    ),
    "workflow_states.save (other revision)": (
        "replace_record",
        _bumped_revision,
        lambda p: p.workflow_states.save("wf-1", expected_revision=1, snapshot=_snapshot(2)),
    ),
    "handoff_states.save (insert)": (
        "insert_record",
        _corrupt_record,
        lambda p: p.handoff_states.save(
            "agent-2",
            expected_revision=None,
            state=HandoffState.create("agent-2", active_agent_id=AGENT),
        ),
    ),
    "handoff_states.save (replace)": (
        "replace_record",
        _corrupt_record,
        lambda p: p.handoff_states.save(
            AGENT,
            expected_revision=1,
            state=p.handoff_states.load(AGENT).evolve(active_agent_id="agent-3"),  # type: ignore[union-attr]
        ),
    ),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_corrupt_answer_to_a_write_rolls_the_write_back(
    seeded: Persistence, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    method, corrupt, call = WRITES[write]
    before = _state(seeded)
    _answering(monkeypatch, seeded, method, corrupt)
    expected = perr.IntegrityError if write == "contents.put" else perr.SerializationError
    with pytest.raises(expected):
        call(seeded)
    monkeypatch.undo()
    assert _state(seeded) == before


@pytest.mark.parametrize("write", ["contents.put", "workflow_states.save (replace)"])
def test_a_corrupt_answer_inside_a_transaction_fails_it(
    seeded: Persistence, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    method, corrupt, call = WRITES[write]
    before = _state(seeded)

    def body() -> None:
        with seeded.transaction() as tx:
            tx.workflow_states.save("wf-2", expected_revision=None, snapshot=_snapshot(0))
            _answering(monkeypatch, seeded, method, corrupt)
            with pytest.raises((perr.IntegrityError, perr.SerializationError)):
                call(tx)  # the error is caught: the transaction must still roll back

    with pytest.raises(perr.TransactionError):
        body()
    monkeypatch.undo()
    assert _state(seeded) == before
