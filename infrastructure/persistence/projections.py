"""The storage log's projections, for ``nenjim projections status|rebuild``.

Each name in :data:`STORAGE_PROJECTIONS` is a projection over the storage
log (``storage_events``) kept in the store itself. A status never opens
the store as a backend: it reads the tables as they are, creating nothing,
so it can be pointed at any URL. A rebuild opens it (upgrading an older
schema in place), builds a new generation and swaps it in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nenjim.infrastructure.persistence import agent_runs
from nenjim.infrastructure.persistence.persistence import Persistence
from nenjim.infrastructure.storage.follow.inspection import log_session
from nenjim.infrastructure.storage.follow.log import START, head_after
from nenjim.infrastructure.storage.sql.schema import COMPONENT
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.tracking import has_positions, live_generation
from nenjim.infrastructure.store.urls import resolve_store_url
from nenjim.infrastructure.store.versions import FOLLOWED_SINCE

STORAGE_PROJECTIONS: tuple[str, ...] = (agent_runs.NAME,)
"""The projections of the storage log, by name."""

LOG = "storage"
"""The log these projections follow, as statuses name it."""


class UnknownProjectionError(ValueError):
    """A name that is not one of :data:`STORAGE_PROJECTIONS`."""


@dataclass(frozen=True, slots=True)
class ProjectionStatus:
    """Where one projection stands against its log.

    ``position`` is the ``notification_id`` of the last event applied (0 for
    none), ``head`` the highest in the log, ``lag`` how many committed events
    the projection has not applied yet.
    """

    name: str
    log: str
    position: int
    head: int
    lag: int


def storage_projection_statuses(url: str) -> list[ProjectionStatus]:
    """Each storage projection's status; ``[]`` when the store holds no storage log."""
    with log_session(url) as session:
        if session is None:
            return []
        return [_status(session, name) for name in STORAGE_PROJECTIONS]


def rebuild_storage_projection(
    url: str, name: str, progress: Callable[[str, int, int], None]
) -> str:
    """Rebuild projection ``name`` of the store at ``url`` and swap it in; one summary line."""
    if name not in STORAGE_PROJECTIONS:
        raise UnknownProjectionError(
            f"unknown storage projection {name!r}; known: {', '.join(STORAGE_PROJECTIONS)}"
        )
    with log_session(url) as session:
        holds_log = session is not None
    if not holds_log:
        display = resolve_store_url(url).display
        raise StoreUnavailableError(f"store {display} holds no storage log to rebuild from")
    persistence = Persistence.open(url)
    try:
        runs = agent_runs.AgentRuns(persistence.backend)
        events = runs.rebuild(progress)
        timeline = runs.timeline()
    finally:
        persistence.close()
    agents = len({run.agent_id for run in timeline})
    return f"{name}: {len(timeline)} runs of {agents} agents from {events} events"


def _status(session: Session, name: str) -> ProjectionStatus:
    row = session.one("SELECT version FROM {versions} WHERE component = ?", (COMPONENT,))
    if row is not None and int(row[0]) < FOLLOWED_SINCE:
        # Never opened by a build that follows the log: no projection was tracked yet.
        counted = session.one("SELECT coalesce(max(notification_id), 0), count(*) FROM {events}")
        head, lag = (0, 0) if counted is None else (int(counted[0]), int(counted[1]))
        return ProjectionStatus(name, LOG, 0, head, lag)
    live = live_generation(session, name) if has_positions(session) else None
    position = START if live is None else live.position
    found = head_after(session, position)
    return ProjectionStatus(name, LOG, position.notification_id, found.head, found.behind)
