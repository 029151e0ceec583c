"""Public composed model of the Journal API: frozen, collections immutable."""

from __future__ import annotations

from dataclasses import dataclass

from domain.journal.document import (
    Dependency,
    JournalDocument,
    JournalRevision,
    Preference,
    Release,
)
from domain.journal.values import Policy


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
