"""The agent-runs fold: pure, order-sensitive, and strict about one run's Agent."""

from __future__ import annotations

import pytest

from nenjim.projections.agent_runs import (
    AgentRunsError,
    ExecutionDeleted,
    ExecutionSaved,
    fold,
    timeline,
)


def saved(
    position: int, execution: str, status: str, *, agent: str = "a1", at: str = ""
) -> ExecutionSaved:
    stamp = at or f"2026-01-01T00:00:{position:02d}.000000Z"
    return ExecutionSaved(position, execution, agent, position, status, "p", stamp, stamp, None)


def test_a_run_ends_at_its_first_terminal_revision_and_counts_revisions() -> None:
    runs = fold(
        {}, [saved(1, "e1", "preparing"), saved(2, "e1", "active"), saved(3, "e1", "completed")]
    )
    run = runs["e1"]
    assert (run.status, run.revisions, run.is_terminal) == ("completed", 3, True)
    assert run.started_at == "2026-01-01T00:00:01.000000Z"
    assert run.ended_at == "2026-01-01T00:00:03.000000Z"


def test_a_return_to_an_active_status_clears_the_end() -> None:
    runs = fold({}, [saved(1, "e1", "failed"), saved(2, "e1", "active")])
    assert runs["e1"].ended_at is None
    assert not runs["e1"].is_terminal


def test_a_deleted_run_stays_marked_and_a_new_insert_starts_a_new_run() -> None:
    runs = fold({}, [saved(1, "e1", "completed"), ExecutionDeleted(2, "e1")])
    assert runs["e1"].deleted
    again = fold(runs, [saved(3, "e1", "preparing", agent="a2")])
    assert (again["e1"].deleted, again["e1"].agent_id, again["e1"].revisions) == (False, "a2", 1)


def test_folding_leaves_its_input_unchanged_and_is_deterministic() -> None:
    events = [saved(1, "e1", "preparing"), saved(2, "e2", "preparing", agent="a0")]
    start = fold({}, events[:1])
    before = dict(start)
    assert fold(start, events[1:]) == fold({}, events)
    assert start == before


def test_one_execution_id_with_two_agents_is_refused_naming_the_event() -> None:
    with pytest.raises(AgentRunsError, match=r"event 2: execution e1 belongs to Agent 'a1'"):
        fold({}, [saved(1, "e1", "active"), saved(2, "e1", "active", agent="a2")])


def test_the_timeline_orders_by_agent_then_start_then_id() -> None:
    runs = fold(
        {},
        [
            saved(1, "e9", "active", agent="b"),
            saved(2, "e2", "active", agent="a", at="2026-01-01T00:00:05.000000Z"),
            saved(3, "e1", "active", agent="a", at="2026-01-01T00:00:05.000000Z"),
            saved(4, "e0", "active", agent="a", at="2026-01-01T00:00:09.000000Z"),
        ],
    )
    assert [run.execution_id for run in timeline(runs.values())] == ["e1", "e2", "e0", "e9"]
