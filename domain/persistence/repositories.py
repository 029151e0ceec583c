"""The repository interfaces of the domain: what its durable state must offer.

Each is a ``typing.Protocol``: the domain and its users program against
these, and ``nenjim.infrastructure.persistence`` implements them over the Storage
SPI. Revisions are compare-and-swap: a save names the revision it expects
and the value carries the next one. Failures are the errors of
:mod:`nenjim.domain.persistence.errors`; wrong argument types are ``TypeError``,
bad argument values ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.immutable import immutable

_R = TypeVar("_R")
_V = TypeVar("_V")


@immutable
@dataclass(frozen=True, slots=True)
class Revision(Generic[_V]):
    """One stored revision of a value, with the time the log recorded it."""

    revision: int
    value: _V
    recorded_at: datetime


class RootRepository(Protocol[_R]):
    """Agent or Team roots: keyed by id, the revision is the root's own."""

    def create(self, root: _R) -> _R:
        """Store a new root at revision 0; another revision or a taken id is a ``ConflictError``."""
        ...

    def load(self, root_id: str) -> _R:
        """The stored root; ``NotFoundError`` if there is none."""
        ...

    def save(self, root_id: str, *, expected_revision: int, root: _R) -> _R:
        """Replace ``expected_revision`` with ``root``, whose revision must be the next one."""
        ...

    def delete(self, root_id: str) -> None:
        """Delete without a revision check (idempotent); children are not cascaded.

        Every revision is erased from the log too (``history`` is empty afterwards).
        """
        ...

    def history(self, root_id: str) -> tuple[Revision[_R], ...]:
        """Every revision stored, oldest first, deleted ones included; none once purged."""
        ...


class ExecutionRepository(Protocol[_R]):
    """Runs of one owner kind; at most one active run per owner (admission)."""

    def create_active(self, execution: _R) -> _R:
        """Admit a new active run at revision 0 (else ``ConflictError``).

        Another active run of the owner is ``AgentBusyError``.
        """
        ...

    def load(self, execution_id: str) -> _R:
        """The stored run; ``NotFoundError`` if there is none."""
        ...

    def save(self, execution_id: str, *, expected_revision: int, execution: _R) -> _R:
        """Compare-and-swap to the next revision."""
        ...

    def list_active(self, owner_id: str) -> tuple[_R, ...]:
        """The owner's active runs (at most one)."""
        ...

    def list(self, owner_id: str, *, after: str | None = None, limit: int = 100) -> tuple[_R, ...]:
        """Active and terminal runs by ascending id, after an exclusive cursor."""
        ...

    def delete(self, execution_id: str) -> None:
        """Delete and erase every revision; the owner's root must still exist."""
        ...

    def delete_for_owner(self, owner_id: str) -> None:
        """Delete and erase every run of the owner; its root must exist."""
        ...

    def assert_idle(self, owner_id: str) -> bool:
        """True if the owner has no active run, holding its lock; else ``AgentBusyError``."""
        ...

    def history(self, execution_id: str) -> tuple[Revision[_R], ...]:
        """Every revision ever stored, oldest first."""
        ...


class AgentExecutionRepository(ExecutionRepository[AgentExecution], Protocol):
    """Agent executions."""

    def delete_for_agent(self, agent_id: str) -> None:
        """Delete every execution of the Agent; its root must exist."""
        ...


class TeamExecutionRepository(ExecutionRepository[TeamExecution], Protocol):
    """Team runs; a terminal run is never reactivated."""

    def delete_for_team(self, team_id: str) -> None:
        """Delete every run of the Team; its root must exist."""
        ...


class AgentJournalRepository(Protocol):
    """Append-only Agent journals; a record's sequence is its position."""

    def append(
        self, agent_id: str, *, expected_position: int, records: Sequence[AgentJournalRecord]
    ) -> tuple[AgentJournalRecord, ...]:
        """Append at ``expected_position``; the records get the next sequences.

        A record that carries another sequence already is a ``ConflictError``.
        """
        ...

    def read(
        self, agent_id: str, *, after: int | None = None, limit: int | None = None
    ) -> tuple[AgentJournalRecord, ...]:
        """Records after ``after`` (``None``: from the start), ascending by sequence."""
        ...

    def head(self, agent_id: str) -> int:
        """The last sequence (0 when empty)."""
        ...

    def delete(self, agent_id: str) -> None:
        """Empty the journal and erase every record it held; the Agent root must exist."""
        ...


class WorkflowStateRepository(Protocol):
    """Workflow snapshots by instance id; revisions start at 1."""

    def load(self, workflow_instance_id: str) -> Mapping[str, Any] | None:
        """``None``, or a read-only ``{"snapshot": {...}, "revision": N}``."""
        ...

    def save(
        self,
        workflow_instance_id: str,
        *,
        expected_revision: int | None,
        snapshot: Mapping[str, Any],
    ) -> int:
        """Insert at 1 (``expected_revision`` None) or replace N with N + 1; returns it."""
        ...

    def delete(self, workflow_instance_id: str, *, expected_revision: int) -> None:
        """Checked delete: a wrong revision or a missing row is a ``ConflictError``.

        Every snapshot ever stored under the id is erased too.
        """
        ...

    def history(self, workflow_instance_id: str) -> tuple[Revision[Mapping[str, Any]], ...]:
        """Every stored snapshot, oldest first."""
        ...


class HandoffStateRepository(Protocol):
    """The Handoff anchor of each main Agent; revisions start at 1."""

    def load(self, main_agent_id: str) -> HandoffState | None:
        """The state, or ``None`` when there is none."""
        ...

    def save(
        self, main_agent_id: str, *, expected_revision: int | None, state: HandoffState
    ) -> HandoffState:
        """Insert at 1 (``expected_revision`` None) or replace N with N + 1."""
        ...

    def delete(self, main_agent_id: str, *, expected_revision: int) -> None:
        """Checked delete; every stored revision is erased too."""
        ...


class ContentRepository(Protocol):
    """Immutable content under its id, ``sha256:`` and the hex SHA-256 of its bytes."""

    def put(self, data: bytes, *, canonicalization_version: int) -> str:
        """Store ``data`` once and return its id."""
        ...

    def fetch(self, identity: str) -> bytes:
        """The bytes; ``NotFoundError`` if absent, ``IntegrityError`` if altered."""
        ...

    def exists(self, identity: str) -> bool:
        """Whether content with that id is stored."""
        ...

    def delete(self, identity: str) -> None:
        """Erase the content (idempotent): the bytes go, from reads and from the log.

        Content is shared by every reference to the same bytes: erase it only
        when nothing that should stay refers to it.
        """
        ...

    def put_text(self, text: str) -> str:
        """Store UTF-8 text."""
        ...

    def put_json(self, value: Any) -> str:
        """Store the Canonical JSON of ``value``."""
        ...

    def fetch_text(self, identity: str) -> str:
        """Content decoded as UTF-8."""
        ...

    def fetch_json(self, identity: str) -> Any:
        """Content parsed as JSON."""
        ...

    def fetch_many(self, identities: Iterable[str]) -> Mapping[str, bytes]:
        """Each distinct id's bytes."""
        ...


class Repositories(Protocol):
    """The eight repositories, as one transaction (or the store outside one) offers them."""

    contents: ContentRepository
    agents: RootRepository[AgentRoot]
    journals: AgentJournalRepository
    executions: AgentExecutionRepository
    workflow_states: WorkflowStateRepository
    handoff_states: HandoffStateRepository
    teams: RootRepository[TeamRoot]
    team_executions: TeamExecutionRepository

    def assert_agent_watermark(
        self, *, agent_id: str, agent_revision: int, journal_position: int
    ) -> bool:
        """True if the Agent is at ``agent_revision`` and its journal at ``journal_position``.

        A mismatch is a ``ConflictError`` (never a reload).
        """
        ...


class DurableState(Repositories, Protocol):
    """Repositories plus transactions across them: what the domain needs of a store."""

    def transaction(self) -> AbstractContextManager[Repositories]:
        """All eight repositories in one transaction; nested calls are savepoints."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...
