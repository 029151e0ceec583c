"""The eight repositories bound to one storage view, plus the Agent watermark."""

from __future__ import annotations

from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.domain.persistence import repositories as domain
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments, catalog
from nenjim.infrastructure.persistence.boundary import at_boundary
from nenjim.infrastructure.persistence.codecs import (
    decode_agent_execution,
    decode_agent_root,
    decode_team_execution,
    decode_team_root,
    encode_agent_execution,
    encode_agent_root,
    encode_team_execution,
    encode_team_root,
)
from nenjim.infrastructure.persistence.content_store import ContentStore
from nenjim.infrastructure.persistence.errors import ConflictError
from nenjim.infrastructure.persistence.repositories.executions import (
    ExecutionCodec,
    ExecutionRepository,
)
from nenjim.infrastructure.persistence.repositories.handoff_states import HandoffStateRepository
from nenjim.infrastructure.persistence.repositories.journals import JournalRepository
from nenjim.infrastructure.persistence.repositories.roots import RootCodec, RootRepository
from nenjim.infrastructure.persistence.repositories.workflow_states import WorkflowStateRepository

AGENT_ROOTS: RootCodec[AgentRoot] = RootCodec(
    catalog.ROOTS,
    "Agent",
    lambda r: r.agent_id,
    lambda r: r.agent_revision,
    encode_agent_root,
    decode_agent_root,
)
TEAM_ROOTS: RootCodec[TeamRoot] = RootCodec(
    catalog.TEAMS,
    "Team",
    lambda r: r.team_id,
    lambda r: r.team_revision,
    encode_team_root,
    decode_team_root,
)
AGENT_EXECUTIONS: ExecutionCodec[AgentExecution] = ExecutionCodec(
    catalog.EXECUTIONS,
    catalog.ROOTS,
    "Agent execution",
    lambda e: e.execution_id,
    lambda e: e.agent_id,
    lambda e: e.execution_revision,
    lambda e: e.is_active,
    encode_agent_execution,
    decode_agent_execution,
)
TEAM_EXECUTIONS: ExecutionCodec[TeamExecution] = ExecutionCodec(
    catalog.TEAM_EXECUTIONS,
    catalog.TEAMS,
    "Team execution",
    lambda e: e.team_execution_id,
    lambda e: e.team_id,
    lambda e: e.execution_revision,
    lambda e: e.is_active,
    encode_team_execution,
    decode_team_execution,
    active_requires_active=True,
)


class AgentExecutionRepository(
    ExecutionRepository[AgentExecution], domain.AgentExecutionRepository
):
    """Agent executions (``agent.executions``)."""

    def delete_for_agent(self, agent_id: str) -> None:
        """Delete every execution of the Agent; its root must exist."""
        self.delete_for_owner(agent_id)


class TeamExecutionRepository(ExecutionRepository[TeamExecution], domain.TeamExecutionRepository):
    """Team executions (``team.executions``); a terminal run is never reactivated."""

    def delete_for_team(self, team_id: str) -> None:
        """Delete every run of the Team; its root must exist."""
        self.delete_for_owner(team_id)


class Repositories(domain.Repositories):
    """The eight repositories over one view (the root view, or a transaction's)."""

    def __init__(self, view: storage.View) -> None:
        """The repositories over ``view`` (a backend's root view or a transaction's)."""
        if not isinstance(view, storage.View):
            raise TypeError(
                "repositories run over a nenjim.infrastructure.storage.View, "
                f"got {type(view).__name__}"
            )
        self._view = view
        self.contents = ContentStore(view)
        self.agents = RootRepository(view, AGENT_ROOTS)
        self.journals = JournalRepository(view, catalog.JOURNAL)
        self.executions = AgentExecutionRepository(view, AGENT_EXECUTIONS)
        self.workflow_states = WorkflowStateRepository(view, catalog.WORKFLOWS)
        self.handoff_states = HandoffStateRepository(view, catalog.HANDOFFS)
        self.teams = RootRepository(view, TEAM_ROOTS)
        self.team_executions = TeamExecutionRepository(view, TEAM_EXECUTIONS)

    @at_boundary
    def assert_agent_watermark(
        self, *, agent_id: str, agent_revision: int, journal_position: int
    ) -> bool:
        """True if the Agent is at ``agent_revision`` and its journal at ``journal_position``.

        Holds the Agent's anchor lock; a mismatch is a ``ConflictError`` (never a reload).
        """
        arguments.key(agent_id, "agent_id")
        arguments.revision(agent_revision, "agent_revision")
        arguments.revision(journal_position, "journal_position")
        revision = storage.RevisionIs(catalog.ROOTS, agent_id, agent_revision)
        position = storage.StreamHeadIs(catalog.JOURNAL, agent_id, journal_position)
        try:
            return self._view.check(
                guards=[storage.GuardRef(catalog.ROOTS, agent_id)],
                conditions=[revision, position],
            )
        except storage.ConditionFailedError as error:
            what = "agent revision" if error.condition is revision else "journal position"
            raise ConflictError(f"{what} conflict: {error}") from error
