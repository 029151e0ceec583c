"""``TeamExecution``: one run of a Team, with its coordinator, tasks, workers and assignments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from domain import durable_fields as f
from domain.agents.execution import EXECUTION_STATUSES, RunStatus


@dataclass(frozen=True, slots=True)
class TeamExecution(RunStatus):
    """A run of a Team (record type ``phronomy.team_execution``).

    Statuses are those of Agent executions: ``preparing``, ``active`` and
    ``suspended`` are active (a Team admits one active run), ``completed``,
    ``failed`` and ``cancelled`` terminal. ``coordinator`` is a read-only
    JSON object; ``tasks``, ``workers`` and ``assignments`` are tuples of
    read-only JSON values. Input, result and error are content refs.
    """

    team_execution_id: str
    team_id: str
    execution_revision: int
    status: str
    phase: str
    input_ref: str | None
    coordinator: Mapping[str, Any] = field(hash=False)
    tasks: tuple[Any, ...] = field(hash=False)
    workers: tuple[Any, ...] = field(hash=False)
    assignments: tuple[Any, ...] = field(hash=False)
    result_ref: str | None
    error_ref: str | None
    created_at: datetime
    updated_at: datetime
    metadata: Mapping[str, Any] = field(hash=False)

    def __post_init__(self) -> None:
        for name, value in (
            ("team_execution_id", f.identifier(self.team_execution_id, "team_execution_id")),
            ("team_id", f.identifier(self.team_id, "team_id")),
            ("execution_revision", f.count(self.execution_revision, "execution_revision")),
            ("status", f.choice(self.status, EXECUTION_STATUSES, "status")),
            ("phase", f.text(self.phase, "phase")),
            ("input_ref", f.optional_text(self.input_ref, "input_ref")),
            ("coordinator", f.json_object(self.coordinator, "coordinator")),
            ("tasks", f.json_array(self.tasks, "tasks")),
            ("workers", f.json_array(self.workers, "workers")),
            ("assignments", f.json_array(self.assignments, "assignments")),
            ("result_ref", f.optional_text(self.result_ref, "result_ref")),
            ("error_ref", f.optional_text(self.error_ref, "error_ref")),
            ("created_at", f.timestamp(self.created_at, "created_at")),
            ("updated_at", f.timestamp(self.updated_at, "updated_at")),
            ("metadata", f.json_object(self.metadata, "metadata")),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def start(
        cls,
        team_execution_id: str,
        *,
        team_id: str,
        phase: str = "preparing",
        input_ref: str | None = None,
        coordinator: Mapping[str, Any] | None = None,
        tasks: Sequence[Any] = (),
        workers: Sequence[Any] = (),
        assignments: Sequence[Any] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Self:
        """A new run in status ``preparing`` at revision 0."""
        now = f.utc_now() if created_at is None else created_at
        return cls(
            team_execution_id=team_execution_id,
            team_id=team_id,
            execution_revision=0,
            status="preparing",
            phase=phase,
            input_ref=input_ref,
            coordinator={} if coordinator is None else coordinator,
            tasks=tuple(tasks),
            workers=tuple(workers),
            assignments=tuple(assignments),
            result_ref=None,
            error_ref=None,
            created_at=now,
            updated_at=now,
            metadata={} if metadata is None else metadata,
        )

    def evolve(self, **changes: Any) -> Self:
        """A copy with ``changes``, ``execution_revision`` + 1 and ``updated_at`` refreshed.

        ``team_execution_id``, ``team_id``, ``execution_revision`` and
        ``created_at`` cannot be changed; ``updated_at`` may be given.
        """
        return f.evolved(self, changes, revision="execution_revision", fixed=_FIXED)


_FIXED = frozenset({"team_execution_id", "team_id", "created_at"})
