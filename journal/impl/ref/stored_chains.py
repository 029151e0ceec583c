"""The persisted chain projection read by artifact, through its index, and caught up in batches.

A Journal served from its store holds no worldview: an artifact's chain is
read from the chain table (:data:`~nenjim.journal.impl.ref.chain_table.CHAIN_TABLE`)
by its coordinate when a query first asks for it, and kept in a bounded
:class:`~nenjim.journal.impl.ref.revision_cache.ChainCache`. Its texts are
read from the log by position and checked against the row's digest when a
query first needs them.

A catch-up folds only the events after the table's tracked position, a
batch at a time; each batch is checked against the chains of the artifacts
it names, read from the table, and its rows are written with the new
position. Memory is bounded by the batch and the cache, and a start takes
time in what is new, not in the log's length.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from itertools import islice
from types import MappingProxyType
from typing import cast
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Tracking

from nenjim.domain.journal.values import ArtifactCoordinate
from nenjim.infrastructure.log import (
    IncompatibleStoreError,
    LogReader,
    ProjectionDamagedError,
    StoreLocation,
)
from nenjim.infrastructure.tracking.projections import (
    Comparison,
    ProjectionRecorder,
    RowQuery,
)
from nenjim.journal.impl.ref.chain_log import read_after
from nenjim.journal.impl.ref.chain_table import (
    CHAIN_PROJECTION,
    CHAIN_TABLE,
    REBUILD_HINT,
    text_loader,
)
from nenjim.journal.impl.ref.revision_cache import DEFAULT_CACHE_SIZE, ChainCache
from nenjim.projections.journal_chains import (
    ChainFold,
    ChainSnapshot,
    JournalWorldview,
    ProjectionIntegrityError,
    StoredRevision,
)

FOLD_BATCH = 1_000
"""Events a catch-up reads, checks and writes at a time (their texts are held meanwhile)."""

_Row = tuple[int, str, str, str]


class StoredChains:
    """The chains of one Journal log, as its store's chain table holds them, and the rows
    this reader folded after it, up to :attr:`position` (``location``: the store, as
    messages name it).

    A reader that may write (``writable``) writes the rows it folds, with their
    position, so the next start begins there. One that may not (a read-only
    store, a hot standby) keeps them in memory until the table's tracked
    position passes them: its memory grows only with what no writer persisted.
    """

    def __init__(
        self,
        log: LogReader,
        store: ProjectionRecorder,
        *,
        location: StoreLocation,
        cache_size: int = DEFAULT_CACHE_SIZE,
        writable: bool = True,
    ) -> None:
        self._log = log
        self._store = store
        self._writable = writable
        self._where = location.where
        self._hint = REBUILD_HINT.format(store=location.display)
        self._load = text_loader(log)
        self.cache = ChainCache(cache_size)
        self.position = 0
        """The log position the answers reflect (table and held rows)."""
        # The table's rows read are those up to a position, then the rows folded after it
        # and not written (read only): one pair, replaced whole, so a reader sees one state.
        self._read: tuple[int, list[_Row]] = (0, [])
        self._lock = threading.Lock()
        self._epoch = 0  # moved by each catch-up that forgot chains: a read before it is stale
        self._checked = False  # whether a catch-up has read the table's tracking row yet

    def open(self) -> int:
        """Create the table's indexes if it lacks them (when writable; else check that its
        rows repeat no key), then :meth:`catch_up`. ``ProjectionIntegrityError`` for rows
        that repeat a key."""
        self._tracked()  # a table of a newer fold is refused before anything is read of it
        try:
            self._store.ensure_indexes(CHAIN_TABLE, create=self._writable)
        except ProjectionDamagedError as error:
            raise ProjectionIntegrityError(f"{error}{self._hint}") from None
        return self.catch_up()

    def catch_up(self) -> int:
        """Fold (and write, when writable) what the log holds after the tracked position;
        how many events were new to this reader. ``ProjectionIntegrityError`` for an event
        that contradicts the log or its chain, or a table ahead of the log."""
        with self._lock:
            end = self._log.last_position()
            if end == self.position and self._checked:
                return 0  # nothing appended since the last catch-up: one read, no more
            tracked = self._tracked()
            if tracked > end:
                raise ProjectionIntegrityError(
                    f"the persisted chain projection ({CHAIN_TABLE.table}) is tracked at "
                    f"position {tracked}, ahead of the log, which ends at notification {end}"
                    f"{self._hint}"
                )
            held = [row for row in self._read[1] if row[0] > tracked]
            folded = held[-1][0] if held else tracked
            while events := list(islice(read_after(self._log, folded), FOLD_BATCH)):
                rows = self._fold(tracked, held, folded, events)
                last = rows[-1][0]
                if not self._writable:
                    held.extend(rows)
                elif self._store.write(
                    CHAIN_TABLE,
                    _after(rows),
                    Tracking(CHAIN_PROJECTION, last),
                ):
                    tracked = last
                else:
                    tracked = max(last, self._tracked())  # another writer got there first
                folded = max(last, tracked)
            new = folded - self.position
            if new:
                self._epoch += 1
                self._forget_changed(folded, held)
            self._read, self.position = (tracked, held), folded
            self._checked = True
            return new

    def chain(self, name: str) -> ChainSnapshot | None:
        """The chain of the artifact whose coordinate text is ``name``, or ``None``."""
        chain = self.cache.get(name)
        if chain is not None:
            return chain
        epoch = self._epoch
        found = self._chains((name,), *self._read).get(name)
        if found is not None:
            with self._lock:
                if epoch == self._epoch:  # no catch-up since: the rows are current
                    self.cache.put(name, found)
        return found

    def coordinate_names(self, after: str | None = None, limit: int | None = None) -> list[str]:
        """The coordinates' texts in code point order: those after ``after``, at most
        ``limit`` of them (every one by default)."""
        table, held_rows = self._read
        bounds: list[tuple[str, Comparison, int | str]] = [("position", "<=", table)]
        if after is not None:
            bounds.append(("coordinate", ">", after))
        query = RowQuery(
            columns=("coordinate",),
            bounds=tuple(bounds),
            order=("coordinate",),
            distinct=True,
            limit=limit,
        )
        names = [cast(str, row[0]) for row in self._store.select(CHAIN_TABLE, query)]
        held = {row[1] for row in held_rows if after is None or row[1] > after}
        if held:
            names = sorted(held.union(names))
        return names if limit is None else names[:limit]

    def _forget_changed(self, folded: int, held: list[_Row]) -> None:
        """Drop the cached chains that gained revisions after :attr:`position` up to
        ``folded`` (whoever wrote their rows); all of them when more changed than it holds."""
        if not len(self.cache):
            return
        query = RowQuery(
            columns=("coordinate",),
            bounds=(("position", ">", self.position), ("position", "<=", folded)),
            distinct=True,
            limit=self.cache.size + 1,
        )
        changed = {cast(str, row[0]) for row in self._store.select(CHAIN_TABLE, query)}
        changed.update(row[1] for row in held if row[0] > self.position)
        if len(changed) > self.cache.size:
            self.cache.clear()
        else:
            self.cache.forget(changed)

    def _tracked(self) -> int:
        """The table's tracked position (0: none of this fold's version). A table of a newer
        fold is refused: its rows cannot be read, and folding the whole log instead would
        hold it all in memory (read only) or never be written (a newer table is kept)."""
        state = self._store.state(CHAIN_PROJECTION)
        if state is not None and state.version > CHAIN_TABLE.version:
            what = f"a chain projection ({CHAIN_TABLE.table}) written by a newer nenjim,"
            raise IncompatibleStoreError(
                self._where, what, state.version, CHAIN_TABLE.version, CHAIN_TABLE.version
            )
        return 0 if state is None or state.version != CHAIN_TABLE.version else state.position

    def _fold(
        self,
        tracked: int,
        held: list[_Row],
        folded: int,
        events: Sequence[tuple[int, DomainEventProtocol[UUID]]],
    ) -> list[_Row]:
        """The rows of ``events`` (after ``folded``), each checked against the chains so far:
        the table's up to ``tracked`` and the ``held`` rows."""
        names = {getattr(event, "coordinate", None) for _, event in events}
        known = self._chains(tuple(n for n in names if isinstance(n, str)), tracked, held)
        chains = {chain.coordinate: chain for chain in known.values()}
        fold = ChainFold(JournalWorldview(MappingProxyType(chains), folded), keep=False)
        return [fold.add_row(position, event) for position, event in events]

    def _chains(
        self, names: tuple[str, ...], position: int, held: list[_Row]
    ) -> dict[str, ChainSnapshot]:
        """The chains of ``names``: the table's rows up to ``position``, then the ``held``
        rows, by name (those that hold any)."""
        # The position bound is applied here, not in SQL: PostgreSQL's planner then ANDed
        # the primary key's range (every row of the table, 52 ms at 1,000,000) with the
        # coordinate's few; a chain's rows are few, and those past it rarer still.
        query = RowQuery(any_of=("coordinate", names), order=("coordinate", "journal_version"))
        grouped: dict[str, list[_Row]] = {}
        for row in self._store.select(CHAIN_TABLE, query):
            if cast(int, row[0]) <= position:
                grouped.setdefault(cast(str, row[1]), []).append(cast(_Row, row))
        wanted = set(names)
        for row in held:
            if row[1] in wanted:
                grouped.setdefault(row[1], []).append(row)
        return {
            name: ChainSnapshot.of(
                ArtifactCoordinate(name), tuple(StoredRevision.from_rows(rows, self._load))
            )
            for name, rows in grouped.items()
        }


def _after(rows: list[_Row]) -> Callable[[int], list[_Row]]:
    """What a write of ``rows`` inserts after the position the store holds."""
    return lambda position: [row for row in rows if row[0] > position]
