"""The passive manager: root reporting and explicit refresh, nothing else.

Beside it, :func:`ingest_text` is the reference Journal's internal ingestion
entry point: one text, filesystem-independent, queryable at once. It is a
function of this module rather than a method, so that neither the manager
nor the assembly offers mutation beyond ``refresh()``.
"""

from __future__ import annotations

from pathlib import Path

from nenjim.journal import JournalServiceManager
from nenjim.journal.impl.ref.loader import RootLoader
from nenjim.journal.model import JournalRevision, RefreshReport


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


def ingest_text(manager: JournalServiceManager, text: str) -> JournalRevision:
    """Ingest one complete Journal text into the started Journal that ``manager`` administers;
    the accepted revision, queryable through its service as soon as this returns.

    The text is judged as a root file's text is: parsed and validated whole,
    its digest taken over its exact UTF-8 bytes, then checked against its
    chain, all in one atomic ingestion (a rejected text changes nothing). An
    already accepted text returns the revision accepted then. The order of
    checks: the lifecycle first (``LifecycleError`` unless the Journal started
    successfully and runs), then the text (``TypeError`` unless a ``str``; a
    ``JournalError`` subclass for every rejection). ``manager`` must come from
    ``nenjim.journal.impl.ref.build_journal`` (``TypeError`` otherwise).
    """
    if not isinstance(manager, ReferenceJournalServiceManager):
        raise TypeError(
            f"ingest_text needs the manager of build_journal, got {type(manager).__name__}"
        )
    return manager._loader.ingest_text(text)
