"""Erasure: the repositories' deletes of user data purge it, from reads, history and the log.

Each test stores a value holding a unique marker under one key and another
under a key that stays, deletes the first, and checks that it reads back
nowhere (``load``, ``history``, ``read``), that the other is intact, and, on
the SQL stores, that no table (the log ``storage_events`` first) holds the
first marker any more while the second is still found.
"""

from __future__ import annotations

import uuid

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence
from tests.persistence.conftest import Store
from tests.support.erasure import log_holds, tables_holding


class _RolledBackError(Exception):
    """Raised to roll a transaction back."""


def _marker(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex}"


def _erased(store: Store, gone: str, kept: str) -> None:
    """On an SQL store: ``gone`` is in no table, ``kept`` is still in the log."""
    if not store.durable:
        return
    assert not log_holds(store.url, gone)
    assert tables_holding(store.url, gone) == []
    assert log_holds(store.url, kept)


def _agent(persistence: Persistence, agent_id: str, marker: str) -> AgentRoot:
    root = persistence.agents.create(
        AgentRoot.create(agent_id, definition_id="assistant", metadata={"secret": marker})
    )
    return persistence.agents.save(
        agent_id,
        expected_revision=0,
        root=root.evolve(metadata={"secret": marker, "again": True}),
    )


def test_deleting_a_workflow_state_purges_every_snapshot(store: Store) -> None:
    p = store.persistence
    gone, kept = _marker("wf-gone"), _marker("wf-kept")
    for key, marker in (("wf-1", gone), ("wf-2", kept)):
        p.workflow_states.save(
            key, expected_revision=None, snapshot={"fields": {"note": marker}, "phase": None}
        )
        p.workflow_states.save(
            key, expected_revision=1, snapshot={"fields": {"note": marker, "n": 2}, "phase": None}
        )

    p.workflow_states.delete("wf-1", expected_revision=2)

    assert p.workflow_states.load("wf-1") is None
    assert p.workflow_states.history("wf-1") == ()
    assert len(p.workflow_states.history("wf-2")) == 2
    _erased(store, gone, kept)


def test_a_workflow_delete_at_a_wrong_revision_erases_nothing(store: Store) -> None:
    p = store.persistence
    marker = _marker("wf")
    p.workflow_states.save(
        "wf-1", expected_revision=None, snapshot={"fields": {"note": marker}, "phase": None}
    )

    with pytest.raises(perr.ConflictError):
        p.workflow_states.delete("wf-1", expected_revision=5)

    assert len(p.workflow_states.history("wf-1")) == 1
    if store.durable:
        assert log_holds(store.url, marker)


def test_deleting_a_handoff_state_purges_it(store: Store) -> None:
    p = store.persistence
    gone, kept = _marker("handoff-gone"), _marker("handoff-kept")
    for main, marker in (("main-1", gone), ("main-2", kept)):
        p.handoff_states.save(
            main,
            expected_revision=None,
            state=HandoffState.create(main, active_agent_id=main, metadata={"secret": marker}),
        )

    p.handoff_states.delete("main-1", expected_revision=1)

    assert p.handoff_states.load("main-1") is None
    assert p.backend.view.records("handoff.states").history("main-1") == ()
    assert p.handoff_states.load("main-2") is not None
    _erased(store, gone, kept)


def test_deleting_an_agent_with_its_runs_and_journal_purges_them_all(store: Store) -> None:
    p = store.persistence
    gone, kept = _marker("agent-gone"), _marker("agent-kept")
    for agent_id, marker in (("a1", gone), ("a2", kept)):
        root = _agent(p, agent_id, marker)
        run = p.executions.create_active(
            AgentExecution.start(
                f"{agent_id}-run", agent_id=agent_id, base=root, metadata={"secret": marker}
            )
        )
        p.executions.save(
            run.execution_id,
            expected_revision=0,
            execution=run.evolve(status="completed", metadata={"secret": marker, "done": True}),
        )
        p.journals.append(
            agent_id,
            expected_position=0,
            records=[
                AgentJournalRecord.create(
                    f"{agent_id}-r{n}", agent_id=agent_id, kind="message", metadata={"m": marker}
                )
                for n in range(3)
            ],
        )

    with p.transaction() as tx:  # children first: they are guarded by the root
        tx.executions.delete_for_agent("a1")
        tx.journals.delete("a1")
        tx.agents.delete("a1")

    with pytest.raises(perr.NotFoundError):
        p.agents.load("a1")
    assert p.agents.history("a1") == ()
    assert p.executions.history("a1-run") == ()
    assert p.executions.list("a1") == ()
    assert p.journals.read("a1") == ()
    assert p.journals.head("a1") == 0
    assert len(p.agents.history("a2")) == 2
    assert len(p.executions.history("a2-run")) == 2
    assert len(p.journals.read("a2")) == 3
    _erased(store, gone, kept)


def test_deleting_one_execution_purges_only_it(store: Store) -> None:
    p = store.persistence
    gone, kept = _marker("run-gone"), _marker("run-kept")
    root = _agent(p, "a1", "agent")
    for run_id, marker in (("run-1", gone), ("run-2", kept)):
        run = p.executions.create_active(
            AgentExecution.start(run_id, agent_id="a1", base=root, metadata={"secret": marker})
        )
        p.executions.save(run_id, expected_revision=0, execution=run.evolve(status="completed"))

    p.executions.delete("run-1")

    with pytest.raises(perr.NotFoundError):
        p.executions.load("run-1")
    assert p.executions.history("run-1") == ()
    assert [run.execution_id for run in p.executions.list("a1")] == ["run-2"]
    _erased(store, gone, kept)


def test_deleting_a_team_with_its_runs_purges_them(store: Store) -> None:
    p = store.persistence
    gone, kept = _marker("team-gone"), _marker("team-kept")
    for team_id, marker in (("t1", gone), ("t2", kept)):
        p.teams.create(TeamRoot.create(team_id, definition_id="crew", metadata={"s": marker}))
        p.team_executions.create_active(
            TeamExecution.start(f"{team_id}-run", team_id=team_id, metadata={"s": marker})
        )

    with p.transaction() as tx:
        tx.team_executions.delete_for_team("t1")
        tx.teams.delete("t1")

    assert p.teams.history("t1") == ()
    assert p.team_executions.history("t1-run") == ()
    assert len(p.team_executions.history("t2-run")) == 1
    _erased(store, gone, kept)


def test_deleting_content_erases_its_bytes(store: Store) -> None:
    p = store.persistence
    gone, kept = _marker("content-gone"), _marker("content-kept")
    erased, stays = p.contents.put_text(gone), p.contents.put_text(kept)

    p.contents.delete(erased)
    p.contents.delete(erased)  # idempotent

    assert not p.contents.exists(erased)
    with pytest.raises(perr.NotFoundError):
        p.contents.fetch(erased)
    assert p.contents.fetch_text(stays) == kept
    _erased(store, gone, kept)
    assert p.contents.put_text(gone) == erased  # stored anew
    assert p.contents.fetch_text(erased) == gone


def test_a_purge_in_a_rolled_back_transaction_erases_nothing(store: Store) -> None:
    p = store.persistence
    marker = _marker("rolled-back")
    p.workflow_states.save(
        "wf-1", expected_revision=None, snapshot={"fields": {"note": marker}, "phase": None}
    )

    def delete_then_fail() -> None:
        with p.transaction() as tx:
            tx.workflow_states.delete("wf-1", expected_revision=1)
            raise _RolledBackError

    with pytest.raises(_RolledBackError):
        delete_then_fail()

    assert len(p.workflow_states.history("wf-1")) == 1
    if store.durable:
        assert log_holds(store.url, marker)
