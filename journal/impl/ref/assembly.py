"""Construction of one Journal: service and process views of one object, plus its manager."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from journal import JournalService, JournalServiceManager
from journal.component import NenjimProcess
from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.loader import RootLoader
from journal.impl.ref.log import JournalLog
from journal.impl.ref.manager import ReferenceJournalServiceManager
from journal.impl.ref.publication import open_publication
from journal.impl.ref.service import ReferenceJournal
from projections.journal_chains import JournalChainsProjection


@dataclass(frozen=True, slots=True)
class JournalAssembly:
    """What ``build_journal`` made: ``service is process``; ``manager`` is bound to it."""

    service: JournalService
    process: NenjimProcess
    manager: JournalServiceManager


def build_journal(root: str | os.PathLike[str], *, store: str | None = None) -> JournalAssembly:
    """Construct one Journal over ``root`` (normalised to an absolute path, not yet read).

    ``store`` selects the event store by URL; ``None`` keeps it in memory.
    """
    normalised = Path(os.path.abspath(os.fspath(root)))
    ingestion = JournalIngestion(JournalLog(store), JournalChainsProjection())
    served, publisher = open_publication(close_store=ingestion.close)
    loader = RootLoader(normalised, ingestion, publisher)
    # The process holds the loader only until start(); the manager holds it for refresh.
    journal = ReferenceJournal(served, starter=loader.load)
    manager = ReferenceJournalServiceManager(normalised, loader)
    return JournalAssembly(service=journal, process=journal, manager=manager)
