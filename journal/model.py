"""Public composed model of the Journal API: frozen, collections immutable."""

from __future__ import annotations

from dataclasses import dataclass

from nenjim.domain.journal.document import (
    Dependency,
    JournalDocument,
    JournalRevision,
    Preference,
    Release,
)
from nenjim.domain.journal.values import Policy


@dataclass(frozen=True, slots=True)
class RefreshReport:
    """What one ``refresh()`` newly accepted, in ingestion order."""

    accepted: tuple[JournalRevision, ...] = ()


__all__ = [
    "Dependency",
    "JournalDocument",
    "JournalRevision",
    "Policy",
    "Preference",
    "RefreshReport",
    "Release",
]


def __dir__() -> list[str]:
    # The API only: names imported for the definitions are attributes too, not API.
    return sorted(__all__)
