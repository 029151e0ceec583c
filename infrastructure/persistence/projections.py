"""The storage log's projections, for ``nenjim projections status|rebuild``.

A status never opens the store as a backend: it reads the tables as they
are, creating nothing, so it can be pointed at any URL. A rebuild opens it
(upgrading an older schema in place), builds a new generation and swaps it
in.
"""

from __future__ import annotations

from nenjim.infrastructure.persistence import agent_runs
from nenjim.infrastructure.persistence.legacy_projections import legacy_position
from nenjim.infrastructure.persistence.persistence import Persistence
from nenjim.infrastructure.storage.follow.inspection import log_session
from nenjim.infrastructure.storage.follow.log import log_size
from nenjim.infrastructure.storage.follow.schema import has_table, qualified
from nenjim.infrastructure.storage.sql.schema import COMPONENT
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.store.urls import resolve_store_url
from nenjim.infrastructure.store.versions import FOLLOWED_SINCE
from nenjim.infrastructure.tracking.projections import (
    TRACKING_TABLE,
    MaintainedProjection,
    ProjectionStatus,
)

LOG = "storage"
"""The log these projections follow, as statuses name it."""


def agent_runs_status(url: str) -> ProjectionStatus:
    """Where agent-runs stands in the store ``url`` (``StoreUnavailableError`` when the
    store holds no storage log)."""
    with log_session(url) as session:
        if session is None:
            raise _no_log(url)
        head = log_size(session)
        position = _tracked(session, agent_runs.NAME)
        return ProjectionStatus(agent_runs.NAME, LOG, position, head, head - position)


def rebuild_agent_runs(url: str, progress: Progress) -> str:
    """Rebuild agent-runs in the store ``url`` and swap it in; one summary line."""
    with log_session(url) as session:
        holds_log = session is not None
    if not holds_log:
        raise _no_log(url)
    persistence = Persistence.open(url)
    try:
        runs = agent_runs.AgentRuns(persistence.backend)
        events = runs.rebuild(progress)
        timeline = runs.timeline()
    finally:
        persistence.close()
    agents = len({run.agent_id for run in timeline})
    return f"{agent_runs.NAME}: {len(timeline)} runs of {agents} agents from {events} events"


AGENT_RUNS = MaintainedProjection(agent_runs.NAME, agent_runs_status, rebuild_agent_runs)
"""The agent-runs projection, as ``nenjim projections`` maintains it."""


def _no_log(url: str) -> StoreUnavailableError:
    return StoreUnavailableError(f"store {resolve_store_url(url).display} holds no storage log")


def _tracked(session: Session, name: str) -> int:
    """How many events the projection applied, as the store tracks it (0 for none)."""
    row = session.one("SELECT version FROM {versions} WHERE component = ?", (COMPONENT,))
    if row is not None and int(row[0]) < FOLLOWED_SINCE:
        return 0  # never opened by a build that follows the log: nothing was tracked yet
    if has_table(session, TRACKING_TABLE):
        tracked = session.one(
            f"SELECT position, version FROM {qualified(session.dialect, TRACKING_TABLE)} "
            "WHERE name = ?",
            (name,),
        )
        if tracked is not None:
            return int(tracked[0]) if tracked[1] == agent_runs.TABLE.version else 0
    return legacy_position(session, name) or 0
