"""The passive manager: root reporting and explicit refresh, nothing else."""

from __future__ import annotations

from pathlib import Path

from journal import JournalServiceManager
from journal.impl.ref.loader import RootLoader
from journal.model import RefreshReport


class ReferenceJournalServiceManager(JournalServiceManager):
    """Bound to one Journal through the loader of its root; the process never holds it."""

    def __init__(self, root: Path, loader: RootLoader) -> None:
        self._root = root
        self._loader = loader

    @property
    def journal_root(self) -> Path:
        return self._root

    def refresh(self) -> RefreshReport:
        return self._loader.refresh()
