"""The agent-runs read model on every backend: catch up, resume, rebuild, statuses."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns, agent_run_rows
from nenjim.infrastructure.persistence.errors import UnsupportedBackendError
from nenjim.infrastructure.persistence.projections import agent_runs_status, rebuild_agent_runs
from nenjim.infrastructure.storage.follow.log import LogPosition
from nenjim.infrastructure.store.errors import RebuildLostError, StoreUnavailableError
from nenjim.projections.agent_runs import AgentRun

from .conftest import Store


def run_agent(
    persistence: Persistence, agent_id: str, runs: int, *, status: str = "completed"
) -> None:
    """Create ``agent_id`` and give it ``runs`` runs, each saved once more to ``status``."""
    root = persistence.agents.create(AgentRoot.create(agent_id, definition_id="d"))
    for number in range(runs):
        started = persistence.executions.create_active(
            AgentExecution.start(f"{agent_id}-run{number}", agent_id=agent_id, base=root)
        )
        persistence.executions.save(
            started.execution_id,
            expected_revision=0,
            execution=started.evolve(status=status, terminal_reason=f"{status} {number}"),
        )


def test_a_caught_up_model_holds_every_run_with_its_terminal_state(store: Store) -> None:
    persistence = store.persistence
    run_agent(persistence, "a1", 2)
    run_agent(persistence, "a0", 1, status="failed")
    runs = AgentRuns(persistence.backend)
    assert runs.timeline() == ()
    assert runs.sync() > 0
    timeline = runs.timeline()
    assert [(run.execution_id, run.status, run.revisions) for run in timeline] == [
        ("a0-run0", "failed", 2),
        ("a1-run0", "completed", 2),
        ("a1-run1", "completed", 2),
    ]
    assert all(run.ended_at == run.updated_at and run.is_terminal for run in timeline)
    assert [run.execution_id for run in runs.timeline("a1")] == ["a1-run0", "a1-run1"]
    assert runs.run("a0-run0") == timeline[0]
    assert runs.run("missing") is None
    assert not runs.pending()
    assert runs.catch_up() == 0


def test_catching_up_applies_only_what_is_new(store: Store) -> None:
    persistence = store.persistence
    runs = AgentRuns(persistence.backend, batch=3)
    run_agent(persistence, "a1", 1)
    runs.sync()
    first = runs.position()
    run_agent(persistence, "a2", 1)
    assert runs.pending()
    assert runs.sync() == 3  # a2's root, its run's insert and its save
    assert runs.position() > first
    assert [run.revisions for run in runs.timeline()] == [2, 2]


def test_a_run_deleted_after_it_was_folded_leaves_the_timeline_at_the_next_catch_up(
    store: Store,
) -> None:
    persistence = store.persistence
    run_agent(persistence, "a1", 1)
    runs = AgentRuns(persistence.backend)
    runs.sync()
    assert [run.execution_id for run in runs.timeline()] == ["a1-run0"]
    persistence.executions.delete("a1-run0")  # a purge: its marker drops the run
    runs.sync()
    assert runs.timeline() == ()
    runs.rebuild()
    assert runs.timeline() == ()


def test_a_run_purged_before_it_was_folded_never_shows(store: Store) -> None:
    persistence = store.persistence
    run_agent(persistence, "a1", 1)
    persistence.executions.delete("a1-run0")
    runs = AgentRuns(persistence.backend)
    runs.sync()
    assert runs.timeline() == ()


def test_a_rebuild_gives_the_same_rows_and_readers_never_see_it_half_built(store: Store) -> None:
    persistence = store.persistence
    for agent in range(6):
        run_agent(persistence, f"a{agent}", 3)
    runs = AgentRuns(persistence.backend, batch=5)
    runs.sync()
    before = runs.timeline()
    seen: list[tuple[AgentRun, ...]] = []

    def progress(task: str, done: int, total: int) -> None:
        assert task in {"rebuilding agent-runs", "catching up agent-runs"}
        assert done > 0
        if store.durable:
            seen.append(AgentRuns(persistence.backend).timeline())

    assert runs.rebuild(progress) == runs.position()
    assert runs.timeline() == before
    if store.durable:
        assert len(seen) > 3
        assert all(view == before for view in seen)


def test_the_replay_rows_are_plain_and_stable(store: Store) -> None:
    persistence = store.persistence
    run_agent(persistence, "b", 1)
    run_agent(persistence, "a", 1)
    rows = agent_run_rows(persistence.backend)
    assert [row["execution_id"] for row in rows] == ["a-run0", "b-run0"]
    assert rows == agent_run_rows(persistence.backend)
    if store.durable:  # another reader of the same store sees the same rows
        assert rows[0] == asdict(AgentRuns(persistence.backend).timeline()[0])


def test_a_restart_resumes_from_the_committed_position(durable_store: Store) -> None:
    run_agent(durable_store.persistence, "a1", 4)
    first = AgentRuns(durable_store.persistence.backend, batch=4)
    first.sync()
    position = first.position()
    run_agent(durable_store.persistence, "a2", 2)
    reopened = durable_store.reopen()
    resumed = AgentRuns(reopened.backend, batch=4)
    assert resumed.position() == position
    assert resumed.sync() == 1 + 2 * 2
    assert sum(run.revisions for run in resumed.timeline()) == 2 * 6


def test_statuses_report_position_head_and_lag(durable_store: Store) -> None:
    url = durable_store.url
    assert agent_runs_status(url).name == "agent-runs"
    run_agent(durable_store.persistence, "a1", 1)
    status = agent_runs_status(url)
    assert (status.log, status.position, status.head, status.lag) == ("storage", 0, 3, 3)
    AgentRuns(durable_store.persistence.backend).sync()
    status = agent_runs_status(url)
    assert (status.position, status.head, status.lag) == (3, 3, 0)
    lines: list[tuple[str, int, int]] = []
    summary = rebuild_agent_runs(url, lambda *args: lines.append(args))
    assert summary == "agent-runs: 1 runs of 1 agents from 3 events"
    assert lines
    assert lines[-1][1] == 3


def test_a_store_without_a_storage_log_has_no_status_nor_rebuild_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.db"
    for url in ("memory:", f"sqlite://{missing}"):
        with pytest.raises(StoreUnavailableError, match="holds no storage log"):
            agent_runs_status(url)
        with pytest.raises(StoreUnavailableError, match="holds no storage log"):
            rebuild_agent_runs(url, lambda *args: None)
    assert not missing.exists()


def test_a_position_orders_by_transaction_then_id() -> None:
    assert LogPosition(1, 9) < LogPosition(2, 1) < LogPosition(2, 3)


def test_a_rebuild_overtaken_by_another_is_refused_and_leaves_the_live_rows(
    durable_store: Store,
) -> None:
    persistence = durable_store.persistence
    for agent in range(3):
        run_agent(persistence, f"a{agent}", 2)
    runs = AgentRuns(persistence.backend, batch=4)
    runs.sync()
    before = runs.timeline()
    overtaken: list[int] = []

    def progress(task: str, done: int, total: int) -> None:
        if not overtaken:  # a second rebuild starts, and finishes, in the middle of the first
            overtaken.append(AgentRuns(persistence.backend).rebuild())

    with pytest.raises(RebuildLostError, match="agent-runs: another rebuild swapped in generation"):
        runs.rebuild(progress)
    assert runs.timeline() == before


@pytest.mark.parametrize("backend", [None, "memory:", object()], ids=["None", "text", "object"])
def test_a_read_model_over_what_is_no_backend_is_refused(backend: object) -> None:
    with pytest.raises(UnsupportedBackendError, match=r"infrastructure\.storage\.Backend"):
        AgentRuns(backend)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("batch", "error"),
    [(0, ValueError), (-1, ValueError), (True, TypeError), ("5", TypeError), (2.0, TypeError)],
    ids=repr,
)
def test_a_batch_that_is_no_positive_int_is_refused(
    store: Store, batch: object, error: type[Exception]
) -> None:
    """A batch of 0 would catch up nothing, ever, and say it is done."""
    with pytest.raises(error, match="batch"):
        AgentRuns(store.persistence.backend, batch=batch)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        ("1", TypeError),
        (True, TypeError),
        (None, TypeError),
        (-1, ValueError),
        (float("nan"), ValueError),
    ],
    ids=repr,
)
def test_a_sync_timeout_that_is_no_number_of_seconds_is_refused(
    store: Store, timeout: object, error: type[Exception]
) -> None:
    runs = AgentRuns(store.persistence.backend)
    with pytest.raises(error, match="timeout"):
        runs.sync(timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "error"), [(5, TypeError), ("", ValueError)], ids=repr)
def test_queries_refuse_an_id_that_is_no_key(
    store: Store, value: object, error: type[Exception]
) -> None:
    run_agent(store.persistence, "a1", 1)
    runs = AgentRuns(store.persistence.backend)
    runs.sync()
    with pytest.raises(error, match="agent_id"):
        runs.timeline(value)  # type: ignore[arg-type]
    with pytest.raises(error, match="execution_id"):
        runs.run(value)  # type: ignore[arg-type]
