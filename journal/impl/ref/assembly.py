"""Construction of one Journal: service and process views of one object, plus its manager."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from journal import JournalService, JournalServiceManager
from journal.component import NenjimProcess
from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.loader import RootLoader
from journal.impl.ref.log import JournalLog, name_identity, root_identity
from journal.impl.ref.manager import ReferenceJournalServiceManager
from journal.impl.ref.progress import Progress
from journal.impl.ref.publication import open_publication
from journal.impl.ref.service import ReferenceJournal
from projections.journal_chains import JournalChainsProjection


@dataclass(frozen=True, slots=True)
class JournalAssembly:
    """What ``build_journal`` made: ``service is process``; ``manager`` is bound to it."""

    service: JournalService
    process: NenjimProcess
    manager: JournalServiceManager


def build_journal(
    root: str | os.PathLike[str],
    *,
    store: str | None = None,
    journal: str | None = None,
    progress: Progress | None = None,
) -> JournalAssembly:
    """Construct one Journal over ``root`` (normalised to an absolute path, not yet read).

    ``store`` selects the event store by URL; ``None`` means
    ``$NENJIM_STORE_URL``, else in memory. The store is opened here and
    belongs to one Journal: ``journal`` names a Journal whose store is shared
    on purpose (on PostgreSQL its schema is ``journal_<name>`` unless the URL
    names one); without it the Journal is its root's resolved path. A store
    holding another Journal raises ``journal.exception.JournalStoreError``. A
    root that is not an existing directory claims no store: its start fails.
    ``progress`` is told how a start advances (see ``journal.impl.ref.progress``).
    """
    normalised = Path(os.path.abspath(os.fspath(root)))
    if journal is not None:
        identity: str | None = name_identity(journal)
    elif _is_directory(normalised):
        identity = root_identity(os.path.realpath(normalised))
    else:
        identity = None
    ingestion = JournalIngestion(JournalLog(store, identity=identity), JournalChainsProjection())
    served, publisher = open_publication(close_store=ingestion.close)
    loader = RootLoader(normalised, ingestion, publisher, progress=progress)
    # The process holds the loader only until start(); the manager holds it for refresh.
    process = ReferenceJournal(served, starter=loader.load)
    manager = ReferenceJournalServiceManager(normalised, loader)
    return JournalAssembly(service=process, process=process, manager=manager)


def _is_directory(root: Path) -> bool:
    """True if ``root`` is a directory; one that cannot be examined claims no store."""
    try:
        return root.is_dir()
    except OSError:  # the start reports it as a JournalRootError, naming the root
        return False
