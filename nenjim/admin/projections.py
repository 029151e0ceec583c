"""Every persisted projection a store may hold: their status, and their rebuild.

Each is a :class:`~nenjim.infrastructure.tracking.projections.MaintainedProjection`
(its name, its status, its rebuild), whichever log it follows.
``nenjim projections status|rebuild`` and ``nenjim log import`` go through
:data:`PROJECTIONS` only, so a new projection is one more entry there.
"""

from __future__ import annotations

from nenjim.infrastructure.log import StoreReadOnlyError, StoreUnavailableError
from nenjim.infrastructure.persistence.projections import AGENT_RUNS
from nenjim.infrastructure.store.progress import Progress, silent
from nenjim.infrastructure.store.urls import resolve_store_url
from nenjim.infrastructure.tracking.projections import MaintainedProjection, ProjectionStatus
from nenjim.journal.impl.ref.rebuild import CHAINS

PROJECTIONS: list[MaintainedProjection] = [CHAINS, AGENT_RUNS]
"""Every projection, in the order ``status`` lists them."""


class UnknownProjectionError(ValueError):
    """A projection name that is not in :data:`PROJECTIONS`."""


def projection_names() -> tuple[str, ...]:
    """Every projection name."""
    return tuple(projection.name for projection in PROJECTIONS)


def statuses(url: str) -> list[ProjectionStatus]:
    """The status of every projection whose log the store ``url`` holds.

    A projection whose log the store does not hold is left out; a store that
    holds none of them (or does not exist) raises ``StoreUnavailableError``,
    and nothing is created.
    """
    require_existing(url)
    found: list[ProjectionStatus] = []
    missing: list[StoreUnavailableError] = []
    for projection in PROJECTIONS:
        try:
            found.append(projection.status(url))
        except StoreReadOnlyError:
            raise  # the log is there but could not be opened: leaving it out would mislead
        except StoreUnavailableError as error:
            missing.append(error)
    if missing and not found:  # the store holds no log of any projection
        raise missing[0]
    return found


def rebuild(url: str, name: str, progress: Progress = silent) -> str:
    """Rebuild the projection ``name`` in the store ``url``; its summary line."""
    for projection in PROJECTIONS:
        if projection.name == name:
            require_existing(url)
            return projection.rebuild(url, progress)
    raise UnknownProjectionError(
        f"unknown projection {name!r}; known: {', '.join(projection_names())}"
    )


def rebuild_all(url: str, progress: Progress = silent) -> tuple[str, ...]:
    """Rebuild every projection whose log the store holds; one line each."""
    lines: list[str] = []
    for projection in PROJECTIONS:
        try:
            projection.status(url)
        except StoreReadOnlyError:
            raise
        except StoreUnavailableError:
            continue  # the store holds no log of this projection
        lines.append(projection.rebuild(url, progress))
    return tuple(lines)


def require_existing(url: str) -> None:
    """Refuse a store that does not exist (``StoreMissingError``), before any projection
    could create it, by opening it to read (``memory:`` is refused by every projection: a
    new in-memory store holds no log)."""
    location = resolve_store_url(url)
    kind = location.store_kind
    if kind.reader is not None:
        with kind.load(kind.reader)(location):
            pass
