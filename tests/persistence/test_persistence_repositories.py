"""The eight repositories, one test per rule of each, their pagination,
revision start values and ``history``. Every test runs on memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence, Repositories
from nenjim.infrastructure.persistence.codecs import (
    encode_agent_execution,
    encode_agent_root,
    encode_journal_record,
)
from nenjim.infrastructure.storage import AppendEntry, DurableRecord

AGENT = "agent-1"
OTHER = "agent-2"
TEAM = "team-1"


def _root(agent_id: str = AGENT) -> AgentRoot:
    return AgentRoot.create(agent_id, definition_id="assistant")


def _run(root: AgentRoot, execution_id: str) -> AgentExecution:
    return AgentExecution.start(execution_id, agent_id=root.agent_id, base=root)


def _record(record_id: str, agent_id: str = AGENT) -> AgentJournalRecord:
    return AgentJournalRecord.create(record_id, agent_id=agent_id, kind="message")


def _team(team_id: str = TEAM) -> TeamRoot:
    return TeamRoot.create(team_id, definition_id="crew")


def _team_run(run_id: str, team_id: str = TEAM) -> TeamExecution:
    return TeamExecution.start(run_id, team_id=team_id)


class RolledBackError(Exception):
    """Raised by a test to make its transaction roll back."""


def _fields(value: object) -> dict[str, object]:
    """Every field of a value (the ``to_h`` of the Ruby contract)."""
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}  # type: ignore[arg-type]


def _stored_revision(persistence: Persistence, resource: str, key: str) -> int:
    entry = persistence.backend.view.records(resource).read(key)
    assert entry is not None
    return entry.revision


# an Agent repository ---------------------------------------------------


def test_agent_create_and_load_round_trip(persistence: Persistence) -> None:
    root = AgentRoot.create(
        AGENT,
        definition_id="assistant",
        definition_version="7",
        metadata={"labels": ["a", "b"], "nested": {"x": None}},
    )
    created = persistence.agents.create(root)
    assert created == root
    assert _fields(persistence.agents.load(AGENT)) == _fields(root)


def test_agent_duplicate_create_conflicts(persistence: Persistence) -> None:
    persistence.agents.create(_root())
    with pytest.raises(perr.ConflictError):
        persistence.agents.create(_root())


def test_loading_a_missing_agent_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError, match="Agent not found"):
        persistence.agents.load("ghost")


def test_agent_save_at_the_expected_revision(persistence: Persistence) -> None:
    root = persistence.agents.create(_root())
    saved = persistence.agents.save(
        AGENT, expected_revision=0, root=root.evolve(lifecycle_status="active")
    )
    assert saved.agent_revision == 1
    assert saved.lifecycle_status == "active"
    assert persistence.agents.load(AGENT) == saved
    assert _stored_revision(persistence, "agent.roots", AGENT) == 1


def test_agent_save_with_a_stale_revision_conflicts(persistence: Persistence) -> None:
    root = persistence.agents.create(_root())
    first = persistence.agents.save(AGENT, expected_revision=0, root=root.evolve())
    with pytest.raises(perr.ConflictError):
        persistence.agents.save(AGENT, expected_revision=0, root=root.evolve())
    assert persistence.agents.load(AGENT) == first


def test_agent_save_of_another_agents_root_is_a_serialization_error(
    persistence: Persistence,
) -> None:
    persistence.agents.create(_root())
    persistence.agents.create(_root(OTHER))
    other = _root(OTHER).evolve()
    with pytest.raises(perr.SerializationError):
        persistence.agents.save(AGENT, expected_revision=0, root=other)
    assert persistence.agents.load(AGENT).agent_revision == 0


def test_agent_save_skipping_a_revision_conflicts(persistence: Persistence) -> None:
    root = persistence.agents.create(_root())
    with pytest.raises(perr.ConflictError):
        persistence.agents.save(AGENT, expected_revision=0, root=root.evolve().evolve())
    assert persistence.agents.load(AGENT).agent_revision == 0


def test_agent_save_of_a_missing_root_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.agents.save(AGENT, expected_revision=0, root=_root().evolve())


def test_agent_delete_is_idempotent(persistence: Persistence) -> None:
    persistence.agents.create(_root())
    persistence.agents.delete(AGENT)
    persistence.agents.delete(AGENT)
    with pytest.raises(perr.NotFoundError):
        persistence.agents.load(AGENT)


# a Journal repository --------------------------------------------------


@pytest.fixture
def agent(persistence: Persistence) -> AgentRoot:
    return persistence.agents.create(_root())


def test_journal_append_assigns_sequences(persistence: Persistence, agent: AgentRoot) -> None:
    appended = persistence.journals.append(
        AGENT, expected_position=0, records=[_record("r1"), _record("r2")]
    )
    assert [r.sequence for r in appended] == [1, 2]
    assert [r.record_id for r in appended] == ["r1", "r2"]
    assert persistence.journals.head(AGENT) == 2


def test_journal_append_at_a_wrong_position_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    with pytest.raises(perr.ConflictError):
        persistence.journals.append(AGENT, expected_position=1, records=[_record("r1")])
    assert persistence.journals.head(AGENT) == 0


def test_journal_record_id_already_stored_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.journals.append(AGENT, expected_position=0, records=[_record("r1")])
    with pytest.raises(perr.ConflictError):
        persistence.journals.append(AGENT, expected_position=1, records=[_record("r1")])
    assert persistence.journals.head(AGENT) == 1


def test_journal_record_id_repeated_in_a_batch_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    with pytest.raises(perr.ConflictError):
        persistence.journals.append(
            AGENT, expected_position=0, records=[_record("r1"), _record("r1")]
        )
    assert persistence.journals.head(AGENT) == 0


def test_journal_record_of_another_agent_is_a_serialization_error(
    persistence: Persistence, agent: AgentRoot
) -> None:
    with pytest.raises(perr.SerializationError):
        persistence.journals.append(
            AGENT, expected_position=0, records=[_record("r1"), _record("r2", agent_id=OTHER)]
        )
    assert persistence.journals.head(AGENT) == 0
    assert persistence.journals.read(AGENT) == ()


def test_journal_append_to_a_missing_agent_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.journals.append("ghost", expected_position=0, records=[_record("r", "ghost")])
    with pytest.raises(perr.NotFoundError):
        persistence.journals.append("ghost", expected_position=0, records=[])


def test_journal_read_in_order_with_after_and_limit(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.journals.append(
        AGENT, expected_position=0, records=[_record("r1"), _record("r2"), _record("r3")]
    )
    assert [r.sequence for r in persistence.journals.read(AGENT)] == [1, 2, 3]
    assert [r.record_id for r in persistence.journals.read(AGENT)] == ["r1", "r2", "r3"]
    assert [r.sequence for r in persistence.journals.read(AGENT, after=1)] == [2, 3]
    assert [r.sequence for r in persistence.journals.read(AGENT, limit=2)] == [1, 2]
    assert [r.sequence for r in persistence.journals.read(AGENT, after=1, limit=1)] == [2]
    assert persistence.journals.read(AGENT, limit=0) == ()


def test_journal_read_limit_must_not_be_negative(
    persistence: Persistence, agent: AgentRoot
) -> None:
    with pytest.raises((ValueError, TypeError)):
        persistence.journals.read(AGENT, limit=-1)


def test_mutating_a_read_journal_does_not_change_it(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.journals.append(AGENT, expected_position=0, records=[_record("r1")])
    read = persistence.journals.read(AGENT)
    assert isinstance(read, tuple)
    as_list = list(read)
    as_list.clear()
    with pytest.raises(dataclasses.FrozenInstanceError):
        read[0].kind = "changed"  # type: ignore[misc]
    again = persistence.journals.read(AGENT)
    assert [r.record_id for r in again] == ["r1"]
    assert again == read


def test_empty_journal_reads_empty_with_head_zero(
    persistence: Persistence, agent: AgentRoot
) -> None:
    assert persistence.journals.read(AGENT) == ()
    assert persistence.journals.head(AGENT) == 0
    assert persistence.journals.read("never-created") == ()
    assert persistence.journals.head("never-created") == 0


def test_journal_delete_empties_and_resets_the_head(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.journals.append(AGENT, expected_position=0, records=[_record("r1"), _record("r2")])
    persistence.journals.delete(AGENT)
    assert persistence.journals.read(AGENT) == ()
    assert persistence.journals.head(AGENT) == 0
    again = persistence.journals.append(AGENT, expected_position=0, records=[_record("r1")])
    assert [r.sequence for r in again] == [1]


def test_journal_delete_needs_the_agent_root(persistence: Persistence, agent: AgentRoot) -> None:
    persistence.journals.append(AGENT, expected_position=0, records=[_record("r1")])
    persistence.agents.delete(AGENT)
    with pytest.raises(perr.NotFoundError):
        persistence.journals.delete(AGENT)


# an Execution repository -------------------------------------------------


def test_execution_create_active_and_load_round_trip(
    persistence: Persistence, agent: AgentRoot
) -> None:
    run = AgentExecution.start(
        "exec-1",
        agent_id=AGENT,
        base=agent,
        working_records=[_record("w1").with_sequence(1)],
        metadata={"k": [1, 2.5, "three"]},
    )
    assert persistence.executions.create_active(run) == run
    assert _fields(persistence.executions.load("exec-1")) == _fields(run)


def test_loading_a_missing_execution_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.executions.load("ghost")


def test_duplicate_execution_id_conflicts_and_is_not_busy(
    persistence: Persistence, agent: AgentRoot
) -> None:
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    with pytest.raises(perr.ConflictError):
        persistence.executions.create_active(_run(agent, "exec-1"))


def test_second_active_execution_for_an_agent_is_busy(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.executions.create_active(_run(agent, "exec-1"))
    with pytest.raises(perr.AgentBusyError) as raised:
        persistence.executions.create_active(_run(agent, "exec-2"))
    assert not isinstance(raised.value, perr.PersistenceError)
    with pytest.raises(perr.NotFoundError):
        persistence.executions.load("exec-2")


def test_different_agents_may_each_have_an_active_execution(
    persistence: Persistence, agent: AgentRoot
) -> None:
    other = persistence.agents.create(_root(OTHER))
    persistence.executions.create_active(_run(agent, "exec-1"))
    persistence.executions.create_active(_run(other, "exec-2"))
    assert [e.execution_id for e in persistence.executions.list_active(AGENT)] == ["exec-1"]
    assert [e.execution_id for e in persistence.executions.list_active(OTHER)] == ["exec-2"]


def test_create_active_of_a_terminal_execution_is_a_serialization_error(
    persistence: Persistence, agent: AgentRoot
) -> None:
    done = _run(agent, "exec-1").evolve(status="completed")
    with pytest.raises(perr.SerializationError):
        persistence.executions.create_active(done)
    with pytest.raises(perr.NotFoundError):
        persistence.executions.load("exec-1")


def test_create_active_for_a_missing_agent_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.executions.create_active(_run(_root("ghost"), "exec-1"))


def test_execution_save_at_the_expected_revision(
    persistence: Persistence, agent: AgentRoot
) -> None:
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    saved = persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="active", phase="calling")
    )
    assert saved.execution_revision == 1
    loaded = persistence.executions.load("exec-1")
    assert loaded.execution_revision == 1
    assert loaded == saved
    assert _stored_revision(persistence, "agent.executions", "exec-1") == 1


def test_execution_save_with_a_stale_revision_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    persistence.executions.save("exec-1", expected_revision=0, execution=run.evolve())
    with pytest.raises(perr.ConflictError):
        persistence.executions.save("exec-1", expected_revision=0, execution=run.evolve())
    assert persistence.executions.load("exec-1").execution_revision == 1


def test_execution_save_with_another_id_is_a_serialization_error(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.executions.create_active(_run(agent, "exec-1"))
    other_id = _run(agent, "exec-2").evolve()
    with pytest.raises(perr.SerializationError):
        persistence.executions.save("exec-1", expected_revision=0, execution=other_id)
    assert persistence.executions.load("exec-1").execution_revision == 0


def test_execution_save_with_another_agent_is_a_serialization_error(
    persistence: Persistence, agent: AgentRoot
) -> None:
    other = persistence.agents.create(_root(OTHER))
    persistence.executions.create_active(_run(agent, "exec-1"))
    other_agent = _run(other, "exec-1").evolve()
    with pytest.raises(perr.SerializationError):
        persistence.executions.save("exec-1", expected_revision=0, execution=other_agent)
    assert persistence.executions.load("exec-1").agent_id == AGENT


def test_execution_save_skipping_a_revision_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    with pytest.raises(perr.ConflictError):
        persistence.executions.save("exec-1", expected_revision=0, execution=run.evolve().evolve())
    assert persistence.executions.load("exec-1").execution_revision == 0


def test_reactivating_beside_an_active_execution_is_busy(
    persistence: Persistence, agent: AgentRoot
) -> None:
    first = persistence.executions.create_active(_run(agent, "exec-1"))
    done = persistence.executions.save(
        "exec-1", expected_revision=0, execution=first.evolve(status="completed")
    )
    persistence.executions.create_active(_run(agent, "exec-2"))
    with pytest.raises(perr.AgentBusyError):
        persistence.executions.save(
            "exec-1", expected_revision=1, execution=done.evolve(status="active")
        )
    # A stale revision is checked before the busy rule.
    with pytest.raises(perr.ConflictError):
        persistence.executions.save(
            "exec-1", expected_revision=0, execution=first.evolve(status="active")
        )
    assert persistence.executions.load("exec-1").status == "completed"


def test_list_active_returns_the_active_execution(
    persistence: Persistence, agent: AgentRoot
) -> None:
    assert persistence.executions.list_active(AGENT) == ()
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    assert [e.execution_id for e in persistence.executions.list_active(AGENT)] == ["exec-1"]
    persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="failed")
    )
    assert persistence.executions.list_active(AGENT) == ()


def test_assert_idle_then_busy(persistence: Persistence, agent: AgentRoot) -> None:
    assert persistence.executions.assert_idle(AGENT) is True
    persistence.executions.create_active(_run(agent, "exec-1"))
    with pytest.raises(perr.AgentBusyError):
        persistence.executions.assert_idle(AGENT)


def test_assert_idle_of_a_missing_agent_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.executions.assert_idle("ghost")


def test_execution_delete_removes_it(persistence: Persistence, agent: AgentRoot) -> None:
    persistence.executions.create_active(_run(agent, "exec-1"))
    persistence.executions.delete("exec-1")
    with pytest.raises(perr.NotFoundError):
        persistence.executions.load("exec-1")
    persistence.executions.delete("exec-1")  # unchecked: a missing one is fine
    assert persistence.executions.assert_idle(AGENT)


def test_execution_delete_needs_the_owner_root(persistence: Persistence, agent: AgentRoot) -> None:
    persistence.executions.create_active(_run(agent, "exec-1"))
    persistence.agents.delete(AGENT)
    with pytest.raises(perr.NotFoundError):
        persistence.executions.delete("exec-1")
    with pytest.raises(perr.NotFoundError):
        persistence.executions.delete_for_agent(AGENT)
    assert persistence.executions.load("exec-1").agent_id == AGENT


def test_delete_for_agent_removes_only_that_agents_executions(
    persistence: Persistence, agent: AgentRoot
) -> None:
    other = persistence.agents.create(_root(OTHER))
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    persistence.executions.create_active(_run(agent, "exec-2"))
    persistence.executions.create_active(_run(other, "exec-3"))
    persistence.executions.delete_for_agent(AGENT)
    for gone in ("exec-1", "exec-2"):
        with pytest.raises(perr.NotFoundError):
            persistence.executions.load(gone)
    assert persistence.executions.load("exec-3").agent_id == OTHER
    assert persistence.executions.list(AGENT) == ()


# a workflow state repository ---------------------------------------------


class Key(enum.StrEnum):
    VALUE = "value"


class Phase(enum.Enum):
    PAUSE = "pause"


def test_loading_an_unknown_workflow_is_none(persistence: Persistence) -> None:
    assert persistence.workflow_states.load("wf-unknown") is None


def test_workflow_save_returns_one_then_two(persistence: Persistence) -> None:
    snapshot = {"fields": {"value": 1}, "phase": "pause"}
    assert persistence.workflow_states.save("wf", expected_revision=None, snapshot=snapshot) == 1
    assert _stored_revision(persistence, "workflow.states", "wf") == 1
    assert persistence.workflow_states.save("wf", expected_revision=1, snapshot=snapshot) == 2
    loaded = persistence.workflow_states.load("wf")
    assert loaded is not None
    assert loaded["revision"] == 2


def test_second_initial_workflow_save_conflicts(persistence: Persistence) -> None:
    snapshot: dict[str, Any] = {"fields": {}, "phase": None}
    persistence.workflow_states.save("wf", expected_revision=None, snapshot=snapshot)
    with pytest.raises(perr.ConflictError):
        persistence.workflow_states.save("wf", expected_revision=None, snapshot=snapshot)


def test_workflow_load_with_string_or_symbol_keys(persistence: Persistence) -> None:
    persistence.workflow_states.save(
        "wf-str", expected_revision=None, snapshot={"fields": {"value": 1}, "phase": "pause"}
    )
    persistence.workflow_states.save(
        "wf-sym", expected_revision=None, snapshot={"fields": {Key.VALUE: 1}, "phase": Phase.PAUSE}
    )
    for workflow in ("wf-str", "wf-sym"):
        loaded = persistence.workflow_states.load(workflow)
        assert loaded is not None
        assert loaded["revision"] == 1
        assert loaded["snapshot"]["fields"]["value"] == 1
        assert loaded["snapshot"]["phase"] == "pause"
        assert loaded["snapshot"] == {"fields": {"value": 1}, "phase": "pause"}
        assert all(type(key) is str for key in loaded["snapshot"]["fields"])


def test_mutating_a_loaded_workflow_snapshot_does_not_change_it(
    persistence: Persistence,
) -> None:
    persistence.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {"items": [1, [2]]}, "phase": None}
    )
    loaded = persistence.workflow_states.load("wf")
    assert loaded is not None
    items = loaded["snapshot"]["fields"]["items"]
    try:
        items.append(3)
        items[1].append(4)
    except (AttributeError, TypeError):
        pass  # a read-only snapshot is fine too
    again = persistence.workflow_states.load("wf")
    assert again is not None
    assert again["snapshot"]["fields"]["items"] == [1, [2]]


def test_workflow_value_outside_the_domain_is_a_serialization_error(
    persistence: Persistence,
) -> None:
    with pytest.raises(perr.SerializationError, match="unsupported Workflow durable value"):
        persistence.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": {"when": object()}, "phase": None}
        )
    with pytest.raises(perr.SerializationError):
        persistence.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": {"n": 2**60}, "phase": None}
        )
    assert persistence.workflow_states.load("wf") is None


def test_workflow_delete_checks_the_revision(persistence: Persistence) -> None:
    persistence.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
    )
    with pytest.raises(perr.ConflictError):
        persistence.workflow_states.delete("wf", expected_revision=99)
    assert persistence.workflow_states.load("wf") is not None
    persistence.workflow_states.delete("wf", expected_revision=1)
    assert persistence.workflow_states.load("wf") is None
    with pytest.raises(perr.ConflictError):
        persistence.workflow_states.delete("wf", expected_revision=1)


def test_workflow_replace_of_a_missing_row_conflicts(persistence: Persistence) -> None:
    with pytest.raises(perr.ConflictError) as raised:
        persistence.workflow_states.save(
            "wf", expected_revision=1, snapshot={"fields": {}, "phase": None}
        )
    assert not isinstance(raised.value, perr.NotFoundError)
    persistence.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
    )
    with pytest.raises(perr.ConflictError):
        persistence.workflow_states.save(
            "wf", expected_revision=5, snapshot={"fields": {}, "phase": None}
        )


# a Handoff state repository ------------------------------------------------


def test_loading_an_absent_handoff_is_none(persistence: Persistence) -> None:
    assert persistence.handoff_states.load(AGENT) is None


def test_handoff_save_load_round_trip_and_cas(persistence: Persistence) -> None:
    state = HandoffState.create(AGENT, active_agent_id=OTHER, metadata={"why": "escalation"})
    persistence.handoff_states.save(AGENT, expected_revision=None, state=state)
    loaded = persistence.handoff_states.load(AGENT)
    assert loaded == state
    assert loaded is not None
    assert loaded.handoff_revision == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.active_agent_id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        loaded.metadata["why"] = "changed"  # type: ignore[index]
    second = state.evolve(active_agent_id=AGENT)
    assert persistence.handoff_states.save(AGENT, expected_revision=1, state=second) == second
    with pytest.raises(perr.ConflictError):
        persistence.handoff_states.save(AGENT, expected_revision=1, state=second)
    reloaded = persistence.handoff_states.load(AGENT)
    assert reloaded is not None
    assert reloaded.handoff_revision == 2
    assert reloaded.active_agent_id == AGENT
    assert _stored_revision(persistence, "handoff.states", AGENT) == 2


def test_handoff_state_under_another_anchor_is_a_serialization_error(
    persistence: Persistence,
) -> None:
    state = HandoffState.create(OTHER, active_agent_id=AGENT)
    with pytest.raises(perr.SerializationError):
        persistence.handoff_states.save(AGENT, expected_revision=None, state=state)
    assert persistence.handoff_states.load(AGENT) is None
    assert persistence.handoff_states.load(OTHER) is None


def test_handoff_state_with_the_wrong_revision_is_a_serialization_error(
    persistence: Persistence,
) -> None:
    state = HandoffState.create(AGENT, active_agent_id=OTHER)
    with pytest.raises(perr.SerializationError):
        persistence.handoff_states.save(AGENT, expected_revision=None, state=state.evolve())


def test_handoff_duplicate_initial_save_and_missing_replace_conflict(
    persistence: Persistence,
) -> None:
    state = HandoffState.create(AGENT, active_agent_id=OTHER)
    with pytest.raises(perr.ConflictError):
        persistence.handoff_states.save(AGENT, expected_revision=1, state=state.evolve())
    persistence.handoff_states.save(AGENT, expected_revision=None, state=state)
    with pytest.raises(perr.ConflictError):
        persistence.handoff_states.save(AGENT, expected_revision=None, state=state)


def test_handoff_delete_is_checked(persistence: Persistence) -> None:
    state = HandoffState.create(AGENT, active_agent_id=OTHER)
    persistence.handoff_states.save(AGENT, expected_revision=None, state=state)
    persistence.handoff_states.save(AGENT, expected_revision=1, state=state.evolve())
    with pytest.raises(perr.ConflictError):
        persistence.handoff_states.delete(AGENT, expected_revision=1)
    assert persistence.handoff_states.load(AGENT) is not None
    persistence.handoff_states.delete(AGENT, expected_revision=2)
    assert persistence.handoff_states.load(AGENT) is None
    with pytest.raises(perr.ConflictError):
        persistence.handoff_states.delete(AGENT, expected_revision=2)


# a Team repository ---------------------------------------------------------


def test_team_create_load_round_trip_and_duplicate(persistence: Persistence) -> None:
    team = TeamRoot.create(TEAM, definition_id="crew", metadata={"size": 3})
    assert persistence.teams.create(team) == team
    assert _fields(persistence.teams.load(TEAM)) == _fields(team)
    with pytest.raises(perr.ConflictError):
        persistence.teams.create(_team())


def test_team_save_with_a_stale_revision_conflicts(persistence: Persistence) -> None:
    team = persistence.teams.create(_team())
    saved = persistence.teams.save(
        TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active")
    )
    assert saved.team_revision == 1
    with pytest.raises(perr.ConflictError):
        persistence.teams.save(TEAM, expected_revision=0, root=team.evolve())
    assert persistence.teams.load(TEAM) == saved


def test_loading_an_absent_team_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError, match="Team not found"):
        persistence.teams.load("ghost-team")


def test_team_save_of_another_team_and_idempotent_delete(persistence: Persistence) -> None:
    persistence.teams.create(_team())
    with pytest.raises(perr.SerializationError):
        persistence.teams.save(TEAM, expected_revision=0, root=_team("team-2").evolve())
    persistence.teams.delete(TEAM)
    persistence.teams.delete(TEAM)
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)


# a Team execution repository ------------------------------------------------


@pytest.fixture
def team(persistence: Persistence) -> TeamRoot:
    return persistence.teams.create(_team())


def test_only_one_active_run_per_team(persistence: Persistence, team: TeamRoot) -> None:
    persistence.team_executions.create_active(_team_run("run-1"))
    with pytest.raises(perr.AgentBusyError):
        persistence.team_executions.create_active(_team_run("run-2"))
    assert [r.team_execution_id for r in persistence.team_executions.list_active(TEAM)] == ["run-1"]
    with pytest.raises(perr.AgentBusyError):
        persistence.team_executions.assert_idle(TEAM)


def test_completing_a_run_releases_admission(persistence: Persistence, team: TeamRoot) -> None:
    first = persistence.team_executions.create_active(_team_run("run-1"))
    done = persistence.team_executions.save(
        "run-1", expected_revision=0, execution=first.evolve(status="completed")
    )
    assert done.execution_revision == 1
    assert persistence.team_executions.assert_idle(TEAM) is True
    persistence.team_executions.create_active(_team_run("run-2"))

    assert [r.team_execution_id for r in persistence.team_executions.list(TEAM, limit=1)] == [
        "run-1"
    ]
    assert [r.team_execution_id for r in persistence.team_executions.list(TEAM, after="run-1")] == [
        "run-2"
    ]
    assert persistence.team_executions.list("team-other") == ()

    with pytest.raises(perr.ConflictError):
        persistence.team_executions.save(
            "run-1", expected_revision=0, execution=first.evolve(status="completed")
        )
    with pytest.raises(perr.ConflictError) as raised:
        persistence.team_executions.save(
            "run-1", expected_revision=1, execution=done.evolve(status="active")
        )
    assert not isinstance(raised.value, perr.AgentBusyError)
    assert persistence.team_executions.load("run-1").status == "completed"


def test_completed_team_run_cannot_be_reactivated_even_when_idle(
    persistence: Persistence, team: TeamRoot
) -> None:
    first = persistence.team_executions.create_active(_team_run("run-1"))
    done = persistence.team_executions.save(
        "run-1", expected_revision=0, execution=first.evolve(status="cancelled")
    )
    with pytest.raises(perr.ConflictError):
        persistence.team_executions.save(
            "run-1", expected_revision=1, execution=done.evolve(status="suspended")
        )
    assert persistence.team_executions.list_active(TEAM) == ()


def test_team_run_round_trip_delete_and_delete_for_team(
    persistence: Persistence, team: TeamRoot
) -> None:
    run = TeamExecution.start(
        "run-1",
        team_id=TEAM,
        coordinator={"agent": "lead"},
        tasks=[{"id": "t1"}],
        workers=["w1", "w2"],
        assignments=[["t1", "w1"]],
    )
    assert persistence.team_executions.create_active(run) == run
    assert persistence.team_executions.load("run-1") == run
    persistence.team_executions.delete("run-1")
    with pytest.raises(perr.NotFoundError):
        persistence.team_executions.load("run-1")
    persistence.team_executions.create_active(_team_run("run-2"))
    persistence.teams.create(_team("team-2"))
    persistence.team_executions.create_active(_team_run("run-3", "team-2"))
    persistence.team_executions.delete_for_team(TEAM)
    assert persistence.team_executions.list(TEAM) == ()
    assert [r.team_execution_id for r in persistence.team_executions.list("team-2")] == ["run-3"]
    with pytest.raises(perr.NotFoundError):
        persistence.team_executions.create_active(_team_run("run-4", "no-team"))


def test_failed_transaction_rolls_back_all_eight_resources(
    persistence: Persistence, team: TeamRoot
) -> None:
    contents: list[str] = []

    def write_all_then_raise(tx: Repositories) -> None:
        tx.team_executions.create_active(_team_run("run-1"))
        tx.teams.save(TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active"))
        tx.handoff_states.save(
            AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
        )
        contents.append(tx.contents.put_text("rolled back"))
        root = tx.agents.create(_root())
        assert tx.journals.append(AGENT, expected_position=0, records=[]) == ()
        tx.executions.create_active(_run(root, "exec-1"))
        tx.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
        )
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(write_all_then_raise)
    (content,) = contents

    assert persistence.teams.load(TEAM).team_revision == 0
    assert persistence.handoff_states.load(AGENT) is None
    assert persistence.team_executions.list(TEAM) == ()
    assert persistence.list_team_executions(TEAM) == ()
    with pytest.raises(perr.NotFoundError):
        persistence.agents.load(AGENT)
    assert persistence.executions.list(AGENT) == ()
    assert persistence.list_executions(AGENT) == ()
    assert persistence.workflow_states.load("wf") is None
    assert not persistence.contents.exists(content)


# pagination ------------------------------------------------------------

# UTF-8 byte order; U+1F600 sorts before U+FF5A (fullwidth z) in UTF-16 order, after it here.
ORDERED_IDS = ["Z", "a", "it's", "z", "é", "あ", "\uff5a", "😀"]


@pytest.mark.parametrize("limit", [0, -1, True, False, 1.5, "10", None])
def test_list_limit_must_be_a_positive_int(
    persistence: Persistence, agent: AgentRoot, team: TeamRoot, limit: object
) -> None:
    for listing in (
        lambda: persistence.executions.list(AGENT, limit=limit),  # type: ignore[arg-type]
        lambda: persistence.list_executions(AGENT, limit=limit),  # type: ignore[arg-type]
        lambda: persistence.team_executions.list(TEAM, limit=limit),  # type: ignore[arg-type]
        lambda: persistence.list_team_executions(TEAM, limit=limit),  # type: ignore[arg-type]
    ):
        with pytest.raises((ValueError, TypeError)):
            listing()


def _completed_runs(persistence: Persistence, agent: AgentRoot, ids: list[str]) -> None:
    with persistence.transaction() as tx:
        for execution_id in ids:
            run = tx.executions.create_active(_run(agent, execution_id))
            tx.executions.save(
                execution_id, expected_revision=0, execution=run.evolve(status="completed")
            )


def test_executions_list_in_utf8_byte_order_with_exclusive_cursor(
    persistence: Persistence, agent: AgentRoot
) -> None:
    _completed_runs(persistence, agent, list(reversed(ORDERED_IDS[1:])))
    persistence.executions.create_active(_run(agent, ORDERED_IDS[0]))  # one active run too
    listed = [e.execution_id for e in persistence.executions.list(AGENT)]
    assert listed == ORDERED_IDS
    assert [e.execution_id for e in persistence.list_executions(AGENT)] == ORDERED_IDS

    pages: list[str] = []
    cursor: str | None = None
    while True:
        page = persistence.list_executions(AGENT, after=cursor, limit=3)
        if not page:
            break
        assert len(page) <= 3
        pages.extend(e.execution_id for e in page)
        cursor = page[-1].execution_id
    assert pages == ORDERED_IDS
    assert [e.execution_id for e in persistence.executions.list(AGENT, after="z")] == ORDERED_IDS[
        4:
    ]
    # The cursor need not be a stored id.
    assert [e.execution_id for e in persistence.executions.list(AGENT, after="b")] == ORDERED_IDS[
        2:
    ]
    assert persistence.executions.list(AGENT, after="😀") == ()
    statuses = {e.execution_id: e.status for e in persistence.executions.list(AGENT)}
    assert statuses["Z"] == "preparing"
    assert statuses["a"] == "completed"


def test_team_runs_list_in_utf8_byte_order_including_terminal_runs(
    persistence: Persistence, team: TeamRoot
) -> None:
    with persistence.transaction() as tx:
        for run_id in reversed(ORDERED_IDS):
            run = tx.team_executions.create_active(_team_run(run_id))
            tx.team_executions.save(
                run_id, expected_revision=0, execution=run.evolve(status="failed")
            )
    assert [r.team_execution_id for r in persistence.list_team_executions(TEAM)] == ORDERED_IDS
    assert [
        r.team_execution_id for r in persistence.list_team_executions(TEAM, after="it's", limit=2)
    ] == ["z", "é"]


def test_list_default_limit_is_one_hundred(persistence: Persistence, agent: AgentRoot) -> None:
    ids = [f"exec-{n:03d}" for n in range(101)]
    _completed_runs(persistence, agent, ids)
    listed = persistence.list_executions(AGENT)
    assert [e.execution_id for e in listed] == ids[:100]
    assert [e.execution_id for e in persistence.executions.list(AGENT, after=ids[99])] == ids[100:]


# revision start values ------------------------------------------------------------


def test_revision_start_values(persistence: Persistence) -> None:
    root = persistence.agents.create(_root())
    persistence.executions.create_active(_run(root, "exec-1"))
    persistence.teams.create(_team())
    persistence.team_executions.create_active(_team_run("run-1"))
    persistence.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
    )
    persistence.handoff_states.save(
        AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    )
    assert _stored_revision(persistence, "agent.roots", AGENT) == 0
    assert _stored_revision(persistence, "agent.executions", "exec-1") == 0
    assert _stored_revision(persistence, "team.roots", TEAM) == 0
    assert _stored_revision(persistence, "team.executions", "run-1") == 0
    assert _stored_revision(persistence, "workflow.states", "wf") == 1
    assert _stored_revision(persistence, "handoff.states", AGENT) == 1
    assert persistence.agents.load(AGENT).agent_revision == 0
    assert persistence.executions.load("exec-1").execution_revision == 0
    assert persistence.teams.load(TEAM).team_revision == 0
    assert persistence.team_executions.load("run-1").execution_revision == 0
    workflow = persistence.workflow_states.load("wf")
    assert workflow is not None
    assert workflow["revision"] == 1
    handoff = persistence.handoff_states.load(AGENT)
    assert handoff is not None
    assert handoff.handoff_revision == 1


# history ---------------------------------------------------------------------------

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _at(minute: int) -> datetime:
    return T0.replace(minute=minute)


def test_agent_history_lists_every_revision_in_order(persistence: Persistence) -> None:
    root = persistence.agents.create(AgentRoot.create(AGENT, definition_id="d", created_at=_at(0)))
    one = persistence.agents.save(
        AGENT, expected_revision=0, root=root.evolve(lifecycle_status="active", updated_at=_at(1))
    )
    two = persistence.agents.save(
        AGENT, expected_revision=1, root=one.evolve(journal_position=0, updated_at=_at(2))
    )
    before = datetime.now(UTC)
    history = persistence.agents.history(AGENT)
    assert [h.revision for h in history] == [0, 1, 2]
    assert [h.value for h in history] == [root, one, two]
    # The time is when the log recorded each write, not a time the value carries.
    times = [h.recorded_at for h in history]
    assert times == sorted(times)
    assert all(t.tzinfo is not None and t <= before for t in times)
    assert times[0] > before - timedelta(minutes=5)
    assert persistence.agents.history("ghost") == ()


def test_execution_and_team_run_history(persistence: Persistence) -> None:
    root = persistence.agents.create(_root())
    run = persistence.executions.create_active(_run(root, "exec-1"))
    active = persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="active")
    )
    done = persistence.executions.save(
        "exec-1", expected_revision=1, execution=active.evolve(status="completed")
    )
    assert [(h.revision, h.value) for h in persistence.executions.history("exec-1")] == [
        (0, run),
        (1, active),
        (2, done),
    ]
    persistence.teams.create(_team())
    team_run = persistence.team_executions.create_active(_team_run("run-1"))
    finished = persistence.team_executions.save(
        "run-1", expected_revision=0, execution=team_run.evolve(status="completed")
    )
    assert [h.value for h in persistence.team_executions.history("run-1")] == [team_run, finished]


def test_team_history(persistence: Persistence) -> None:
    team = persistence.teams.create(_team())
    active = persistence.teams.save(
        TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active")
    )
    closed = persistence.teams.save(
        TEAM, expected_revision=1, root=active.evolve(lifecycle_status="closed")
    )
    history = persistence.teams.history(TEAM)
    assert [h.revision for h in history] == [0, 1, 2]
    assert [h.value.lifecycle_status for h in history] == ["idle", "active", "closed"]
    assert history[-1].value == closed


def test_workflow_history(persistence: Persistence) -> None:
    for revision in (None, 1, 2):
        persistence.workflow_states.save(
            "wf",
            expected_revision=revision,
            snapshot={"fields": {"step": (revision or 0) + 1}, "phase": f"p{revision}"},
        )
    history = persistence.workflow_states.history("wf")
    assert [h.revision for h in history] == [1, 2, 3]
    assert [h.value["fields"]["step"] for h in history] == [1, 2, 3]
    assert [h.value["phase"] for h in history] == ["pNone", "p1", "p2"]
    assert persistence.workflow_states.history("nothing") == ()


def test_history_is_not_changed_by_failed_writes(persistence: Persistence) -> None:
    root = persistence.agents.create(_root())
    with pytest.raises(perr.ConflictError):
        persistence.agents.save(
            AGENT, expected_revision=3, root=root.evolve().evolve().evolve().evolve()
        )

    def save_then_raise(tx: Repositories) -> None:
        tx.agents.save(AGENT, expected_revision=0, root=root.evolve())
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(save_then_raise)
    assert [h.revision for h in persistence.agents.history(AGENT)] == [0]


def test_empty_journal_append_is_checked_against_the_head(
    persistence: Persistence, agent: AgentRoot
) -> None:
    assert persistence.journals.append(AGENT, expected_position=0, records=[]) == ()
    with pytest.raises(perr.ConflictError):
        persistence.journals.append(AGENT, expected_position=1, records=[])
    assert persistence.journals.head(AGENT) == 0
    assert persistence.journals.read(AGENT, after=5) == ()


def test_a_completed_agent_execution_may_be_reactivated_while_idle(
    persistence: Persistence, agent: AgentRoot
) -> None:
    """Only Team runs refuse reactivation ; Agent executions follow the busy rule."""
    run = persistence.executions.create_active(_run(agent, "exec-1"))
    done = persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    again = persistence.executions.save(
        "exec-1", expected_revision=1, execution=done.evolve(status="active")
    )
    assert again.execution_revision == 2
    assert [e.execution_id for e in persistence.executions.list_active(AGENT)] == ["exec-1"]


# stored data that does not decode ---------------------------------------------------


def test_root_stored_under_another_key_is_a_serialization_error(persistence: Persistence) -> None:
    roots = persistence.backend.view.records("agent.roots")
    roots.insert(key="agent-x", revision=0, attributes={}, record=encode_agent_root(_root()))
    with pytest.raises(perr.SerializationError):
        persistence.agents.load("agent-x")
    roots.insert(key=AGENT, revision=4, attributes={}, record=encode_agent_root(_root()))
    with pytest.raises(perr.SerializationError):
        persistence.agents.load(AGENT)


def test_execution_with_inconsistent_attributes_is_a_serialization_error(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.backend.view.records("agent.executions").insert(
        key="exec-1",
        revision=0,
        attributes={"owner": AGENT, "active": False},  # the run itself is active
        record=encode_agent_execution(_run(agent, "exec-1")),
    )
    with pytest.raises(perr.SerializationError):
        persistence.executions.load("exec-1")
    with pytest.raises(perr.SerializationError):
        persistence.executions.list(AGENT)


def test_journal_entry_at_a_foreign_position_is_a_serialization_error(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.backend.view.streams("agent.journal").append(
        stream=AGENT,
        expected_head=0,
        entries=[AppendEntry("r1", encode_journal_record(_record("r1").with_sequence(5)))],
    )
    with pytest.raises(perr.SerializationError):
        persistence.journals.read(AGENT)


def test_record_of_another_type_is_a_serialization_error(persistence: Persistence) -> None:
    persistence.backend.view.records("workflow.states").insert(
        key="wf", revision=1, attributes={}, record=DurableRecord("phronomy.team_root", "0.1", {})
    )
    with pytest.raises(perr.SerializationError):
        persistence.workflow_states.load("wf")
    persistence.backend.view.records("team.roots").insert(
        key=TEAM, revision=0, attributes={}, record=DurableRecord("phronomy.team_root", "9.9", {})
    )
    with pytest.raises(perr.SerializationError):
        persistence.teams.load(TEAM)


def test_workflow_values_round_trip_exactly(persistence: Persistence) -> None:
    fields = {
        "floats": [0.1, 1e21, 1e-7, -5.5, 123456.789],
        "ints": [0, 2**53 - 1, -(2**53 - 1)],
        "text": "é😀\n\"'\\",
        "nested": {"empty": {}, "list": [], "flags": [True, False, None]},
        "tuple": (1, 2),
    }
    persistence.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": fields, "phase": "p"}
    )
    loaded = persistence.workflow_states.load("wf")
    assert loaded is not None
    assert loaded["snapshot"] == {"fields": {**fields, "tuple": [1, 2]}, "phase": "p"}
    assert type(loaded["snapshot"]["fields"]["ints"][1]) is int
    assert type(loaded["snapshot"]["fields"]["nested"]["flags"][0]) is bool


def test_a_delete_purges_so_a_re_created_root_starts_a_new_history(
    persistence: Persistence,
) -> None:
    root = persistence.agents.create(_root())
    persistence.agents.save(AGENT, expected_revision=0, root=root.evolve())
    persistence.agents.delete(AGENT)
    assert persistence.agents.history(AGENT) == ()
    again = persistence.agents.create(_root())
    history = persistence.agents.history(AGENT)
    assert [h.revision for h in history] == [0]
    assert history[-1].value == again
