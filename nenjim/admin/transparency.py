"""The Journal's transparency log: keys, checkpoints, proofs, and what a server answers.

:class:`JournalTree` is the stored tree of an open Journal log
(:func:`nenjim.admin.stores.open_log`), signed: checkpoints, inclusion and
consistency proofs, tiles (:func:`served_bundle`: entry bundles).
:func:`check_proof` verifies a proof offline with the verifier key;
:func:`anchor_problem` says why a log does not extend a checkpoint signed
earlier; :class:`FollowedChains` answers a server's queries while others
append; :func:`scan_root` lists a root's revision files, to compare with a
served log.
"""

from __future__ import annotations

import threading

from nenjim.domain.transparency import (
    Checkpoint,
    SignerKey,
    VerifierKey,
    open_checkpoint,
    parse_entry_bundle_path,
    parse_tile_path,
)
from nenjim.infrastructure.log import LogReader
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
