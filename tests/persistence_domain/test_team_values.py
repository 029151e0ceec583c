"""Team durable values: factories, transitions, validation and immutability."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from nenjim.domain.agents import ACTIVE_STATUSES, EXECUTION_STATUSES
from nenjim.domain.teams import TEAM_LIFECYCLE_STATUSES, TeamExecution, TeamRoot

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class TestTeamRoot:
    def test_create_starts_idle_at_revision_zero(self) -> None:
        team = TeamRoot.create("team-1", definition_id="crew", created_at=T0)
        assert team.team_revision == 0
        assert (team.team_definition_id, team.team_definition_version) == ("crew", "1")
        assert team.lifecycle_status == "idle"
        assert team.created_at == team.updated_at == T0
        assert team.metadata == {}

    def test_evolve_advances_revision(self) -> None:
        team = TeamRoot.create("team-1", definition_id="crew", created_at=T0)
        active = team.evolve(lifecycle_status="active")
        assert active.team_revision == 1
        assert active.updated_at > team.updated_at
        assert team.lifecycle_status == "idle"

    @pytest.mark.parametrize("name", ["team_id", "team_revision", "created_at"])
    def test_evolve_refuses_identity_and_revision(self, name: str) -> None:
        team = TeamRoot.create("team-1", definition_id="crew")
        with pytest.raises(ValueError, match=name):
            team.evolve(**{name: getattr(team, name)})

    def test_lifecycle_statuses(self) -> None:
        assert {"idle", "active", "closed"} == TEAM_LIFECYCLE_STATUSES
        with pytest.raises(ValueError, match="lifecycle_status"):
            TeamRoot.create("team-1", definition_id="crew").evolve(lifecycle_status="suspended")

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("team_id", ""),
            ("team_definition_id", None),
            ("team_definition_version", 1),
            ("team_revision", False),
            ("created_at", datetime(2024, 1, 1)),
            ("metadata", {"x": float("inf")}),
        ],
    )
    def test_fields_are_validated(self, name: str, value: Any) -> None:
        team = TeamRoot.create("team-1", definition_id="crew")
        with pytest.raises((TypeError, ValueError)):
            dataclasses.replace(team, **{name: value})

    def test_values_are_frozen_and_hashable(self) -> None:
        team = TeamRoot.create("team-1", definition_id="crew", metadata={"tags": ["a"]})
        with pytest.raises(dataclasses.FrozenInstanceError):
            team.team_id = "x"  # type: ignore[misc]
        assert hash(team) == hash(dataclasses.replace(team))
        assert team.metadata["tags"] == ("a",)


class TestTeamExecution:
    def test_start_prepares_at_revision_zero(self) -> None:
        run = TeamExecution.start("run-1", team_id="team-1", created_at=T0)
        assert run.execution_revision == 0
        assert (run.status, run.phase) == ("preparing", "preparing")
        assert run.coordinator == {}
        assert (run.tasks, run.workers, run.assignments) == ((), (), ())
        assert (run.input_ref, run.result_ref, run.error_ref) == (None, None, None)
        assert run.created_at == run.updated_at == T0
        assert run.is_active

    def test_collections_are_deep_read_only_copies(self) -> None:
        tasks: list[Any] = [{"id": "t1", "deps": ["t0"]}]
        run = TeamExecution.start(
            "run-1",
            team_id="team-1",
            coordinator={"agent_id": "c"},
            tasks=tasks,
            workers=[{"index": 0}],
            assignments=[["t1", 0]],
        )
        tasks[0]["deps"].append("t2")
        assert run.tasks == ({"id": "t1", "deps": ("t0",)},)
        assert run.assignments == (("t1", 0),)
        with pytest.raises(TypeError):
            run.coordinator["agent_id"] = "d"  # type: ignore[index]

    def test_evolve_advances_revision(self) -> None:
        run = TeamExecution.start("run-1", team_id="team-1", created_at=T0)
        done = run.evolve(status="completed", result_ref="sha256:r")
        assert done.execution_revision == 1
        assert done.updated_at > run.updated_at
        assert not done.is_active
        assert run.is_active

    @pytest.mark.parametrize("name", ["team_execution_id", "team_id", "execution_revision"])
    def test_evolve_refuses_identity_and_revision(self, name: str) -> None:
        run = TeamExecution.start("run-1", team_id="team-1")
        with pytest.raises(ValueError, match=name):
            run.evolve(**{name: getattr(run, name)})

    @pytest.mark.parametrize("status", sorted(EXECUTION_STATUSES))
    def test_statuses_follow_agent_executions(self, status: str) -> None:
        run = TeamExecution.start("run-1", team_id="team-1").evolve(status=status)
        assert run.is_active == (status in ACTIVE_STATUSES)
        assert run.is_terminal == (not run.is_active)

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("status", "handed_off"),
            ("phase", ""),
            ("coordinator", []),
            ("tasks", {"a": 1}),
            ("workers", "w"),
            ("assignments", [object()]),
            ("input_ref", 3),
        ],
    )
    def test_fields_are_validated(self, name: str, value: object) -> None:
        run = TeamExecution.start("run-1", team_id="team-1")
        with pytest.raises((TypeError, ValueError)):
            run.evolve(**{name: value})

    def test_hashable(self) -> None:
        run = TeamExecution.start("run-1", team_id="team-1", tasks=[{"a": 1}])
        assert hash(run) == hash(dataclasses.replace(run))
