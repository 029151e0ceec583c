"""``TeamExecution``: one run of a Team, with its coordinator, tasks, workers and assignments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from nenjim.domain import durable_fields as f
from nenjim.domain.agents.execution import EXECUTION_STATUSES, RunStatus
from nenjim.immutable import immutable


@immutable
@dataclass(frozen=True, slots=True)
class TeamExecution(RunStatus, f.Revised):
    """A run of a Team (record type ``phronomy.team_execution``).

    Statuses are those of Agent executions: ``preparing``, ``active`` and
    ``suspended`` are active (a Team admits one active run), ``completed``,
    ``failed`` and ``cancelled`` terminal. ``coordinator`` is a read-only
    JSON object; ``tasks``, ``workers`` and ``assignments`` are tuples of
    read-only JSON values. Input, result and error are content refs.
    """

    _revision = "execution_revision"
    _fixed = frozenset({"team_execution_id", "team_id", "created_at"})

    team_execution_id: str = field(metadata=f.checked(f.identifier))
    team_id: str = field(metadata=f.checked(f.identifier))
    execution_revision: int = field(metadata=f.checked(f.count))
    status: str = field(metadata=f.checked(f.one_of(EXECUTION_STATUSES)))
    phase: str = field(metadata=f.checked(f.text))
    input_ref: str | None = field(metadata=f.checked(f.optional_text))
    coordinator: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))
    tasks: tuple[Any, ...] = field(hash=False, metadata=f.checked(f.json_array))
    workers: tuple[Any, ...] = field(hash=False, metadata=f.checked(f.json_array))
    assignments: tuple[Any, ...] = field(hash=False, metadata=f.checked(f.json_array))
    result_ref: str | None = field(metadata=f.checked(f.optional_text))
    error_ref: str | None = field(metadata=f.checked(f.optional_text))
    created_at: datetime = field(metadata=f.checked(f.timestamp))
    updated_at: datetime = field(metadata=f.checked(f.timestamp))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))

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
