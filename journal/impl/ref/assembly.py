"""Construction of one Journal: service and process views of one object, plus its manager."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from journal import JournalService, JournalServiceManager
from journal.component import NenjimProcess
from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.log import JournalLog
from journal.impl.ref.manager import ReferenceJournalServiceManager
from journal.impl.ref.service import JournalAdministration, ReferenceJournal
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
    journal = ReferenceJournal(
        normalised, JournalIngestion(JournalLog(store), JournalChainsProjection())
    )
    manager = ReferenceJournalServiceManager(normalised, JournalAdministration(journal))
    return JournalAssembly(service=journal, process=journal, manager=manager)
