"""The resource catalog: every storage resource of domain Persistence, in composition order.

Each domain declares its resources beside its values; this module only
gathers them. A backend must be built from these very objects (the storage
layer refuses equal-looking copies).
"""

from __future__ import annotations

from domain.agents.resources import EXECUTIONS, HANDOFFS, JOURNAL, ROOTS
from domain.persistence.content_resources import CONTENTS
from domain.teams.resources import TEAM_EXECUTIONS, TEAMS
from domain.workflows.resources import WORKFLOWS
from infrastructure.storage import Resource

CATALOG: tuple[Resource, ...] = (
    ROOTS,
    EXECUTIONS,
    JOURNAL,
    HANDOFFS,
    CONTENTS,
    TEAMS,
    TEAM_EXECUTIONS,
    WORKFLOWS,
)

__all__ = [
    "CATALOG",
    "CONTENTS",
    "EXECUTIONS",
    "HANDOFFS",
    "JOURNAL",
    "ROOTS",
    "TEAMS",
    "TEAM_EXECUTIONS",
    "WORKFLOWS",
]
