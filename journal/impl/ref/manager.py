"""The passive manager: root reporting and explicit refresh, nothing else."""

from __future__ import annotations

from pathlib import Path

from journal import JournalServiceManager
from journal.impl.ref.service import JournalAdministration
from journal.model import RefreshReport


class ReferenceJournalServiceManager(JournalServiceManager):
    """Bound to one Journal through its administration view."""

    def __init__(self, root: Path, administration: JournalAdministration) -> None:
        self._root = root
        self._administration = administration

    @property
    def journal_root(self) -> Path:
        return self._root

    def refresh(self) -> RefreshReport:
        return self._administration.refresh()
