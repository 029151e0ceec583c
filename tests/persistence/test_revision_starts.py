"""Where each stored value's revision starts, and that nothing is created anywhere else.

Agent and Team roots and their executions are created at revision 0,
Handoff states and Workflow snapshots at 1, and a journal record takes the
position it is appended at. A value that claims another start is refused
before storage is touched: nothing is written and the caller's transaction
goes on. Every test runs on memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import Persistence, Repositories

AGENT = "agent-1"
TEAM = "team-1"


def _agent(agent_id: str = AGENT) -> AgentRoot:
    return AgentRoot.create(agent_id, definition_id="a")


def _team(team_id: str = TEAM) -> TeamRoot:
    return TeamRoot.create(team_id, definition_id="t")


def _record(record_id: str) -> AgentJournalRecord:
    return AgentJournalRecord.create(record_id, agent_id=AGENT, kind="message")


@pytest.fixture
def owners(persistence: Persistence) -> Persistence:
    """A Persistence holding the Agent ``agent-1`` and the Team ``team-1``."""
    persistence.agents.create(_agent())
    persistence.teams.create(_team())
    return persistence


def _refused_in_a_transaction(
    persistence: Persistence,
    error: type[Exception],
    match: str,
    call: Callable[[Repositories], object],
) -> None:
    """``call`` raises ``error`` and the transaction around it still commits a write."""
    with persistence.transaction() as tx:
        with pytest.raises(error, match=match):
            call(tx)
        tx.workflow_states.save(
            "after", expected_revision=None, snapshot={"fields": {}, "phase": None}
        )
    assert persistence.workflow_states.load("after") is not None


@pytest.mark.parametrize("revision", [1, 2, 2**53 - 1])
def test_an_agent_root_is_created_at_revision_0_only(
    persistence: Persistence, revision: int
) -> None:
    root = AgentRoot(**{**_fields(_agent()), "agent_revision": revision})
    _refused_in_a_transaction(
        persistence,
        perr.ConflictError,
        f"Agent {AGENT}: a new root starts at revision 0, not {revision}",
        lambda tx: tx.agents.create(root),
    )
    with pytest.raises(perr.NotFoundError):
        persistence.agents.load(AGENT)
    assert persistence.agents.history(AGENT) == ()
    assert persistence.agents.create(_agent()).agent_revision == 0


@pytest.mark.parametrize("revision", [1, 2**53 - 1])
def test_a_team_root_is_created_at_revision_0_only(persistence: Persistence, revision: int) -> None:
    root = TeamRoot(**{**_fields(_team()), "team_revision": revision})
    _refused_in_a_transaction(
        persistence,
        perr.ConflictError,
        f"Team {TEAM}: a new root starts at revision 0, not {revision}",
        lambda tx: tx.teams.create(root),
    )
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)
    assert persistence.teams.create(_team()).team_revision == 0


@pytest.mark.parametrize("revision", [1, 2**53 - 1])
def test_an_agent_execution_is_created_at_revision_0_only(
    owners: Persistence, revision: int
) -> None:
    started = AgentExecution.start("run-1", agent_id=AGENT, base=owners.agents.load(AGENT))
    run = AgentExecution(**{**_fields(started), "execution_revision": revision})
    _refused_in_a_transaction(
        owners,
        perr.ConflictError,
        f"Agent execution run-1: a new run starts at revision 0, not {revision}",
        lambda tx: tx.executions.create_active(run),
    )
    with pytest.raises(perr.NotFoundError):
        owners.executions.load("run-1")
    assert owners.executions.list(AGENT) == ()
    assert owners.executions.create_active(started).execution_revision == 0


@pytest.mark.parametrize("revision", [1, 2**53 - 1])
def test_a_team_execution_is_created_at_revision_0_only(owners: Persistence, revision: int) -> None:
    started = TeamExecution.start("team-run-1", team_id=TEAM)
    run = TeamExecution(**{**_fields(started), "execution_revision": revision})
    _refused_in_a_transaction(
        owners,
        perr.ConflictError,
        f"Team execution team-run-1: a new run starts at revision 0, not {revision}",
        lambda tx: tx.team_executions.create_active(run),
    )
    with pytest.raises(perr.NotFoundError):
        owners.team_executions.load("team-run-1")
    assert owners.team_executions.create_active(started).execution_revision == 0


def test_the_refusal_is_caught_by_the_storage_name_too(owners: Persistence) -> None:
    with pytest.raises(storage.ConflictError):
        owners.agents.create(_agent("agent-2").evolve())


@pytest.mark.parametrize("revision", [2, 3])
def test_a_handoff_state_is_inserted_at_revision_1_only(
    persistence: Persistence, revision: int
) -> None:
    state = HandoffState(
        **{
            **_fields(HandoffState.create(AGENT, active_agent_id=AGENT)),
            "handoff_revision": revision,
        }
    )
    _refused_in_a_transaction(
        persistence,
        perr.SerializationError,
        f"handoff state revision {revision} must be 1",
        lambda tx: tx.handoff_states.save(AGENT, expected_revision=None, state=state),
    )
    assert persistence.handoff_states.load(AGENT) is None


def test_a_handoff_state_is_replaced_at_the_next_revision_only(persistence: Persistence) -> None:
    first = persistence.handoff_states.save(
        AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    )
    _refused_in_a_transaction(
        persistence,
        perr.SerializationError,
        "handoff state revision 3 must be 2",
        lambda tx: tx.handoff_states.save(
            AGENT, expected_revision=1, state=first.evolve().evolve()
        ),
    )
    loaded = persistence.handoff_states.load(AGENT)
    assert loaded is not None
    assert loaded.handoff_revision == 1


def test_a_workflow_snapshot_is_inserted_at_revision_1(persistence: Persistence) -> None:
    snapshot = {"fields": {}, "phase": None}
    assert persistence.workflow_states.save("wf", expected_revision=None, snapshot=snapshot) == 1
    assert [r.revision for r in persistence.workflow_states.history("wf")] == [1]


def test_a_journal_record_that_claims_another_position_is_refused(owners: Persistence) -> None:
    owners.journals.append(AGENT, expected_position=0, records=[_record("r1")])
    claims_five = _record("r2").with_sequence(5)
    _refused_in_a_transaction(
        owners,
        perr.ConflictError,
        "journal record r2 carries sequence 5 but would be appended at 2",
        lambda tx: tx.journals.append(AGENT, expected_position=1, records=[claims_five]),
    )
    assert owners.journals.head(AGENT) == 1


def test_a_journal_record_that_claims_its_own_position_is_appended(owners: Persistence) -> None:
    appended = owners.journals.append(
        AGENT, expected_position=0, records=[_record("r1").with_sequence(1), _record("r2")]
    )
    assert [record.sequence for record in appended] == [1, 2]


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}
