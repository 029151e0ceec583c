"""A log of a few entries, its key, and a witness of it, shared by the witness tests."""

from __future__ import annotations

from nenjim.domain.transparency import (
    AddCheckpoint,
    Checkpoint,
    Cosigner,
    MemoryTree,
    SignerKey,
    consistency_proof,
    sign_checkpoint,
    tree_hash,
)

ORIGIN = "example.com/log"
LOG = SignerKey(ORIGIN, bytes(range(32)))
WITNESS = Cosigner("witness.example/w1", bytes(range(1, 33)))
LOGS = {ORIGIN: [LOG.verifier]}
TREE = MemoryTree(b"entry %d" % index for index in range(9))
FORK = MemoryTree(b"other %d" % index for index in range(9))


def signed(size: int, tree: MemoryTree = TREE) -> str:
    """The log's signed checkpoint of the first ``size`` entries of ``tree``."""
    return sign_checkpoint(Checkpoint(ORIGIN, size, tree_hash(size, tree)), LOG)


def add_checkpoint(old: int, new: int, tree: MemoryTree = TREE) -> AddCheckpoint:
    """The request for the checkpoint of size ``new`` of ``tree``, proven from ``old``."""
    proof = consistency_proof(old, new, tree) if old else []
    return AddCheckpoint(old, tuple(proof), signed(new, tree))
