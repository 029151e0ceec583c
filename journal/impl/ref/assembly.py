"""Construction of one Journal: service and process views of one object, plus its manager."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nenjim.infrastructure.log import resolve_store_url
from nenjim.journal import JournalService, JournalServiceManager
from nenjim.journal.component import NenjimProcess
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.loader import RootLoader
from nenjim.journal.impl.ref.log import JournalLog, name_identity, root_identity
from nenjim.journal.impl.ref.manager import ReferenceJournalServiceManager
from nenjim.journal.impl.ref.opening import IngestionHandle
from nenjim.journal.impl.ref.publication import open_publication
from nenjim.journal.impl.ref.service import ReferenceJournal
from nenjim.journal.impl.ref.store_errors import store_errors
from nenjim.projections.journal_chains import JournalChainsProjection


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
    progress: Callable[[str, int, int], None] | None = None,
) -> JournalAssembly:
    """Construct one Journal over ``root`` (normalised to an absolute path, not yet read).

    ``store`` selects the event store by URL; ``None`` means
    ``$NENJIM_STORE_URL``, else in memory. A store belongs to one Journal:
    ``journal`` names a Journal whose store is shared on purpose (on
    PostgreSQL its schema is ``journal_<name>`` unless the URL names one);
    without it the Journal is its root's resolved path. The store is owned
    from the first start that succeeds: a start records its Journal in the
    store once it accepted every file, and a start that fails before leaves
    the store unclaimed. When ``root`` is an existing directory the store is
    opened here, and one holding another Journal raises
    ``nenjim.journal.exception.JournalStoreError`` at once; otherwise it is opened
    by ``start()``, once the root exists (a root still missing then fails
    with ``JournalRootError`` and opens no store). Every store failure
    (unreachable, unwritable, of another version, an unsupported URL) is a
    ``JournalStoreError``. ``progress(task, done, total)`` is told how a start
    advances, ``done`` from 0 up to ``total``.
    """
    normalised = Path(os.path.abspath(os.fspath(root)))
    named = None if journal is None else name_identity(journal)
    with store_errors("the store URL"):
        location = resolve_store_url(store)  # the URL of $NENJIM_STORE_URL as it is now
    where = location.where

    def open_ingestion() -> JournalIngestion:
        identity = named or root_identity(os.path.realpath(normalised))
        with store_errors(where):
            log = JournalLog(location.url, identity=identity)
        return JournalIngestion(log, JournalChainsProjection(), persisted=True)

    handle = IngestionHandle(open_ingestion, where)
    served, publisher = open_publication(close_store=handle.close)
    loader = RootLoader(normalised, handle, publisher, progress=progress)
    if _is_directory(normalised):
        handle.open()  # a store holding another Journal is refused before anything is read
    # The process holds the loader only until start(); the manager holds it for refresh.
    process = ReferenceJournal(served, starter=loader.load)
    manager = ReferenceJournalServiceManager(normalised, loader)
    return JournalAssembly(service=process, process=process, manager=manager)


def _is_directory(root: Path) -> bool:
    """True if ``root`` is a directory; one that cannot be examined opens its store at start."""
    try:
        return root.is_dir()
    except OSError:  # the start reports it as a JournalRootError, naming the root
        return False
