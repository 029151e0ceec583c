"""Team durable values: Team roots and Team executions.

Pure values, free of storage, shaped like their Agent counterparts; the
repository interfaces are in :mod:`domain.persistence.repositories`.
"""

from domain.teams.execution import TeamExecution
from domain.teams.root import TEAM_LIFECYCLE_STATUSES, TeamRoot

__all__ = ["TEAM_LIFECYCLE_STATUSES", "TeamExecution", "TeamRoot"]
