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
from collections.abc import Sequence
from itertools import islice
from types import MappingProxyType
from typing import cast
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Tracking

from nenjim.domain.journal.values import ArtifactCoordinate
from nenjim.infrastructure.log import LogReader
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
    """The chains of one Journal log, as its store's chain table holds them up to
    :attr:`position` (``where`` names the store in messages)."""

    def __init__(
        self,
        log: LogReader,
        store: ProjectionRecorder,
        *,
        where: str,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self._log = log
        self._store = store
        self._hint = REBUILD_HINT.format(store=where)
        self._load = text_loader(log)
        self.cache = ChainCache(cache_size)
        self.position = 0
        """The log position the answers reflect: the tracked one after the last catch-up."""
        self._lock = threading.Lock()
        self._epoch = 0  # moved by each catch-up that forgot chains: a read before it is stale

    def open(self) -> int:
        """Create the table's indexes if it lacks them, then :meth:`catch_up`."""
        self._store.ensure_indexes(CHAIN_TABLE)
        return self.catch_up()

    def catch_up(self) -> int:
        """Fold and write what the log holds after the tracked position; how many events
        were new to this reader. ``ProjectionIntegrityError`` for an event that
        contradicts the log or its chain, or a table ahead of the log."""
        with self._lock:
            tracked = self._tracked()
            end = self._log.last_position()
            if tracked > end:
                raise ProjectionIntegrityError(
                    f"the persisted chain projection ({CHAIN_TABLE.table}) is tracked at "
                    f"position {tracked}, ahead of the log, which ends at notification {end}"
                    f"{self._hint}"
                )
            touched: set[str] = set()
            while events := list(islice(read_after(self._log, tracked), FOLD_BATCH)):
                rows = self._fold(tracked, events)
                touched.update(row[1] for row in rows)
                last = rows[-1][0]
                written = self._store.write(
                    CHAIN_TABLE,
                    lambda after: [row for row in rows if row[0] > after],
                    Tracking(CHAIN_PROJECTION, last),
                )
                tracked = last if written else max(last, self._tracked())
            new = tracked - self.position
            if touched or new:
                self._epoch += 1
                self.cache.forget(touched)
            self.position = tracked
            return new

    def chain(self, name: str) -> ChainSnapshot | None:
        """The chain of the artifact whose coordinate text is ``name``, or ``None``."""
        chain = self.cache.get(name)
        if chain is not None:
            return chain
        epoch, position = self._epoch, self.position
        found = self._chains((name,), position).get(name)
        if found is not None:
            with self._lock:
                if epoch == self._epoch:  # no catch-up since: the rows are current
                    self.cache.put(name, found)
        return found

    def coordinate_names(self, after: str | None = None, limit: int | None = None) -> list[str]:
        """The coordinates' texts in code point order: those after ``after``, at most
        ``limit`` of them (every one by default)."""
        bounds: list[tuple[str, Comparison, int | str]] = [("position", "<=", self.position)]
        if after is not None:
            bounds.append(("coordinate", ">", after))
        query = RowQuery(
            columns=("coordinate",),
            bounds=tuple(bounds),
            order=("coordinate",),
            distinct=True,
            limit=limit,
        )
        return [cast(str, row[0]) for row in self._store.select(CHAIN_TABLE, query)]

    def _tracked(self) -> int:
        state = self._store.state(CHAIN_PROJECTION)
        return 0 if state is None or state.version != CHAIN_TABLE.version else state.position

    def _fold(
        self, tracked: int, events: Sequence[tuple[int, DomainEventProtocol[UUID]]]
    ) -> list[_Row]:
        """The rows of ``events``, each checked against the chains so far."""
        names = {getattr(event, "coordinate", None) for _, event in events}
        known = self._chains(tuple(n for n in names if isinstance(n, str)), tracked)
        chains = {chain.coordinate: chain for chain in known.values()}
        fold = ChainFold(JournalWorldview(MappingProxyType(chains), tracked), keep=False)
        return [fold.add_row(position, event) for position, event in events]

    def _chains(self, names: tuple[str, ...], position: int) -> dict[str, ChainSnapshot]:
        """The chains of ``names`` up to ``position``, by name (those the table holds)."""
        query = RowQuery(
            any_of=("coordinate", names),
            bounds=(("position", "<=", position),),
            order=("coordinate", "journal_version"),
        )
        grouped: dict[str, list[_Row]] = {}
        for row in self._store.select(CHAIN_TABLE, query):
            grouped.setdefault(cast(str, row[1]), []).append(cast(_Row, row))
        return {
            name: ChainSnapshot.of(
                ArtifactCoordinate(name), tuple(StoredRevision.from_rows(rows, self._load))
            )
            for name, rows in grouped.items()
        }
