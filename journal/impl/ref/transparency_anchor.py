"""The audit of a Journal log against a checkpoint signed earlier: did the log only grow?

The log alone cannot reveal an edit that stays consistent (a head's text,
digest and claim forged together, the tail cut with its claims, revisions
renumbered into another order). A checkpoint signed before can: the tree
recomputed from the stored texts, in log order, must have the checkpoint's
root at the checkpoint's size, and the stored tree must prove itself
consistent with it.
"""

from __future__ import annotations

import base64

from nenjim.domain.transparency import (
    Checkpoint,
    InvalidProofError,
    InvalidTileError,
    TileHashSource,
    consistency_proof,
    leaf_hashes,
    root_hash,
    tree_hash,
    verify_consistency,
)
from nenjim.infrastructure.log import LogDamagedError, TilesMissingError
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency import TreeTiles
from nenjim.journal.impl.ref.transparency_audit import text_leaves


def anchor_problem(log: JournalLog, checkpoint: Checkpoint) -> str | None:
    """Why the log in ``log`` does not extend ``checkpoint`` (``None``: it does).

    Raises ``JournalIntegrityError`` for an event that is not a well-formed
    revision (see ``text_leaves``).
    """
    size = checkpoint.size
    if missing := log.tiled_log.missing_tables():
        return f"table {missing[0]} of the transparency tree is missing"
    leaves = [data for _, data in text_leaves(log)]
    if len(leaves) < size:
        return (
            f"the log holds {len(leaves)} revisions, fewer than the {size} of the checkpoint: "
            "revisions were removed"
        )
    recomputed = root_hash(leaf_hashes(leaves[:size]))
    if recomputed != checkpoint.root_hash:
        return (
            f"its first {size} revisions, read from their texts in log order, hash to "
            f"{_b64(recomputed)}, not to the checkpoint's root {_b64(checkpoint.root_hash)}: "
            "a revision was edited, removed, added or moved"
        )
    tiled = log.tiled_log
    stored = tiled.entry_count()
    if stored < size:
        return f"the stored tree holds {stored} leaves, fewer than the {size} of the checkpoint"
    source = TileHashSource(stored, TreeTiles(tiled))
    try:
        verify_consistency(
            size,
            stored,
            checkpoint.root_hash,
            tree_hash(stored, source),
            consistency_proof(size, stored, source),
        )
    except (InvalidProofError, InvalidTileError, TilesMissingError, LogDamagedError) as error:
        return f"the stored tree does not prove itself consistent with the checkpoint: {error}"
    return None


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")
