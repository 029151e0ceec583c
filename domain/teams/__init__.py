"""Team durable values: Team roots and Team executions.

Pure values, free of storage, shaped like their Agent counterparts; the
repository interfaces are in :mod:`nenjim.domain.persistence.repositories`.
"""

from nenjim.domain.teams.execution import TeamExecution
from nenjim.domain.teams.root import TEAM_LIFECYCLE_STATUSES, TeamRoot

__all__ = ["TEAM_LIFECYCLE_STATUSES", "TeamExecution", "TeamRoot"]
