"""The server side of the Journal's transparency log: signed checkpoints and proofs.

Every answer is read from the stored tiles of one tree size (the size read
first: tiles only grow, so later reads still hold that tree), and proven
against a checkpoint of that size signed with the log's key. The client
side is :func:`check_proof`, which needs nothing but the verifier key.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from nenjim.domain.journal.chain import JournalChain, chain_id
from nenjim.domain.journal.errors import JournalIntegrityError
from nenjim.domain.transparency import (
    HASH_SIZE,
    Checkpoint,
    EntryBundle,
    InvalidProofError,
    JournalLeaf,
    SignerKey,
    Tile,
    TileHashSource,
    TransparencyError,
    VerifierKey,
    consistency_proof,
    encode_entry_bundle,
    inclusion_proof,
    leaf_hash,
    open_checkpoint,
    sign_checkpoint,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)
from nenjim.domain.transparency.tiles import tile_width_in_tree
from nenjim.infrastructure.log import TiledLog
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency import NewestLeafHashes, TreeTiles


class ProofRequestError(LookupError):
    """A proof was asked for something the log does not hold (a revision, a size)."""


@dataclass(frozen=True, slots=True)
class SignedTree:
    """A tree size of the log, its root hash, and the checkpoint that signs them."""

    checkpoint: Checkpoint
    note: str


class JournalTree:
    """The stored tree of an open Journal log, signed with ``signer`` under ``origin``."""

    def __init__(self, log: JournalLog, signer: SignerKey, origin: str | None = None) -> None:
        self._log = log
        self._tiled = log.tiled_log
        self._signer = signer
        self.origin = signer.name if origin is None else origin
        self._newest = NewestLeafHashes()

    def _tiles(self) -> TreeTiles:
        return TreeTiles(self._tiled, newest=self._newest)

    def sign(self) -> SignedTree:
        """A checkpoint of the whole stored tree, as it is now."""
        size = self._tiled.entry_count()
        checkpoint = Checkpoint(self.origin, size, self.root(size))
        return SignedTree(checkpoint, sign_checkpoint(checkpoint, self._signer))

    def root(self, size: int) -> bytes:
        """The root hash of the tree of the first ``size`` leaves."""
        return tree_hash(size, TileHashSource(size, self._tiles()))

    def served_tile(self, tile: Tile) -> bytes | None:
        """The bytes of ``tile`` if the stored tree holds all its hashes now, else ``None``.

        A partial tile is the first ``width`` hashes of its tile as read now, which
        may be wider (or full) by then: hashes already written never change.
        """
        size = self._tiled.entry_count()
        if tile_width_in_tree(tile.level, tile.index, size) < tile.width:
            return None
        (data,) = self._tiles().read_tiles([tile])
        return data[: tile.width * HASH_SIZE]

    def leaf_of(self, coordinate: str, version: str) -> tuple[int, bytes]:
        """The index and leaf data of revision ``version`` of artifact ``coordinate``."""
        try:
            chain: JournalChain | None = self._log.repository.get(chain_id(coordinate))
        except AggregateNotFoundError:
            chain = None
        digest = None if chain is None else chain.digest_at(version)
        if digest is None:
            raise ProofRequestError(f"the log holds no revision {coordinate} {version}")
        leaf = JournalLeaf(coordinate, version, bytes.fromhex(digest.removeprefix("sha256:")))
        index = self._tiled.entry_position(leaf.data())
        if index is None:
            raise JournalIntegrityError(
                f"revision {coordinate} {version} is in the log but not in its transparency "
                "tree (see nenjim journal audit)"
            )
        return index, leaf.data()

    def prove_inclusion(self, coordinate: str, version: str) -> dict[str, Any]:
        """The leaf of a revision, its index and inclusion proof, and the signed checkpoint."""
        signed = self.sign()
        index, data = self.leaf_of(coordinate, version)
        size = signed.checkpoint.size
        proof = inclusion_proof(index, size, TileHashSource(size, self._tiles()))
        return {
            "kind": "inclusion",
            "leaf": data.decode("utf-8"),
            "index": index,
            "tree_size": size,
            "inclusion_proof": _encode(proof),
            "checkpoint": signed.note,
        }

    def prove_consistency(self, old_size: int) -> dict[str, Any]:
        """The consistency proof from tree size ``old_size`` to now, and the signed checkpoint."""
        signed = self.sign()
        size = signed.checkpoint.size
        if not 0 <= old_size <= size:
            raise ProofRequestError(
                f"tree size {old_size} is not in [0, {size}]: the log is smaller"
            )
        source = TileHashSource(size, self._tiles())
        return {
            "kind": "consistency",
            "old_size": old_size,
            "old_root": base64.b64encode(self.root(old_size)).decode("ascii"),
            "tree_size": size,
            "consistency_proof": _encode(consistency_proof(old_size, size, source)),
            "checkpoint": signed.note,
        }


def _encode(hashes: Sequence[bytes]) -> list[str]:
    return [base64.b64encode(value).decode("ascii") for value in hashes]


class ProofCheckError(ValueError):
    """A proof document is malformed, or does not prove what it says."""


@dataclass(frozen=True, slots=True)
class CheckedProof:
    """What a verified proof document proved, against which checkpoint."""

    kind: str
    checkpoint: Checkpoint
    summary: str


def check_proof(
    document: Mapping[str, Any], verifier: VerifierKey, *, since: Checkpoint | None = None
) -> CheckedProof:
    """Verify a document of :meth:`JournalTree.prove_inclusion` or ``prove_consistency``.

    The checkpoint's signature is checked with ``verifier``, then the proof
    against the checkpoint's root. ``since`` (a checkpoint trusted before)
    must be the old tree of a consistency proof. Raises ``ProofCheckError``.
    """
    try:
        checkpoint = open_checkpoint(_text(document, "checkpoint"), [verifier])
        size = checkpoint.size
        if _integer(document, "tree_size") != size:
            raise ProofCheckError(
                f"the proof is for tree size {document['tree_size']}, its checkpoint for {size}"
            )
        kind = document.get("kind")
        if kind == "inclusion":
            leaf = _text(document, "leaf").encode("utf-8")
            JournalLeaf.parse(leaf)
            index = _integer(document, "index")
            verify_inclusion(
                leaf_hash(leaf),
                index,
                size,
                _hashes(document, "inclusion_proof"),
                checkpoint.root_hash,
            )
            summary = f"leaf {index} ({leaf.decode().rstrip()}) is in the tree of {size} leaves"
        elif kind == "consistency":
            old_size = _integer(document, "old_size")
            old_root = _hash(_text(document, "old_root"), "old_root")
            if since is not None and (since.size, since.root_hash) != (old_size, old_root):
                raise ProofCheckError(
                    f"the proof starts from tree size {old_size}, not from the trusted "
                    f"checkpoint's tree (size {since.size}, another root or size)"
                )
            verify_consistency(
                old_size,
                size,
                old_root,
                checkpoint.root_hash,
                _hashes(document, "consistency_proof"),
            )
            summary = f"the tree of {old_size} leaves is a prefix of the tree of {size} leaves"
        else:
            raise ProofCheckError(f"unknown proof kind {kind!r}: expected inclusion or consistency")
    except (TransparencyError, InvalidProofError) as error:
        raise ProofCheckError(str(error)) from None
    return CheckedProof(
        str(kind), checkpoint, f"{summary}, signed by {verifier.name} as {checkpoint.origin}"
    )


def _text(document: Mapping[str, Any], field: str) -> str:
    value = document.get(field)
    if not isinstance(value, str):
        raise ProofCheckError(f"field {field!r} is missing or not a string")
    return value


def _integer(document: Mapping[str, Any], field: str) -> int:
    value = document.get(field)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProofCheckError(f"field {field!r} is missing or not an integer")
    return value


def _hash(text: str, field: str) -> bytes:
    try:
        value = base64.b64decode(text, validate=True)
    except ValueError:
        raise ProofCheckError(f"field {field!r} holds {text!r}, not base64") from None
    if base64.b64encode(value).decode("ascii") != text or len(value) != 32:
        raise ProofCheckError(f"field {field!r} holds {text!r}, not one canonical 32-byte hash")
    return value


def _hashes(document: Mapping[str, Any], field: str) -> list[bytes]:
    values = document.get(field)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ProofCheckError(f"field {field!r} is missing or not a list of base64 hashes")
    return [_hash(value, field) for value in values]


def served_bundle(tiled: TiledLog, bundle: EntryBundle) -> bytes | None:
    """The entry bundle ``bundle`` if the stored tree holds all its entries now, else ``None``."""
    first = bundle.first_entry
    entries = tiled.read_entries(first, first + bundle.width)
    if len(entries) < bundle.width:
        return None
    return encode_entry_bundle(data for _, data in entries)
