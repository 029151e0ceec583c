"""Transactions across repositories and durability at the domain level, and what a SQL
backend coordinating several processes must guarantee.

The rollback, savepoint and pagination tests run on memory, SQLite and PostgreSQL; the
durability tests reopen the same SQLite file or PostgreSQL schema in a fresh
``Persistence``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence, Repositories
from nenjim.infrastructure.storage import DurableRecord
from nenjim.infrastructure.storage.sql import records

AGENT = "agent-1"
TEAM = "team-1"

QUOTED_IDS = ['"double"', "'single'", "100%", "?", "back\\slash", "it's", "o''brien", "x'); --"]


def _root(agent_id: str = AGENT) -> AgentRoot:
    return AgentRoot.create(agent_id, definition_id="assistant")


def _team(team_id: str = TEAM) -> TeamRoot:
    return TeamRoot.create(team_id, definition_id="crew")


def _team_run(run_id: str, team_id: str = TEAM) -> TeamExecution:
    return TeamExecution.start(run_id, team_id=team_id)


def _handoff(active: str = "agent-2") -> HandoffState:
    return HandoffState.create(AGENT, active_agent_id=active)


def _put_then(text: str, attempt: Callable[[Any], object]) -> Callable[[Repositories], object]:
    """A transaction body: store ``text``, then make ``attempt``."""

    def body(tx: Repositories) -> object:
        tx.contents.put_text(text)
        return attempt(tx)

    return body


def _text_id(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class RolledBackError(Exception):
    """Raised by a test to make its transaction roll back."""


# Team, TeamExecution and Handoff roll back together -------------------------------


def test_coordination_writes_roll_back_together(persistence: Persistence) -> None:
    team = persistence.teams.create(_team())

    def write_then_raise(tx: Repositories) -> None:
        tx.teams.save(TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active"))
        tx.team_executions.create_active(_team_run("run-1"))
        tx.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
        assert tx.teams.load(TEAM).team_revision == 1
        assert tx.handoff_states.load(AGENT) is not None
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(write_then_raise)
    assert persistence.teams.load(TEAM) == team
    assert persistence.team_executions.list(TEAM) == ()
    assert persistence.team_executions.assert_idle(TEAM)
    assert persistence.handoff_states.load(AGENT) is None


def test_coordination_writes_commit_together(persistence: Persistence) -> None:
    team = persistence.teams.create(_team())
    with persistence.transaction() as tx:
        tx.teams.save(TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active"))
        tx.team_executions.create_active(_team_run("run-1"))
        tx.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
    assert persistence.teams.load(TEAM).lifecycle_status == "active"
    assert [r.team_execution_id for r in persistence.team_executions.list_active(TEAM)] == ["run-1"]
    handoff = persistence.handoff_states.load(AGENT)
    assert handoff is not None
    assert handoff.active_agent_id == "agent-2"


# expected duplicates in inner savepoints ----------------------------------------------


def test_outer_transaction_continues_after_duplicates_in_savepoints(
    persistence: Persistence,
) -> None:
    persistence.teams.create(_team())
    persistence.team_executions.create_active(_team_run("run-1"))
    persistence.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
    persistence.agents.create(_root())

    attempts: list[tuple[Callable[[Any], object], type[BaseException]]] = [
        (lambda tx: tx.teams.create(_team()), perr.ConflictError),
        (lambda tx: tx.team_executions.create_active(_team_run("run-1")), perr.ConflictError),
        (lambda tx: tx.team_executions.create_active(_team_run("run-2")), perr.AgentBusyError),
        (
            lambda tx: tx.handoff_states.save(AGENT, expected_revision=None, state=_handoff()),
            perr.ConflictError,
        ),
        (lambda tx: tx.agents.create(_root()), perr.ConflictError),
        (
            lambda tx: tx.journals.append(
                AGENT,
                expected_position=1,
                records=[AgentJournalRecord.create("j1", agent_id=AGENT, kind="message")],
            ),
            perr.ConflictError,
        ),
    ]
    with persistence.transaction() as tx:
        before = tx.contents.put_text("outer before")
        tx.journals.append(
            AGENT,
            expected_position=0,
            records=[AgentJournalRecord.create("j1", agent_id=AGENT, kind="message")],
        )
        for attempt, expected in attempts:
            with pytest.raises(expected):
                persistence.run_in_transaction(_put_then(f"inner {expected.__name__}", attempt))
        tx.teams.create(_team("team-2"))
        tx.team_executions.create_active(_team_run("run-9", "team-2"))
        after = tx.contents.put_text("outer after")

    assert persistence.contents.exists(before)
    assert persistence.contents.exists(after)
    for _, expected in attempts:
        assert not persistence.contents.exists(_text_id(f"inner {expected.__name__}"))
    assert persistence.teams.load("team-2").team_revision == 0
    assert [r.team_execution_id for r in persistence.team_executions.list("team-2")] == ["run-9"]
    assert [r.team_execution_id for r in persistence.team_executions.list(TEAM)] == ["run-1"]
    assert persistence.journals.head(AGENT) == 1


def test_inner_savepoint_writes_are_rolled_back_with_the_inner_error(
    persistence: Persistence,
) -> None:
    persistence.teams.create(_team())
    with persistence.transaction() as tx:
        error = None
        try:
            with persistence.transaction() as inner:
                inner_content = inner.contents.put_text("inner only")
                inner.workflow_states.save(
                    "wf-inner", expected_revision=None, snapshot={"fields": {}, "phase": None}
                )
                inner.teams.create(_team())
        except perr.ConflictError as caught:
            error = caught
        assert isinstance(error, perr.ConflictError)
        assert not tx.contents.exists(inner_content)
        assert tx.workflow_states.load("wf-inner") is None
        tx.workflow_states.save(
            "wf-outer", expected_revision=None, snapshot={"fields": {}, "phase": None}
        )
    assert persistence.workflow_states.load("wf-inner") is None
    assert persistence.workflow_states.load("wf-outer") is not None
    assert not persistence.contents.exists(inner_content)


def test_inner_error_object_is_reraised_unchanged(persistence: Persistence) -> None:
    error = RolledBackError("inner")

    def fail(inner: Repositories) -> None:
        raise error

    with persistence.transaction() as tx:
        tx.contents.put_text("outer")
        with pytest.raises(RolledBackError) as raised:
            persistence.run_in_transaction(fail)
        assert raised.value is error
    assert persistence.contents.exists(_text_id("outer"))


def test_successful_inner_scope_rolls_back_with_a_failed_outer(persistence: Persistence) -> None:
    def inner_commits_then_outer_raises(tx: Repositories) -> None:
        with persistence.transaction() as inner:
            inner.teams.create(_team())
        assert tx.teams.load(TEAM).team_id == TEAM
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(inner_commits_then_outer_raises)
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)


def test_uncaught_inner_error_rolls_back_both_scopes(persistence: Persistence) -> None:
    def inner_fails_uncaught(tx: Repositories) -> None:
        tx.teams.create(_team())
        with persistence.transaction() as inner:
            inner.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
            inner.teams.create(_team())

    with pytest.raises(perr.ConflictError):
        persistence.run_in_transaction(inner_fails_uncaught)
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)
    assert persistence.handoff_states.load(AGENT) is None


def test_expected_failure_caught_in_the_same_scope_poisons_it(persistence: Persistence) -> None:
    persistence.teams.create(_team())

    def swallow_a_failure(tx: Repositories) -> None:
        tx.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
        with pytest.raises(perr.ConflictError):
            tx.teams.create(_team())
        with pytest.raises(perr.TransactionError):
            tx.teams.load(TEAM)
        with pytest.raises(perr.TransactionError):  # no savepoint inside a failed scope
            persistence.run_in_transaction(lambda inner: None)

    with pytest.raises(perr.TransactionError):
        persistence.run_in_transaction(swallow_a_failure)
    assert persistence.handoff_states.load(AGENT) is None


def test_validation_errors_do_not_poison_the_scope(persistence: Persistence) -> None:
    persistence.agents.create(_root())
    with persistence.transaction() as tx:
        with pytest.raises(perr.SerializationError):
            tx.journals.append(
                AGENT,
                expected_position=0,
                records=[AgentJournalRecord.create("x", agent_id="someone-else", kind="message")],
            )
        with pytest.raises(perr.ConflictError):  # revision not advancing by one: pre-physical
            tx.agents.save(AGENT, expected_revision=0, root=_root())
        with pytest.raises((ValueError, TypeError)):
            tx.executions.list(AGENT, limit=0)
        assert tx.workflow_states.load("missing") is None
        with pytest.raises(perr.NotFoundError):
            tx.agents.load("missing")  # NotFound after a successful read
        tx.teams.create(_team())
    assert persistence.teams.load(TEAM).team_id == TEAM


def test_root_repositories_join_the_open_transaction(persistence: Persistence) -> None:
    def use_root_repositories(tx: Repositories) -> None:
        persistence.teams.create(_team())
        persistence.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
        assert tx.teams.load(TEAM).team_id == TEAM
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(use_root_repositories)
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)
    assert persistence.handoff_states.load(AGENT) is None


def test_a_retained_transaction_view_expires(persistence: Persistence) -> None:
    with persistence.transaction() as committed:
        committed.teams.create(_team())
    with pytest.raises(perr.TransactionError):
        committed.teams.load(TEAM)
    retained: list[Repositories] = []

    def retain_then_raise(tx: Repositories) -> None:
        retained.append(tx)
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(retain_then_raise)
    (rolled_back,) = retained
    with pytest.raises(perr.TransactionError):
        rolled_back.handoff_states.load(AGENT)
    with pytest.raises(perr.TransactionError):
        committed.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=0)
    assert persistence.teams.load(TEAM).team_id == TEAM


def test_a_transaction_view_is_bound_to_its_thread(persistence: Persistence) -> None:
    persistence.teams.create(_team())
    outcome: list[BaseException | object] = []
    with persistence.transaction() as tx:

        def use_elsewhere() -> None:
            try:
                outcome.append(tx.teams.load(TEAM))
            except BaseException as error:
                outcome.append(error)

        worker = threading.Thread(target=use_elsewhere)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive()
        assert tx.teams.load(TEAM).team_id == TEAM
    assert len(outcome) == 1
    assert isinstance(outcome[0], perr.TransactionError)


# cursor pagination with quote characters -------------------------------------------------


def test_team_run_cursor_pagination_with_quotes_in_ids(persistence: Persistence) -> None:
    persistence.teams.create(_team())
    with persistence.transaction() as tx:
        for run_id in reversed(QUOTED_IDS):
            run = tx.team_executions.create_active(_team_run(run_id))
            tx.team_executions.save(
                run_id, expected_revision=0, execution=run.evolve(status="completed")
            )
    expected = sorted(QUOTED_IDS, key=lambda s: s.encode())
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = persistence.list_team_executions(TEAM, after=cursor, limit=2)
        if not page:
            break
        seen.extend(r.team_execution_id for r in page)
        cursor = page[-1].team_execution_id
    assert seen == expected
    for index, run_id in enumerate(expected):
        following = persistence.team_executions.list(TEAM, after=run_id)
        assert [r.team_execution_id for r in following] == expected[index + 1 :]
        assert persistence.team_executions.load(run_id).team_execution_id == run_id


def test_agent_execution_cursor_pagination_with_quotes_in_ids(persistence: Persistence) -> None:
    root = persistence.agents.create(_root("o'agent"))
    with persistence.transaction() as tx:
        for execution_id in QUOTED_IDS:
            run = tx.executions.create_active(
                AgentExecution.start(execution_id, agent_id="o'agent", base=root)
            )
            tx.executions.save(
                execution_id, expected_revision=0, execution=run.evolve(status="failed")
            )
    expected = sorted(QUOTED_IDS, key=lambda s: s.encode())
    first = persistence.list_executions("o'agent", limit=3)
    rest = persistence.list_executions("o'agent", after=first[-1].execution_id)
    assert [e.execution_id for e in first + rest] == expected
    assert persistence.list_executions("o'agent'") == ()


# durability: a fresh backend on the same database ------------------------------------------


def _write_all_eight(persistence: Repositories) -> dict[str, Any]:
    content = persistence.contents.put(b"\x00binary\xff", canonicalization_version=3)
    root = persistence.agents.create(_root())
    root = persistence.agents.save(AGENT, expected_revision=0, root=root.evolve(journal_position=2))
    journal = persistence.journals.append(
        AGENT,
        expected_position=0,
        records=[
            AgentJournalRecord.create("j1", agent_id=AGENT, kind="message", content_ref=content),
            AgentJournalRecord.create("j2", agent_id=AGENT, kind="tool_call", role="assistant"),
        ],
    )
    run = persistence.executions.create_active(
        AgentExecution.start("exec-1", agent_id=AGENT, base=root)
    )
    run = persistence.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="active")
    )
    persistence.workflow_states.save(
        "wf-1", expected_revision=None, snapshot={"fields": {"n": [1, 2.5, None]}, "phase": "a"}
    )
    persistence.workflow_states.save(
        "wf-1", expected_revision=1, snapshot={"fields": {"n": [3]}, "phase": "b"}
    )
    handoff = persistence.handoff_states.save(AGENT, expected_revision=None, state=_handoff())
    team = persistence.teams.create(_team())
    team_run = persistence.team_executions.create_active(_team_run("run-1"))
    team_run = persistence.team_executions.save(
        "run-1", expected_revision=0, execution=team_run.evolve(status="completed")
    )
    return {
        "content": content,
        "root": root,
        "journal": journal,
        "run": run,
        "handoff": handoff,
        "team": team,
        "team_run": team_run,
    }


def test_all_eight_repositories_reload_after_a_fresh_backend(durable_store: Any) -> None:
    written = _write_all_eight(durable_store.persistence)
    fresh = durable_store.reopen()
    assert fresh.contents.fetch(written["content"]) == b"\x00binary\xff"
    assert fresh.agents.load(AGENT) == written["root"]
    assert fresh.journals.read(AGENT) == written["journal"]
    assert fresh.journals.head(AGENT) == 2
    assert fresh.executions.load("exec-1") == written["run"]
    assert [e.execution_id for e in fresh.executions.list_active(AGENT)] == ["exec-1"]
    workflow = fresh.workflow_states.load("wf-1")
    assert workflow is not None
    assert (workflow["revision"], workflow["snapshot"]) == (2, {"fields": {"n": [3]}, "phase": "b"})
    assert fresh.handoff_states.load(AGENT) == written["handoff"]
    assert fresh.teams.load(TEAM) == written["team"]
    assert fresh.team_executions.load("run-1") == written["team_run"]
    assert fresh.assert_agent_watermark(agent_id=AGENT, agent_revision=1, journal_position=2)
    # The reopened store keeps enforcing its rules.
    with pytest.raises(perr.AgentBusyError):
        fresh.executions.create_active(
            AgentExecution.start("exec-2", agent_id=AGENT, base=written["root"])
        )
    with pytest.raises(perr.ConflictError):
        fresh.handoff_states.save(AGENT, expected_revision=None, state=_handoff())


def test_coordination_repositories_survive_a_fresh_backend(durable_store: Any) -> None:
    p = durable_store.persistence
    team = p.teams.create(_team())
    run = p.team_executions.create_active(_team_run("run-1"))
    p.handoff_states.save(AGENT, expected_revision=None, state=_handoff())

    fresh = durable_store.reopen()
    saved = fresh.teams.save(TEAM, expected_revision=0, root=team.evolve(lifecycle_status="active"))
    with pytest.raises(perr.AgentBusyError):
        fresh.team_executions.create_active(_team_run("run-2"))
    fresh.team_executions.save(
        "run-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    state = fresh.handoff_states.load(AGENT)
    assert state is not None
    fresh.handoff_states.save(AGENT, expected_revision=1, state=state.evolve(active_agent_id=AGENT))

    again = durable_store.reopen()
    assert again.teams.load(TEAM) == saved
    assert again.team_executions.assert_idle(TEAM)
    assert [r.status for r in again.team_executions.list(TEAM)] == ["completed"]
    reloaded = again.handoff_states.load(AGENT)
    assert reloaded is not None
    assert (reloaded.handoff_revision, reloaded.active_agent_id) == (2, AGENT)
    with pytest.raises(perr.ConflictError):
        again.handoff_states.delete(AGENT, expected_revision=1)
    again.handoff_states.delete(AGENT, expected_revision=2)
    assert durable_store.reopen().handoff_states.load(AGENT) is None


def test_history_survives_a_fresh_backend(durable_store: Any) -> None:
    p = durable_store.persistence
    root = p.agents.create(_root())
    one = p.agents.save(AGENT, expected_revision=0, root=root.evolve(lifecycle_status="active"))
    run = p.executions.create_active(AgentExecution.start("exec-1", agent_id=AGENT, base=one))
    done = p.executions.save(
        "exec-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    team = p.teams.create(_team())
    team_one = p.teams.save(TEAM, expected_revision=0, root=team.evolve(lifecycle_status="closed"))
    p.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {"s": 1}, "phase": None}
    )
    p.workflow_states.save("wf", expected_revision=1, snapshot={"fields": {"s": 2}, "phase": None})

    fresh = durable_store.reopen()
    assert [(h.revision, h.value) for h in fresh.agents.history(AGENT)] == [(0, root), (1, one)]
    assert [(h.revision, h.value) for h in fresh.executions.history("exec-1")] == [
        (0, run),
        (1, done),
    ]
    assert [(h.revision, h.value) for h in fresh.teams.history(TEAM)] == [
        (0, team),
        (1, team_one),
    ]
    assert [(h.revision, h.value["fields"]["s"]) for h in fresh.workflow_states.history("wf")] == [
        (1, 1),
        (2, 2),
    ]


def test_a_rolled_back_transaction_leaves_nothing_durable(durable_store: Any) -> None:
    p = durable_store.persistence

    def write_then_raise(tx: Repositories) -> None:
        _write_all_eight(tx)
        raise RolledBackError

    with pytest.raises(RolledBackError):
        p.run_in_transaction(write_then_raise)
    fresh = durable_store.reopen()
    with pytest.raises(perr.NotFoundError):
        fresh.agents.load(AGENT)
    with pytest.raises(perr.NotFoundError):
        fresh.teams.load(TEAM)
    assert fresh.agents.history(AGENT) == ()
    assert fresh.workflow_states.load("wf-1") is None
    assert fresh.handoff_states.load(AGENT) is None
    assert not fresh.contents.exists("sha256:" + hashlib.sha256(b"\x00binary\xff").hexdigest())


# BaseException and generator exits roll back ----------------------------------------------


def test_system_exit_rolls_back_and_propagates_unchanged(persistence: Persistence) -> None:
    error = SystemExit(3)

    def create_then_exit(tx: Repositories) -> None:
        tx.teams.create(_team())
        raise error

    with pytest.raises(SystemExit) as raised:
        persistence.run_in_transaction(create_then_exit)
    assert raised.value is error
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)


def test_closing_a_generator_that_holds_a_transaction_rolls_back(
    persistence: Persistence,
) -> None:
    def writer() -> Any:
        with persistence.transaction() as tx:
            tx.teams.create(_team())
            yield "written"
            tx.teams.create(_team("team-never"))

    generator = writer()
    assert next(generator) == "written"
    generator.close()
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load(TEAM)
    with pytest.raises(perr.NotFoundError):
        persistence.teams.load("team-never")
    persistence.teams.create(_team())  # the thread's scope stack is clean again
    assert persistence.teams.load(TEAM).team_revision == 0


# two writers at once -------------------------------------------------------------------------


def _race(*calls: Callable[[], object]) -> list[object]:
    """Run ``calls`` on threads released together; each outcome is a value or an error."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[object] = [None] * len(calls)

    def run(index: int, call: Callable[[], object]) -> None:
        barrier.wait(timeout=30)
        try:
            outcomes[index] = call()
        except BaseException as error:
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    return outcomes


def test_two_concurrent_team_admissions_admit_exactly_one(persistence: Persistence) -> None:
    persistence.teams.create(_team())

    def admit(run_id: str) -> Callable[[], object]:
        def call() -> object:
            with persistence.transaction() as tx:
                return tx.team_executions.create_active(_team_run(run_id))

        return call

    outcomes = _race(admit("run-a"), admit("run-b"))
    admitted = [o for o in outcomes if isinstance(o, TeamExecution)]
    refused = [o for o in outcomes if isinstance(o, perr.AgentBusyError)]
    assert (len(admitted), len(refused)) == (1, 1), outcomes
    winner = admitted[0].team_execution_id
    assert [r.team_execution_id for r in persistence.team_executions.list(TEAM)] == [winner]
    with pytest.raises(perr.ConflictError):
        persistence.team_executions.create_active(_team_run(winner))
    with pytest.raises(perr.AgentBusyError):
        persistence.team_executions.assert_idle(TEAM)


def test_two_concurrent_team_cas_writers_exactly_one_wins(persistence: Persistence) -> None:
    team = persistence.teams.create(_team())

    def save(status: str) -> Callable[[], object]:
        return lambda: persistence.teams.save(
            TEAM, expected_revision=0, root=team.evolve(lifecycle_status=status)
        )

    outcomes = _race(save("active"), save("closed"))
    saved = [o for o in outcomes if isinstance(o, TeamRoot)]
    conflicts = [o for o in outcomes if isinstance(o, perr.ConflictError)]
    assert (len(saved), len(conflicts)) == (1, 1), outcomes
    assert persistence.teams.load(TEAM) == saved[0]


def test_two_concurrent_workflow_cas_writers_exactly_one_wins(persistence: Persistence) -> None:
    persistence.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
    )

    def save(phase: str) -> Callable[[], object]:
        return lambda: persistence.workflow_states.save(
            "wf", expected_revision=1, snapshot={"fields": {}, "phase": phase}
        )

    outcomes = _race(save("a"), save("b"))
    assert sorted(type(o).__name__ for o in outcomes) == ["ConflictError", "int"], outcomes
    loaded = persistence.workflow_states.load("wf")
    assert loaded is not None
    assert loaded["revision"] == 2


def test_two_concurrent_journal_appends_at_one_position_exactly_one_wins(
    persistence: Persistence,
) -> None:
    persistence.agents.create(_root())

    def append(record_id: str) -> Callable[[], object]:
        return lambda: persistence.journals.append(
            AGENT,
            expected_position=0,
            records=[AgentJournalRecord.create(record_id, agent_id=AGENT, kind="message")],
        )

    outcomes = _race(append("r-a"), append("r-b"))
    appended = [o for o in outcomes if isinstance(o, tuple)]
    conflicts = [o for o in outcomes if isinstance(o, perr.ConflictError)]
    assert (len(appended), len(conflicts)) == (1, 1), outcomes
    assert persistence.journals.read(AGENT) == appended[0]


def test_two_concurrent_initial_handoff_saves_exactly_one_wins(store: Any) -> None:
    persistence: Persistence = store.persistence
    outcomes = _race(
        lambda: persistence.handoff_states.save(AGENT, expected_revision=None, state=_handoff("x")),
        lambda: persistence.handoff_states.save(AGENT, expected_revision=None, state=_handoff("y")),
    )
    saved = [o for o in outcomes if isinstance(o, HandoffState)]
    conflicts = [o for o in outcomes if isinstance(o, perr.ConflictError)]
    assert (len(saved), len(conflicts)) == (1, 1), outcomes
    assert persistence.handoff_states.load(AGENT) == saved[0]


UNGUARDED_INSERTS: dict[str, Callable[[Persistence, str], object]] = {
    "handoff_states.save": lambda p, who: p.handoff_states.save(
        AGENT, expected_revision=None, state=_handoff(who)
    ),
    "workflow_states.save": lambda p, who: p.workflow_states.save(
        "wf", expected_revision=None, snapshot={"fields": {"who": who}, "phase": None}
    ),
    "agents.create": lambda p, who: p.agents.create(AgentRoot.create(AGENT, definition_id=who)),
    "teams.create": lambda p, who: p.teams.create(TeamRoot.create(TEAM, definition_id=who)),
}


@pytest.mark.parametrize("operation", list(UNGUARDED_INSERTS))
def test_insert_racing_a_committed_insert_of_the_same_key_conflicts_on_postgresql(
    postgres_schema_url: str, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """Of two initial writers of one key, one wins, the other gets ConflictError.

    The interleaving is forced: writer B has found the key absent and is about
    to append its first log event when writer A inserts the same key and
    commits; only then does B go on. Nothing locks an anchor first here
    (Handoff and Workflow rows have no guard; roots anchor themselves), so B
    must detect the duplicate itself.
    """
    persistence = Persistence.open(postgres_schema_url)
    try:
        write = UNGUARDED_INSERTS[operation]
        b_checked, a_committed = threading.Event(), threading.Event()
        b_thread: list[int] = []
        original = records._send_unique

        def send_unique(session: Any, resource: Any, entry: Any, covering: Any) -> Any:
            if b_thread and threading.get_ident() == b_thread[0] and not b_checked.is_set():
                b_checked.set()  # B is about to insert its row and pick its log version
                # A fix that makes A wait for B (a lock) is fine: B then goes on alone.
                a_committed.wait(timeout=5)
            return original(session, resource, entry, covering)

        monkeypatch.setattr(records, "_send_unique", send_unique)

        def writer_b() -> object:
            b_thread.append(threading.get_ident())
            return write(persistence, "b")

        def writer_a() -> object:
            assert b_checked.wait(timeout=30), "writer B did not reach its insert"
            try:
                return write(persistence, "a")
            finally:
                a_committed.set()

        outcomes = _race(writer_b, writer_a)
        conflicts = [o for o in outcomes if isinstance(o, perr.ConflictError)]
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(conflicts) == 1, [repr(o) for o in outcomes]
        assert failures == conflicts, [repr(o) for o in outcomes]
    finally:
        persistence.close()


def test_a_row_that_does_not_decode_fails_the_transaction(persistence: Persistence) -> None:
    """Decoding runs inside the physical step (``atomic``), so its failure fails the scope."""
    persistence.backend.view.records("agent.roots").insert(
        key="corrupt", revision=0, attributes={}, record=DurableRecord("other.type", "0.1", {})
    )
    persistence.agents.create(AgentRoot.create("kept", definition_id="d"))

    def body(tx: Repositories) -> None:
        with pytest.raises(perr.SerializationError):
            tx.agents.load("corrupt")
        tx.agents.load("kept")  # the scope failed with the decode error

    with pytest.raises(perr.TransactionError):
        persistence.run_in_transaction(body)


def test_persistence_transactions_closed_out_of_order_commit_nothing(
    persistence: Persistence,
) -> None:
    def holder(workflow: str) -> Iterator[None]:
        with persistence.transaction() as tx:
            tx.workflow_states.save(workflow, expected_revision=None, snapshot=_EMPTY)
            yield

    outer, inner = holder("wf-outer"), holder("wf-inner")
    next(outer)
    next(inner)
    with pytest.raises(perr.TransactionError, match="innermost first"):
        next(outer)  # leaving the outer block normally would commit
    with pytest.raises(perr.TransactionError, match="rolled back"):
        next(inner)
    assert persistence.workflow_states.load("wf-outer") is None
    assert persistence.workflow_states.load("wf-inner") is None
    persistence.workflow_states.save("wf-after", expected_revision=None, snapshot=_EMPTY)
    assert persistence.workflow_states.load("wf-after") is not None


def test_persistence_after_close_raises_backend_closed(persistence: Persistence) -> None:
    persistence.close()
    with pytest.raises(perr.BackendClosedError):
        persistence.agents.load(AGENT)
    with pytest.raises(perr.BackendClosedError), persistence.transaction():
        pass


_EMPTY: dict[str, Any] = {"fields": {}, "phase": None}
