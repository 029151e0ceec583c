"""Durable state with a history worth replaying, written through domain Persistence."""

from __future__ import annotations

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence, Repositories


class RolledBackError(Exception):
    """Raised to make a transaction roll back."""


def live_a_busy_life(p: Persistence) -> None:
    """A busy life across all eight resources: creates, CAS saves, deletes, re-inserts,
    journal restarts, blobs, a rolled-back transaction and refused writes."""
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
