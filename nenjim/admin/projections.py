"""Every persisted projection a store may hold, by family: their status, and their rebuild.

A family is the projections of one log (the Journal log's, the storage
log's): it names them, reports where each stands, and rebuilds one by name.
``nenjim projections status|rebuild`` and ``nenjim log import`` go through
:data:`FAMILIES` only, so a new family is one more entry there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nenjim.infrastructure.log import StoreReadOnlyError, StoreUnavailableError
from nenjim.infrastructure.persistence.projections import (
    STORAGE_PROJECTIONS,
    rebuild_storage_projection,
    storage_projection_statuses,
)
from nenjim.infrastructure.store.urls import resolve_store_url
from nenjim.journal.impl.ref.progress import Progress, silent
from nenjim.journal.impl.ref.rebuild import (
    JOURNAL_PROJECTIONS,
    journal_projection_statuses,
    rebuild_chain_projection,
)


class ProjectionStatus(Protocol):
    """Where one projection stands: its name, its log, its position, the log's head, the lag."""

    @property
    def name(self) -> str: ...

    @property
    def log(self) -> str: ...

    @property
    def position(self) -> int: ...

    @property
    def head(self) -> int: ...

    @property
    def lag(self) -> int: ...


class ProjectionFamily(Protocol):
    """The projections of one log."""

    def names(self) -> tuple[str, ...]:
        """The names of its projections."""
        ...

    def statuses(self, url: str) -> Sequence[ProjectionStatus]:
        """Where each stands in the store ``url`` (``StoreUnavailableError`` if the store
        holds no such log; nothing is created)."""
        ...

    def rebuild(self, url: str, name: str, progress: Progress) -> str:
        """Rebuild projection ``name`` from position 0 and swap it in; one summary line."""
        ...


@dataclass(frozen=True, slots=True)
class Family:
    """A family made of a log's three functions."""

    projection_names: tuple[str, ...]
    status_of: Callable[[str], Sequence[ProjectionStatus]]
    rebuild_of: Callable[[str, str, Progress], str]

    def names(self) -> tuple[str, ...]:
        return self.projection_names

    def statuses(self, url: str) -> Sequence[ProjectionStatus]:
        return self.status_of(url)

    def rebuild(self, url: str, name: str, progress: Progress) -> str:
        return self.rebuild_of(url, name, progress)


class UnknownProjectionError(ValueError):
    """A projection name no family knows."""


def _rebuild_journal(url: str, name: str, progress: Progress) -> str:
    report = rebuild_chain_projection(url, progress=progress)
    return f"{name}: {report.revisions} revisions of {report.artifacts} artifacts"


FAMILIES: list[ProjectionFamily] = [
    Family(JOURNAL_PROJECTIONS, journal_projection_statuses, _rebuild_journal),
    Family(STORAGE_PROJECTIONS, storage_projection_statuses, rebuild_storage_projection),
]
"""Every family of projections, in the order ``status`` lists them."""


def projection_names() -> tuple[str, ...]:
    """Every projection name, family by family."""
    return tuple(name for family in FAMILIES for name in family.names())


def statuses(url: str) -> list[ProjectionStatus]:
    """The status of every projection the store ``url`` holds a log for.

    A family whose log the store does not hold is left out; a store that
    holds none of them (or does not exist) raises ``StoreUnavailableError``,
    and nothing is created.
    """
    require_existing(url)
    found: list[ProjectionStatus] = []
    missing: list[StoreUnavailableError] = []
    for family in FAMILIES:
        try:
            found.extend(family.statuses(url))
        except StoreReadOnlyError:
            raise  # the log is there but could not be opened: leaving it out would mislead
        except StoreUnavailableError as error:
            missing.append(error)
    if missing and not found:  # the store holds no log of any family
        raise missing[0]
    return found


def rebuild(url: str, name: str, progress: Progress = silent) -> str:
    """Rebuild the projection ``name`` in the store ``url``; its family's summary line."""
    for family in FAMILIES:
        if name in family.names():
            require_existing(url)
            return family.rebuild(url, name, progress)
    raise UnknownProjectionError(
        f"unknown projection {name!r}; known: {', '.join(projection_names())}"
    )


def rebuild_all(url: str, progress: Progress = silent) -> tuple[str, ...]:
    """Rebuild every projection whose log the store holds; one line each."""
    lines: list[str] = []
    for family in FAMILIES:
        try:
            present = [status.name for status in family.statuses(url)]
        except StoreReadOnlyError:
            raise
        except StoreUnavailableError:
            continue  # the store holds no log of this family
        lines.extend(family.rebuild(url, name, progress) for name in present)
    return tuple(lines)


def require_existing(url: str) -> None:
    """Refuse an SQLite store whose file does not exist, before any family could create it
    (``memory:`` is refused by every family: a new in-memory store holds no log)."""
    location = resolve_store_url(url)
    if location.kind == "sqlite" and not Path(location.env["SQLITE_DBNAME"]).is_file():
        raise StoreUnavailableError(f"SQLite store {location.env['SQLITE_DBNAME']} does not exist")
