"""The Journal's transparency log: keys, checkpoints, proofs, and what a server answers.

:class:`JournalTree` is the stored tree of an open Journal log
(:func:`nenjim.admin.stores.open_log`), signed: checkpoints, inclusion and
consistency proofs, tiles (:func:`served_bundle`: entry bundles).
:func:`check_proof` verifies a proof offline with the verifier key;
:func:`anchor_problem` says why a log does not extend a checkpoint signed
earlier; :class:`FollowedChains` answers a server's queries while others
append; :func:`last_logged_at` says when the tree last grew; :func:`scan_root`
lists a root's revision files, to compare with a served log.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import cast

from eventsourcing.domain import DomainEvent

from nenjim.domain.transparency import (
    Checkpoint,
    SignerKey,
    VerifierKey,
    open_checkpoint,
    parse_entry_bundle_path,
    parse_tile_path,
)
from nenjim.infrastructure.log import LogDamagedError, LogReader
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal.impl.ref.filesystem import scan_root
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.revision_cache import DEFAULT_CACHE_SIZE as DEFAULT_CHAIN_CACHE
from nenjim.journal.impl.ref.stored_chains import StoredChains
from nenjim.journal.impl.ref.transparency_anchor import anchor_problem
from nenjim.journal.impl.ref.transparency_proofs import JournalTree, check_proof, served_bundle
from nenjim.journal.valuetypes import ArtifactCoordinate
from nenjim.projections.journal_chains import ChainSnapshot

__all__ = [
    "DEFAULT_CHAIN_CACHE",
    "Checkpoint",
    "FollowedChains",
    "JournalTree",
    "SignerKey",
    "VerifierKey",
    "anchor_problem",
    "check_proof",
    "last_logged_at",
    "open_checkpoint",
    "parse_entry_bundle_path",
    "parse_tile_path",
    "scan_root",
    "served_bundle",
]


FILTER_WINDOW = 1_000
"""Coordinates a filtered page reads from the index at a time."""


class FollowedChains:
    """The chains of the Journal log ``log``, served from its store's chain table, caught up
    with the log on demand (one read when nothing was appended); at most ``cache_size``
    chains are held in memory, whatever the log's length."""

    def __init__(self, log: JournalLog, cache_size: int = DEFAULT_CHAIN_CACHE) -> None:
        self._reader = LogReader(log)
        self._chains = StoredChains(
            self._reader,
            projection_recorder(log),
            location=log.location,
            cache_size=cache_size,
            writable=not log.read_only,
        )
        self._opened = False
        self._lock = threading.Lock()

    def chain(self, coordinate: str) -> ChainSnapshot:
        """The chain of artifact ``coordinate`` as the log holds it now; ``LookupError``
        if it holds none, ``InvalidValueError`` for a malformed coordinate."""
        name = str(ArtifactCoordinate(coordinate))
        self.catch_up()
        chain = self._chains.chain(name)
        if chain is None:
            raise LookupError(f"no artifact {coordinate}")
        return chain

    def coordinates(
        self, after: str | None, limit: int, contains: str | None = None
    ) -> tuple[list[str], bool]:
        """At most ``limit`` coordinates after ``after`` as the log holds them now, in code
        point order, only those holding ``contains`` (case-folded) if given; whether more
        follow. A filtered page reads the index in order, a window at a time, until it
        holds ``limit + 1``: its memory is a window's, whatever the artifacts."""
        self.catch_up()
        if contains is None:
            names = self._chains.coordinate_names(after, limit + 1)
            return names[:limit], len(names) > limit
        found: list[str] = []
        window = max(limit + 1, FILTER_WINDOW)
        while len(found) <= limit:
            names = self._chains.coordinate_names(after, window)
            found += [name for name in names if contains in name.casefold()]
            if len(names) < window:
                break
            after = names[-1]
        return found[:limit], len(found) > limit

    def catch_up(self) -> None:
        """Read what the log holds after the chains (the first time: ensure the table's
        indexes, when the store may be written)."""
        with self._lock:
            if not self._opened:
                self._chains.open()
                self._opened = True
            else:
                self._chains.catch_up()

    def cache_lookups(self) -> tuple[int, int]:
        """How many of the chains' lookups found the chain in the cache, and how many read it
        from the store, since this was made."""
        cache = self._chains.cache
        return cache.hits, cache.misses

    def lag(self) -> int:
        """How many of the log's events the chains have not caught up with yet (they do at
        the next :meth:`chain` or :meth:`coordinates`)."""
        return max(0, self._reader.last_position() - self._chains.position)


def last_logged_at(log: JournalLog) -> datetime | None:
    """When the newest entry of the log's tree was logged: the time the tree last grew
    (``None`` for an empty tree)."""
    tiled = log.tiled_log
    size = tiled.entry_count()
    if not size:
        return None
    [(notification_id, _)] = tiled.read_entries(size - 1, size)
    reader = LogReader(log)
    for notification in reader.notifications(notification_id - 1):
        return cast(DomainEvent, reader.event(notification)).timestamp
    raise LogDamagedError(
        f"{log.where}: the tree's entry {size - 1} is notification {notification_id}, "
        "which the log does not hold"
    )
