"""Agent runs: a timeline of every run of every Agent, with its terminal state.

A pure fold. It knows nothing of storage: the events it consumes are plain
values (:class:`ExecutionSaved`, :class:`ExecutionDeleted`) that whoever
reads the log builds from what it stores, and its read model is a mapping
from execution id to :class:`AgentRun`. Folding the same events always
gives the same runs, so a projection persisted in a database and one
rebuilt from the start of the log agree row for row.

A run starts with its first stored revision. It ends when a revision
reaches a terminal status (``completed``, ``failed``, ``cancelled``):
``ended_at`` is that revision's ``updated_at``, and a later return to an
active status clears it. A deleted execution stays in the timeline, marked
``deleted``; storing the execution id again starts a new run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from nenjim.domain.agents import TERMINAL_STATUSES


class AgentRunsError(ValueError):
    """The events contradict each other (one execution id, two Agents)."""


@dataclass(frozen=True, slots=True)
class ExecutionSaved:
    """An Agent execution was stored at ``revision`` (created or saved)."""

    position: int
    """Where the event is in its log (for messages)."""
    execution_id: str
    agent_id: str
    revision: int
    status: str
    phase: str
    created_at: str
    """ISO-8601 UTC text, as stored (it sorts in time order)."""
    updated_at: str
    terminal_reason: str | None


@dataclass(frozen=True, slots=True)
class ExecutionDeleted:
    """An Agent execution was deleted."""

    position: int
    execution_id: str


RunEvent = ExecutionSaved | ExecutionDeleted


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One run of an Agent as the log tells it."""

    execution_id: str
    agent_id: str
    status: str
    phase: str
    started_at: str
    updated_at: str
    ended_at: str | None
    """When the run reached its terminal status, ``None`` while it is active."""
    terminal_reason: str | None
    revisions: int
    """How many revisions of the run were stored."""
    deleted: bool

    @property
    def is_terminal(self) -> bool:
        """True once the run completed, failed or was cancelled."""
        return self.status in TERMINAL_STATUSES


def evolve(run: AgentRun | None, event: RunEvent) -> AgentRun | None:
    """The run after ``event`` (``run`` is the run of the event's execution id, if any)."""
    if isinstance(event, ExecutionDeleted):
        return None if run is None else replace(run, deleted=True)
    if run is not None and not run.deleted and run.agent_id != event.agent_id:
        raise AgentRunsError(
            f"event {event.position}: execution {event.execution_id} belongs to Agent "
            f"{run.agent_id!r}, not {event.agent_id!r}"
        )
    terminal = event.status in TERMINAL_STATUSES
    if run is None or run.deleted:
        started_at, ended_at, revisions = event.created_at, None, 1
    else:
        started_at, ended_at, revisions = run.started_at, run.ended_at, run.revisions + 1
    if not terminal:
        ended_at = None
    elif ended_at is None:
        ended_at = event.updated_at
    # Built directly: dataclasses.replace costs half the fold.
    return AgentRun(
        event.execution_id,
        event.agent_id,
        event.status,
        event.phase,
        started_at,
        event.updated_at,
        ended_at,
        event.terminal_reason,
        revisions,
        False,
    )


def fold(runs: Mapping[str, AgentRun], events: Iterable[RunEvent]) -> dict[str, AgentRun]:
    """The runs after ``events`` (in log order); ``runs`` is not changed."""
    folded = dict(runs)
    for event in events:
        run = evolve(folded.get(event.execution_id), event)
        if run is not None:
            folded[event.execution_id] = run
    return folded


def timeline(runs: Iterable[AgentRun]) -> tuple[AgentRun, ...]:
    """Runs by Agent, then start time, then execution id (a stable order)."""
    return tuple(sorted(runs, key=lambda run: (run.agent_id, run.started_at, run.execution_id)))
