"""Every error Persistence raises is catchable by its domain name and by its storage name.

A missing content id is an ``nenjim.infrastructure.storage.NotFoundError`` (the
Storage SPI's name for a missing blob) and a
``nenjim.domain.persistence.errors.NotFoundError`` (the domain's); the same holds
for every category, whichever layer found the failure: a storage error
translated at the boundary, or a repository's own check. Every test runs on
memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure import storage
from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.persistence import CATALOG, Persistence
from nenjim.infrastructure.storage import DurableRecord

AGENT = "agent-1"
TEAM = "team-1"
MISSING_CONTENT = "sha256:" + "0" * 64

# The domain class and the storage class each category must be caught by.
CATEGORIES: dict[str, tuple[type[Exception], type[Exception]]] = {
    "conflict": (perr.ConflictError, storage.ConflictError),
    "not found": (perr.NotFoundError, storage.NotFoundError),
    "serialization": (perr.SerializationError, storage.SerializationError),
    "transaction": (perr.TransactionError, storage.TransactionError),
    "closed": (perr.BackendClosedError, storage.BackendClosedError),
    "unsupported": (perr.UnsupportedBackendError, storage.UnsupportedBackendError),
}


def _caught_by_both(category: str, call: Callable[[], object]) -> BaseException:
    """Run ``call``; its error must be an instance of both classes of ``category``."""
    domain_class, storage_class = CATEGORIES[category]
    with pytest.raises(domain_class) as raised:
        call()
    assert isinstance(raised.value, storage_class), type(raised.value).__mro__
    return raised.value


@pytest.fixture
def seeded(persistence: Persistence) -> Persistence:
    """An Agent with a finished run, a Team, a Workflow and a Handoff at revision 1."""
    root = persistence.agents.create(AgentRoot.create(AGENT, definition_id="a"))
    run = persistence.executions.create_active(
        AgentExecution.start("run-1", agent_id=AGENT, base=root)
    )
    persistence.executions.save(
        "run-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    persistence.teams.create(TeamRoot.create(TEAM, definition_id="t"))
    persistence.workflow_states.save(
        "wf-1", expected_revision=None, snapshot={"fields": {}, "phase": None}
    )
    persistence.handoff_states.save(
        AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    )
    return persistence


def test_a_missing_content_id_is_a_storage_and_a_domain_not_found(
    persistence: Persistence,
) -> None:
    error = _caught_by_both("not found", lambda: persistence.contents.fetch(MISSING_CONTENT))
    assert MISSING_CONTENT in str(error)
    assert isinstance(error.__cause__, storage.NotFoundError)
    for helper in ("fetch_text", "fetch_json"):
        _caught_by_both(
            "not found", lambda h=helper: getattr(persistence.contents, h)(MISSING_CONTENT)
        )
    _caught_by_both("not found", lambda: persistence.contents.fetch_many([MISSING_CONTENT]))


def test_an_unreadable_payload_is_a_storage_and_a_domain_serialization_error(
    persistence: Persistence,
) -> None:
    not_json = persistence.contents.put(b"not json", canonicalization_version=0)
    _caught_by_both("serialization", lambda: persistence.contents.fetch_json(not_json))
    persistence.backend.view.records("agent.roots").insert(
        key=AGENT, revision=0, attributes={}, record=DurableRecord("other.type", "0.1", {})
    )
    error = _caught_by_both("serialization", lambda: persistence.agents.load(AGENT))
    assert "record type" in str(error)


def _not_found_cases() -> dict[str, Callable[[Persistence], object]]:
    ghost_root = AgentRoot.create("ghost", definition_id="a")
    return {
        "agents.load": lambda p: p.agents.load("ghost"),
        "agents.save": lambda p: p.agents.save(
            "ghost", expected_revision=0, root=ghost_root.evolve()
        ),
        "teams.load": lambda p: p.teams.load("ghost"),
        "executions.load": lambda p: p.executions.load("ghost"),
        "executions.create_active of a missing Agent": lambda p: p.executions.create_active(
            AgentExecution.start("run-x", agent_id="ghost", base=ghost_root)
        ),
        "executions.delete_for_agent": lambda p: p.executions.delete_for_agent("ghost"),
        "executions.assert_idle": lambda p: p.executions.assert_idle("ghost"),
        "team_executions.load": lambda p: p.team_executions.load("ghost"),
        "team_executions.create_active of a missing Team": lambda p: (
            p.team_executions.create_active(TeamExecution.start("t-run", team_id="ghost"))
        ),
        "journals.append to a missing Agent": lambda p: p.journals.append(
            "ghost", expected_position=0, records=[]
        ),
        "journals.delete": lambda p: p.journals.delete("ghost"),
        "watermark of a missing Agent": lambda p: p.assert_agent_watermark(
            agent_id="ghost", agent_revision=0, journal_position=0
        ),
        "execution_result": lambda p: p.execution_result("ghost"),
        "team_execution_result": lambda p: p.team_execution_result("ghost"),
        "handoff_result": lambda p: p.handoff_result("ghost"),
    }


@pytest.mark.parametrize("case", list(_not_found_cases()))
def test_every_not_found_is_a_storage_and_a_domain_not_found(
    seeded: Persistence, case: str
) -> None:
    error = _caught_by_both("not found", lambda: _not_found_cases()[case](seeded))
    # Translated once: never a domain error wrapping another domain error.
    assert not isinstance(error.__cause__, perr.PersistenceError)


def _serialization_cases() -> dict[str, Callable[[Persistence], object]]:
    return {
        "agents.create of a non-root": lambda p: p.agents.create("root"),  # type: ignore[arg-type]
        "agents.save under another id": lambda p: p.agents.save(
            AGENT, expected_revision=0, root=AgentRoot.create("other", definition_id="a").evolve()
        ),
        "executions.create_active of a terminal run": lambda p: p.executions.create_active(
            AgentExecution.start("run-2", agent_id=AGENT, base=p.agents.load(AGENT)).evolve(
                status="completed"
            )
        ),
        "journals.append of another Agent's record": lambda p: p.journals.append(
            AGENT,
            expected_position=0,
            records=[AgentJournalRecord.create("r1", agent_id="other", kind="message")],
        ),
        "workflow_states.save of a value outside the domain": lambda p: p.workflow_states.save(
            "wf-2", expected_revision=None, snapshot={"fields": {"x": {1}}, "phase": None}
        ),
        "handoff_states.save under another anchor": lambda p: p.handoff_states.save(
            "other", expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
        ),
        "contents.put_json of NaN": lambda p: p.contents.put_json(float("nan")),
    }


@pytest.mark.parametrize("case", list(_serialization_cases()))
def test_every_serialization_error_is_a_storage_and_a_domain_one(
    seeded: Persistence, case: str
) -> None:
    _caught_by_both("serialization", lambda: _serialization_cases()[case](seeded))


def _conflict_cases() -> dict[str, Callable[[Persistence], object]]:
    return {
        "agents.create duplicate": lambda p: p.agents.create(
            AgentRoot.create(AGENT, definition_id="a")
        ),
        "agents.save stale": lambda p: p.agents.save(
            AGENT, expected_revision=1, root=p.agents.load(AGENT).evolve().evolve()
        ),
        "agents.save skipping a revision": lambda p: p.agents.save(
            AGENT, expected_revision=0, root=p.agents.load(AGENT).evolve().evolve()
        ),
        "teams.create duplicate": lambda p: p.teams.create(
            TeamRoot.create(TEAM, definition_id="t")
        ),
        "executions.save stale": lambda p: p.executions.save(
            "run-1", expected_revision=0, execution=p.executions.load("run-1")
        ),
        "journals.append at a stale position": lambda p: p.journals.append(
            AGENT,
            expected_position=3,
            records=[AgentJournalRecord.create("r1", agent_id=AGENT, kind="message")],
        ),
        "workflow_states.save insert twice": lambda p: p.workflow_states.save(
            "wf-1", expected_revision=None, snapshot={"fields": {}, "phase": None}
        ),
        "workflow_states.save of a missing row": lambda p: p.workflow_states.save(
            "ghost", expected_revision=1, snapshot={"fields": {}, "phase": None}
        ),
        "workflow_states.delete stale": lambda p: p.workflow_states.delete(
            "wf-1", expected_revision=9
        ),
        "handoff_states.save of a missing row": lambda p: p.handoff_states.save(
            "ghost",
            expected_revision=1,
            state=HandoffState.create("ghost", active_agent_id=AGENT).evolve(),
        ),
        "watermark behind": lambda p: p.assert_agent_watermark(
            agent_id=AGENT, agent_revision=5, journal_position=0
        ),
    }


@pytest.mark.parametrize("case", list(_conflict_cases()))
def test_every_conflict_is_a_storage_and_a_domain_conflict(seeded: Persistence, case: str) -> None:
    error = _caught_by_both("conflict", lambda: _conflict_cases()[case](seeded))
    assert not isinstance(error, perr.AgentBusyError)


def test_a_handoff_anchor_mismatch_is_a_state_conflict_and_a_storage_conflict(
    seeded: Persistence,
) -> None:
    root = seeded.agents.load(AGENT)
    run = seeded.executions.create_active(
        AgentExecution.start("run-2", agent_id=AGENT, base=root, metadata={"main_agent_id": "x"})
    )
    seeded.executions.save("run-2", expected_revision=0, execution=run.evolve(status="completed"))
    with pytest.raises(perr.StateConflictError) as raised:
        seeded.handoff_result("run-2", main_agent_id=AGENT)
    assert isinstance(raised.value, storage.ConflictError)


def test_a_failed_scope_is_a_storage_and_a_domain_transaction_error(seeded: Persistence) -> None:
    def use_after_failure(tx: Any) -> None:
        with pytest.raises(perr.ConflictError):
            tx.agents.create(AgentRoot.create(AGENT, definition_id="a"))
        _caught_by_both("transaction", lambda: tx.agents.load(AGENT))

    _caught_by_both("transaction", lambda: seeded.run_in_transaction(use_after_failure))


def test_a_closed_persistence_is_a_storage_and_a_domain_closed_error(seeded: Persistence) -> None:
    seeded.close()
    _caught_by_both("closed", lambda: seeded.agents.load(AGENT))
    _caught_by_both("closed", lambda: seeded.contents.fetch(MISSING_CONTENT))


def test_an_unsupported_backend_is_a_storage_and_a_domain_error() -> None:
    _caught_by_both("unsupported", lambda: Persistence.open("mongodb://localhost/nothing"))
    _caught_by_both("unsupported", lambda: Persistence(InMemoryBackend(CATALOG[:1])))


def test_a_translated_error_crossing_a_second_boundary_keeps_its_identity(
    seeded: Persistence,
) -> None:
    """``execution_result`` reaches content through another entry point: one translation."""
    run = seeded.executions.load("run-1")
    seeded.executions.save(
        "run-1", expected_revision=1, execution=run.evolve(result_ref=MISSING_CONTENT)
    )
    error = _caught_by_both("not found", lambda: seeded.execution_result("run-1"))
    assert type(error.__cause__) is storage.NotFoundError
