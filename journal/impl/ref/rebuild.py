"""The Journal chain projection of a store: its status, and its rebuild from position 0."""

from __future__ import annotations

import time
from dataclasses import dataclass

from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.tracking.projections import (
    MaintainedProjection,
    ProjectionStatus,
    projection_recorder,
)
from nenjim.journal.impl.ref.chain_table import (
    CHAIN_PROJECTION,
    CHAIN_TABLE,
    rebuild_chain_table,
)
from nenjim.journal.impl.ref.log import JournalLog


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """What a rebuild swapped in, and how long it took."""

    events: int
    artifacts: int
    seconds: float

    @property
    def revisions(self) -> int:
        """Revisions in the rebuilt projection (one per event of the Journal log)."""
        return self.events


def chain_status(store: str) -> ProjectionStatus:
    """The status of the chain projection of the Journal log in ``store``.

    The store must exist and hold a Journal log (``StoreUnavailableError``
    otherwise: nothing is created). A projection never written, or written
    by another version of its fold, is at position 0.
    """
    with JournalLog(store, read_only=True) as log:
        head = LogReader(log).last_position()
        state = projection_recorder(log).state(CHAIN_PROJECTION)
        position = 0 if state is None or state.version != CHAIN_TABLE.version else state.position
        return ProjectionStatus(CHAIN_PROJECTION, log.name, position, head, head - position)


def rebuild_chain_projection(
    store: str | None, *, identity: str | None = None, progress: Progress | None = None
) -> RebuildReport:
    """Fold the whole Journal log in ``store`` into a fresh generation of the chain
    projection's table and swap it in (readers never see a half-built one).

    The store must exist and hold a Journal log (``StoreUnavailableError``
    otherwise: nothing is created); ``identity`` checks whose it is.
    """
    with JournalLog(store, create=False, identity=identity) as log:
        started = time.perf_counter()
        rebuilt = rebuild_chain_table(LogReader(log), projection_recorder(log), progress)
        return RebuildReport(
            rebuilt.state.position, rebuilt.artifacts, time.perf_counter() - started
        )


def _rebuild_chains(store: str, progress: Progress) -> str:
    report = rebuild_chain_projection(store, progress=progress)
    return f"{CHAIN_PROJECTION}: {report.revisions} revisions of {report.artifacts} artifacts"


CHAINS = MaintainedProjection(CHAIN_PROJECTION, chain_status, _rebuild_chains)
"""The chain projection, as ``nenjim projections`` maintains it."""
