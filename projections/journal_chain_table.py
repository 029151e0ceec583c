"""The Journal chain projection persisted in its log's store: one row per revision.

A row is ``(position, coordinate, journal_version, digest)``: the
notification that accepted the revision, its artifact, its Journal version
and its SHA-256. Texts are not copied: a revision loaded from the rows reads
its text from the log, by position, the first time it is needed, and checks
it against the row's digest then. A process that opens a store therefore
loads the rows, folds only the events after the stored position, and parses
nothing until a query asks for a revision.

The rows and the position are written together (see
``infrastructure.log.projection_store``): a crash leaves the projection at
its last written position, and the next process resumes there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import cast

from eventsourcing.persistence import Tracking

from infrastructure.log import LogReader
from infrastructure.log.projection_store import (
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
)
from projections.collector import cyclic_collection_paused
from projections.journal_chains import (
    ChainFold,
    JournalChainsProjection,
    JournalWorldview,
    KnownTexts,
    ProjectionIntegrityError,
    StoredRevision,
    decode_event,
    read_after,
)

CHAIN_PROJECTION = "journal-chains"
CHAIN_TABLE = ProjectionTable(
    CHAIN_PROJECTION,
    "journal_chain_revisions",
    (
        ("position", "integer"),
        ("coordinate", "text"),
        ("journal_version", "text"),
        ("digest", "text"),
    ),
    version=1,
)
REBUILD_BATCH = 20_000
"""Rows a rebuild commits at a time into the new generation."""
CATCH_UP_BATCH = 10_000
"""Events a catch-up folds between two writes of the rows (a kill loses at most these)."""

RebuildProgress = Callable[[str, int, int], None]


def chain_row(stored: StoredRevision) -> Row:
    """The row of one revision."""
    return (stored.position, stored.coordinate, stored.version_key, stored.digest)


def text_loader(log: LogReader) -> Callable[[int], str]:
    """Reads the text of the revision accepted at a position, from the log."""

    def load(position: int) -> str:
        notification = log.at(position)
        if notification is None:
            raise ProjectionIntegrityError(
                f"notification {position}: the persisted chain projection names it, "
                "the log does not hold it"
            )
        text = getattr(decode_event(log, notification), "text", None)
        if not isinstance(text, str):
            raise ProjectionIntegrityError(f"notification {position}: no revision text")
        return text

    return load


class PersistedChains:
    """The chain projection of one log, kept in that log's store.

    :meth:`open` loads what the store holds into an empty projection;
    :meth:`catch_up` folds the log after it; :meth:`persist` writes the rows
    the store lacks with the new position.
    """

    def __init__(
        self,
        projection: JournalChainsProjection,
        log: LogReader,
        store: ProjectionRecorder,
        *,
        batch: int = CATCH_UP_BATCH,
    ) -> None:
        self._projection = projection
        self._log = log
        self._store = store
        self._batch = batch
        self._opened = False
        self._written = 0  # the position last read from or written to the store

    @property
    def view(self) -> JournalWorldview:
        """The projection's latest view."""
        return self._projection.view

    def open(self) -> JournalWorldview:
        """Load the persisted rows once, into the (still empty) projection."""
        if not self._opened and self._projection.view.position == 0:
            persisted = self._store.load(CHAIN_TABLE)
            self._written = persisted.position
            load = text_loader(self._log)
            # The rows are the table's columns, as the fold wrote them.
            rows = cast(list[tuple[int, str, str, str]], persisted.rows)
            self._projection.load(StoredRevision.from_rows(rows, load))
        self._opened = True
        return self._projection.view

    def catch_up(self, parsed: KnownTexts | None = None) -> JournalWorldview:
        """Open, then fold every event the log holds after the view, writing the rows back
        every ``batch`` events (a process killed meanwhile resumes from the last write)."""
        self.open()
        events = read_after(self._log, self._projection.view.position)
        with cyclic_collection_paused():
            while chunk := list(islice(events, self._batch)):
                self._projection.apply(chunk, parsed)
                self.persist()
        return self._projection.view

    def persist(self) -> bool:
        """Write the revisions the store lacks, and the view's position, in one transaction."""
        position = self._projection.view.position
        if position <= self._written:
            return False  # the store holds this much already: no write transaction
        written = self._store.write(
            CHAIN_TABLE,
            lambda after: (chain_row(s) for s in self._projection.revisions_after(after)),
            Tracking(CHAIN_PROJECTION, position),
        )
        self._written = position
        return written


@dataclass(frozen=True, slots=True)
class ChainRebuild:
    """A rebuilt chain table: its tracking row (its position is its revision count) and how
    many artifacts its revisions belong to."""

    state: ProjectionState
    artifacts: int


def rebuild_chain_table(
    log: LogReader, store: ProjectionRecorder, progress: RebuildProgress | None = None
) -> ChainRebuild:
    """Fold the whole log into a fresh generation of the table and swap it in.

    Each event is checked as a catch-up checks it; only the chains' heads
    are kept in memory. ``progress(task, done, total)`` is told the events
    folded so far.
    """
    head = log.last_position()
    fold = ChainFold(JournalWorldview.empty(), keep=False)

    def batches() -> Iterator[tuple[Sequence[Row], int]]:
        rows: list[Row] = []
        last = 0
        for notification in log.notifications(0):
            rows.append(fold.add_row(notification.id, decode_event(log, notification)))
            last = notification.id
            if len(rows) == REBUILD_BATCH:
                yield rows, last
                rows = []
                if progress is not None:
                    progress(f"rebuilding {CHAIN_PROJECTION}", last, max(head, last))
        yield rows, last
        if progress is not None:
            progress(f"rebuilding {CHAIN_PROJECTION}", last, last)

    with cyclic_collection_paused():
        state = store.rebuild(CHAIN_TABLE, batches())
    return ChainRebuild(state, fold.artifacts)


def persisted_rows(store: ProjectionRecorder) -> Iterable[Row]:
    """The rows the store holds for the chain projection (for read-model comparisons)."""
    return store.load(CHAIN_TABLE).rows
