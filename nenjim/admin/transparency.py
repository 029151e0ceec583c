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
from nenjim.journal.impl.ref.chain_log import catch_up
from nenjim.journal.impl.ref.filesystem import scan_root
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency_anchor import anchor_problem
from nenjim.journal.impl.ref.transparency_proofs import JournalTree, check_proof, served_bundle
from nenjim.journal.valuetypes import ArtifactCoordinate
from nenjim.projections.journal_chains import (
    ChainSnapshot,
    JournalChainsProjection,
    JournalWorldview,
)

__all__ = [
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


class FollowedChains:
    """The chains of the Journal log ``log``, caught up with it on demand, under a lock
    (one read when nothing was appended)."""

    def __init__(self, log: JournalLog) -> None:
        self._reader = LogReader(log)
        self._projection = JournalChainsProjection()
        self._lock = threading.Lock()

    def chain(self, coordinate: str) -> ChainSnapshot:
        """The chain of artifact ``coordinate`` as the log holds it now; ``LookupError``
        if it holds none, ``InvalidValueError`` for a malformed coordinate."""
        view = self.caught_up()
        chain = view.chain(ArtifactCoordinate(coordinate))
        if chain is None:
            raise LookupError(f"no artifact {coordinate}")
        return chain

    def caught_up(self) -> JournalWorldview:
        """Every chain, as the log holds them now."""
        with self._lock:
            return catch_up(self._projection, self._reader)

    def lag(self) -> int:
        """How many of the log's events the chains have not caught up with yet (they do at
        the next :meth:`chain` or :meth:`caught_up`)."""
        return max(0, self._reader.last_position() - self._projection.view.position)


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
