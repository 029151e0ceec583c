"""The Journal chain projection persisted in its log's store: one row per revision.

A row is ``(position, coordinate, journal_version, digest)``: the
notification that accepted the revision, its artifact, its Journal version
and its SHA-256. Texts are not copied: a revision loaded from the rows reads
its text from the log, by position, the first time it is needed, and checks
it against the row's digest then. A process that opens a store therefore
loads the rows, folds only the events after the stored position, and parses
nothing until a query asks for a revision.

The rows and the position are written together (see
``nenjim.infrastructure.tracking.projections``): a crash leaves the projection at
its last written position, and the next process resumes there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, cast

from eventsourcing.persistence import Tracking

from nenjim.domain.journal.chain import JournalChain
from nenjim.infrastructure.log import LogReader, ProjectionDamagedError
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.tracking.projections import (
    TRACKING_TABLE,
    Persisted,
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
    RowQuery,
    projection_recorder,
)
from nenjim.journal.impl.ref.chain_log import decode_event, read_after
from nenjim.projections.collector import cyclic_collection_paused
from nenjim.projections.journal_chains import (
    ChainFold,
    JournalChainsProjection,
    JournalWorldview,
    KnownTexts,
    LoggedRevision,
    ProjectionIntegrityError,
    StoredRevision,
)

if TYPE_CHECKING:
    from nenjim.infrastructure.log import LogApplication

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
    # An artifact's revisions by version: latest, exact, as-of and the coordinates, through
    # the index, for a Journal served from its store (see stored_queries).
    unique=(("coordinate", "journal_version"),),
)
REBUILD_BATCH = 20_000
"""Rows a rebuild commits at a time into the new generation."""
CATCH_UP_BATCH = 10_000
"""Events a catch-up folds between two writes of the rows (a kill loses at most these)."""


REBUILD_HINT = (
    "; nothing is served from it: rebuild it from the log with "
    "nenjim projections rebuild journal-chains --store {store}"
)


def damage(persisted: Persisted, log_end: int) -> str | None:
    """Why persisted chain rows cannot be what the engine wrote for a log whose last
    notification is ``log_end`` (``None``: they can be).

    Every event of a Journal log is a revision, so the rows are exactly one per
    position from 1 to the tracked one, each ``(int, str, str, str)``; and the
    tracked position is one the log holds. Checked on every load: a few passes
    over rows a start loads anyway.
    """
    where = f"the persisted chain projection ({CHAIN_TABLE.table}, tracked at position "
    where += f"{persisted.position})"
    if persisted.position > log_end:
        return (
            f"{where} is ahead of the log, which ends at notification {log_end}: "
            "the log lost events the projection holds"
        )
    rows = persisted.rows
    if [row[0] for row in rows] != list(range(1, persisted.position + 1)):
        return (
            f"{where} holds {len(rows)} rows, not one for each position from 1 to "
            f"{persisted.position}: rows were deleted, added or renumbered, or the "
            "tracked position was changed"
        )
    for row in rows:
        if len(row) != 4 or not all(type(value) is str for value in row[1:]):
            return f"{where}: the row at position {row[0]} holds {row!r}, not three texts"
    return None


ROW_PAGE = 5_000
"""Persisted rows :class:`ProjectionCheck` reads at a time."""


class ProjectionCheck:
    """How the chain projection persisted in a log's store differs from the rows of the
    log's revisions, fed in log order (:meth:`add`) by a pass over the whole log. Reads only.

    Each row fed is compared with the persisted row at the same index, read a page at a
    time alongside; :meth:`problem` is the first difference, in this order: a damaged
    table (a missing generation, a row past the tracked position), then :func:`damage`'s
    checks, then the first row that differs. What is held is a page of rows, not the
    projection.
    """

    def __init__(self, log: LogApplication) -> None:
        self._store = projection_recorder(log)
        self._fed = 0
        self._read = 0  # persisted rows read so far
        self._after = 0  # the position of the last one
        self._last: object = None
        self._numbered = True  # the rows read so far are at positions 1, 2, 3, ...
        self._mistyped: Row | None = None
        self._differs: str | None = None
        self._damaged: str | None = None
        self._page: Iterator[Row] = iter(())
        self._done = False
        self._state: ProjectionState | None = None
        try:
            state = self._store.state(CHAIN_PROJECTION)
        except ProjectionDamagedError as error:
            self._damaged, self._done = str(error), True
            return
        if state is None or state.version != CHAIN_TABLE.version:
            self._done = True  # nothing of this version persisted: no rows to compare
        self._state = state

    def _next(self) -> Row | None:
        """The next persisted row in position order, or ``None`` after the last."""
        row = next(self._page, None)
        if row is None and not self._done:
            assert self._state is not None
            try:
                page = self._store.select(
                    CHAIN_TABLE,
                    RowQuery(
                        bounds=(("position", ">", self._after),),
                        order=("position",),
                        limit=ROW_PAGE,
                    ),
                )
            except ProjectionDamagedError as error:
                self._damaged, self._done = str(error), True
                return None
            if len(page) < ROW_PAGE:
                self._done = True
            self._page = iter(page)
            row = next(self._page, None)
        if row is not None:
            self._seen(row)
        return row

    def _seen(self, row: Row) -> None:
        self._read += 1
        self._last = row[0]
        if type(row[0]) is int:
            self._after = row[0]
        else:
            self._done = True  # not a position: nothing sorts after it
        self._numbered = self._numbered and row[0] == self._read
        if self._mistyped is None and (
            len(row) != 4 or not all(type(value) is str for value in row[1:])
        ):
            self._mistyped = row

    def add(self, expected: Row) -> None:
        """The row of the next revision of the log."""
        self._fed += 1
        if self._damaged is not None:
            return
        found = self._next()
        if found is not None and self._differs is None and tuple(found) != expected:
            self._differs = (
                f"the persisted chain projection's row at position {found[0]} holds "
                f"{tuple(found[1:])!r}; the log says {expected[1:]!r}"
            )

    def problem(self) -> str | None:
        """How the persisted projection differs from the rows fed (``None``: it does not,
        or nothing is persisted)."""
        while self._damaged is None and self._next() is not None:
            pass  # the rows past the log's: counted and checked as damage() does
        if self._damaged is not None:
            return self._damaged
        if self._state is None or self._state.version != CHAIN_TABLE.version:
            return None
        state = self._state
        last = self._last
        if self._read and (type(last) is not int or last > state.position):
            return (
                f"projection {CHAIN_TABLE.name}: {CHAIN_TABLE.generation_table(state.generation)} "
                f"holds a row at position {self._last!r}, past the position {state.position} "
                f"that {TRACKING_TABLE} tracks"
            )
        where = f"the persisted chain projection ({CHAIN_TABLE.table}, tracked at position "
        where += f"{state.position})"
        if state.position > self._fed:
            return (
                f"{where} is ahead of the log, which ends at notification {self._fed}: "
                "the log lost events the projection holds"
            )
        if not self._numbered or self._read != state.position:
            return (
                f"{where} holds {self._read} rows, not one for each position from 1 to "
                f"{state.position}: rows were deleted, added or renumbered, or the "
                "tracked position was changed"
            )
        if self._mistyped is not None:
            row = self._mistyped
            return f"{where}: the row at position {row[0]} holds {row!r}, not three texts"
        return self._differs


def chain_row(stored: StoredRevision) -> Row:
    """The row of one revision."""
    return (stored.position, stored.coordinate, stored.version_key, stored.digest)


def text_loader(log: LogReader) -> Callable[[int], LoggedRevision]:
    """Reads the revision accepted at a position, from its event in the log."""

    def load(position: int) -> LoggedRevision:
        notification = log.at(position)
        if notification is None:
            raise ProjectionIntegrityError(
                f"notification {position}: the persisted chain projection names it, "
                "the log does not hold it"
            )
        event = decode_event(log, notification)
        if not isinstance(event, JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted):
            raise ProjectionIntegrityError(f"notification {position}: no revision text")
        return LoggedRevision(event.coordinate, event.journal_version, event.digest, event.text)

    return load


class PersistedChains:
    """The chain projection of one log, kept in that log's store.

    ``where`` is the store's URL as messages show it.
    :meth:`open` loads what the store holds into an empty projection;
    :meth:`catch_up` folds the log after it; :meth:`persist` writes the rows
    the store lacks with the new position (``read_only``: never; the store
    only reads, as a hot standby does).
    """

    def __init__(
        self,
        projection: JournalChainsProjection,
        log: LogReader,
        store: ProjectionRecorder,
        *,
        batch: int = CATCH_UP_BATCH,
        where: str = "URL",
        read_only: bool = False,
    ) -> None:
        self._projection = projection
        self._hint = REBUILD_HINT.format(store=where)
        self._log = log
        self._store = store
        self._batch = batch
        self._opened = False
        self._written = 0  # the position last read from or written to the store
        # A store that only reads (a hot standby) keeps the rows its primary wrote.
        self._read_only = read_only

    @property
    def view(self) -> JournalWorldview:
        """The projection's latest view."""
        return self._projection.view

    def open(self) -> JournalWorldview:
        """Load the persisted rows once, into the (still empty) projection.

        Raises :class:`ProjectionIntegrityError` for a projection that cannot be
        what a write left (see :func:`damage`): nothing is served from it.
        """
        if not self._opened and self._projection.view.position == 0:
            try:
                # Indexes first: a table its index was dropped from may repeat a key.
                self._store.ensure_indexes(CHAIN_TABLE, create=not self._read_only)
                persisted = self._store.load(CHAIN_TABLE)
            except ProjectionDamagedError as error:
                raise ProjectionIntegrityError(f"{error}{self._hint}") from None
            problem = damage(persisted, self._log.last_position())
            if problem is not None:
                raise ProjectionIntegrityError(f"{problem}{self._hint}")
            self._written = persisted.position
            load = text_loader(self._log)
            # The rows are the table's columns, as the fold wrote them (checked above).
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
        if position <= self._written or self._read_only:
            return False  # the store holds this much already (or cannot): no write
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
    log: LogReader, store: ProjectionRecorder, progress: Progress | None = None
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
