"""Rebuilds the chain projection from a Journal log, from position 0."""

from __future__ import annotations

import time
from dataclasses import dataclass

from infrastructure.log import LogReader
from journal.impl.ref.log import JournalLog
from projections.journal_chains import JournalChainsProjection, JournalWorldview


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """The rebuilt worldview and how long the replay took."""

    view: JournalWorldview
    seconds: float

    @property
    def revisions(self) -> int:
        """Revisions in the rebuilt view."""
        return sum(len(chain.stored) for chain in self.view.chains.values())


def rebuild_chain_projection(store: str | None, *, identity: str | None = None) -> RebuildReport:
    """Replay the whole log in ``store`` into a fresh projection.

    The store must exist and hold a Journal log (``StoreUnavailableError``
    otherwise: nothing is created); ``identity`` checks whose it is.
    """
    log = JournalLog(store, create=False, identity=identity)
    try:
        started = time.perf_counter()
        view = JournalChainsProjection().catch_up(LogReader(log))
        return RebuildReport(view, time.perf_counter() - started)
    finally:
        log.close()
