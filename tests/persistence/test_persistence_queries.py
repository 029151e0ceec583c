"""Read-only result queries of ``Persistence`` (paged, ordered, and never writing).

``execution_result``, ``team_execution_result`` and ``handoff_result`` on every backend.
"""

from __future__ import annotations

import pytest

from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence

AGENT = "agent-1"


@pytest.fixture
def root(persistence: Persistence) -> AgentRoot:
    return persistence.agents.create(AgentRoot.create(AGENT, definition_id="assistant"))


def test_execution_result_before_and_after_the_refs_exist(
    persistence: Persistence, root: AgentRoot
) -> None:
    run = persistence.executions.create_active(
        AgentExecution.start("exec-1", agent_id=AGENT, base=root)
    )
    pending = persistence.execution_result("exec-1")
    assert dict(pending) == {
        "execution_id": "exec-1",
        "agent_id": AGENT,
        "status": "preparing",
        "phase": "preparing",
        "result_ref": None,
        "error_ref": None,
        "result": None,
        "error": None,
    }
    result_ref = persistence.contents.put_text("the answer")
    error_ref = persistence.contents.put_json({"code": 7})
    persistence.executions.save(
        "exec-1",
        expected_revision=0,
        execution=run.evolve(
            status="completed", phase="done", result_ref=result_ref, error_ref=error_ref
        ),
    )
    done = persistence.execution_result("exec-1")
    assert (done["status"], done["phase"]) == ("completed", "done")
    assert (done["result"], done["error"]) == ("the answer", {"code": 7})
    assert (done["result_ref"], done["error_ref"]) == (result_ref, error_ref)
    with pytest.raises(TypeError):
        done["status"] = "changed"  # type: ignore[index]


def test_execution_result_of_a_missing_execution_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.execution_result("ghost")


def test_execution_result_with_a_missing_content_ref_is_not_found(
    persistence: Persistence, root: AgentRoot
) -> None:
    run = persistence.executions.create_active(
        AgentExecution.start("exec-1", agent_id=AGENT, base=root)
    )
    persistence.executions.save(
        "exec-1",
        expected_revision=0,
        execution=run.evolve(status="completed", result_ref="sha256:" + "0" * 64),
    )
    with pytest.raises(perr.NotFoundError):
        persistence.execution_result("exec-1")


def test_team_execution_result_is_json(persistence: Persistence) -> None:
    persistence.teams.create(TeamRoot.create("team-1", definition_id="crew"))
    run = persistence.team_executions.create_active(TeamExecution.start("run-1", team_id="team-1"))
    assert persistence.team_execution_result("run-1")["result"] is None
    result_ref = persistence.contents.put_json({"answers": [1, 2]})
    persistence.team_executions.save(
        "run-1",
        expected_revision=0,
        execution=run.evolve(status="completed", result_ref=result_ref),
    )
    result = persistence.team_execution_result("run-1")
    assert result["team_execution_id"] == "run-1"
    assert result["team_id"] == "team-1"
    assert result["status"] == "completed"
    assert result["result"] == {"answers": [1, 2]}
    assert result["error"] is None


def _handed_off(
    persistence: Persistence, execution_id: str, agent_id: str, target: str, **metadata: str
) -> None:
    root = persistence.agents.load(agent_id)
    run = persistence.executions.create_active(
        AgentExecution.start(
            execution_id,
            agent_id=agent_id,
            base=root,
            metadata={"main_agent_id": AGENT, "handoff_target_execution_id": target, **metadata},
        )
    )
    persistence.executions.save(
        execution_id, expected_revision=0, execution=run.evolve(status="completed")
    )


def test_handoff_result_follows_the_chain(persistence: Persistence, root: AgentRoot) -> None:
    helper = persistence.agents.create(AgentRoot.create("agent-2", definition_id="helper"))
    _handed_off(persistence, "exec-1", AGENT, "exec-2")
    final = persistence.executions.create_active(
        AgentExecution.start(
            "exec-2", agent_id="agent-2", base=helper, metadata={"main_agent_id": AGENT}
        )
    )
    answer = persistence.contents.put_text("final answer")
    persistence.executions.save(
        "exec-2",
        expected_revision=0,
        execution=final.evolve(status="completed", result_ref=answer),
    )
    result = persistence.handoff_result("exec-1", main_agent_id=AGENT)
    assert result["execution_id"] == "exec-2"
    assert result["agent_id"] == "agent-2"
    assert result["result"] == "final answer"
    with pytest.raises(perr.StateConflictError):
        persistence.handoff_result("exec-1", main_agent_id="another-main-agent")


def test_handoff_result_of_a_reserved_target(persistence: Persistence, root: AgentRoot) -> None:
    _handed_off(persistence, "exec-1", AGENT, "exec-pending")
    pending = persistence.handoff_result("exec-1")
    assert (pending["execution_id"], pending["status"], pending["phase"]) == (
        "exec-pending",
        "active",
        "target_pending",
    )
    assert pending["reserved"] is True


def test_handoff_result_of_a_cancelled_reservation(
    persistence: Persistence, root: AgentRoot
) -> None:
    _handed_off(persistence, "exec-1", AGENT, "exec-never", handoff_reservation="cancelled")
    cancelled = persistence.handoff_result("exec-1")
    assert cancelled["status"] == "cancelled"
    assert cancelled["reserved"] is True


def test_handoff_result_cycle_is_a_serialization_error(
    persistence: Persistence, root: AgentRoot
) -> None:
    _handed_off(persistence, "exec-1", AGENT, "exec-2")
    _handed_off(persistence, "exec-2", AGENT, "exec-1")
    with pytest.raises(perr.SerializationError):
        persistence.handoff_result("exec-1")


@pytest.mark.parametrize("field", ["result_ref", "error_ref"])
def test_an_execution_result_whose_stored_ref_is_no_content_id_is_a_serialization_error(
    persistence: Persistence, root: AgentRoot, field: str
) -> None:
    run = persistence.executions.create_active(
        AgentExecution.start("exec-1", agent_id=AGENT, base=root)
    )
    changes: dict[str, str] = {field: "not-a-content-id"}
    persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="completed", **changes)
    )
    with pytest.raises(perr.SerializationError, match=f"exec-1: stored {field} 'not-a-content-id'"):
        persistence.execution_result("exec-1")
    with pytest.raises(perr.SerializationError, match=f"exec-1: stored {field}"):
        persistence.handoff_result("exec-1")


@pytest.mark.parametrize("field", ["result_ref", "error_ref"])
def test_a_team_result_whose_stored_ref_is_no_content_id_is_a_serialization_error(
    persistence: Persistence, field: str
) -> None:
    persistence.teams.create(TeamRoot.create("team-1", definition_id="crew"))
    run = persistence.team_executions.create_active(TeamExecution.start("run-1", team_id="team-1"))
    changes: dict[str, str] = {field: "sha256:ABC"}
    persistence.team_executions.save(
        "run-1", expected_revision=0, execution=run.evolve(status="failed", **changes)
    )
    with pytest.raises(perr.SerializationError, match=f"run-1: stored {field} 'sha256:ABC'"):
        persistence.team_execution_result("run-1")
