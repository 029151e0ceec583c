"""Construction of one Journal: service and process views of one object, plus its manager."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from domain.journal.errors import JournalRootError
from infrastructure.log.urls import MEMORY_URL
from journal import JournalService, JournalServiceManager
from journal.component import NenjimProcess
from journal.impl.ref.filesystem import scan_root
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
    root that is not an existing directory opens no store (none is created or
    claimed): its start fails with ``JournalRootError`` naming the root.
    ``progress`` is told how a start advances (see ``journal.impl.ref.progress``).
    """
    normalised = Path(os.path.abspath(os.fspath(root)))
    identity = name_identity(journal) if journal is not None else None
    if _is_directory(normalised):
        log = JournalLog(store, identity=identity or root_identity(os.path.realpath(normalised)))
        loadable = True
    else:
        # Nothing can load: the store is not opened, so none is created or claimed.
        log = JournalLog(MEMORY_URL)
        loadable = False
    ingestion = JournalIngestion(log, JournalChainsProjection(), persisted=loadable)
    served, publisher = open_publication(close_store=ingestion.close)
    loader = RootLoader(normalised, ingestion, publisher, progress=progress)
    # The process holds the loader only until start(); the manager holds it for refresh.
    starter = loader.load if loadable else functools.partial(_refuse_missing_root, normalised)
    process = ReferenceJournal(served, starter=starter)
    manager = ReferenceJournalServiceManager(normalised, loader)
    return JournalAssembly(service=process, process=process, manager=manager)


def _refuse_missing_root(root: Path) -> None:
    """The start of a Journal built over a root that was not a directory."""
    scan_root(root)  # raises the root's own fault: missing, not a directory, unreadable
    raise JournalRootError(
        "journal root did not exist when the Journal was built; build it again", path=root
    )


def _is_directory(root: Path) -> bool:
    """True if ``root`` is a directory; one that cannot be examined claims no store."""
    try:
        return root.is_dir()
    except OSError:  # the start reports it as a JournalRootError, naming the root
        return False
