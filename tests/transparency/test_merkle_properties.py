"""Properties of every tree up to a few thousand leaves, against an independent reference.

The reference follows the recursive definitions of RFC 6962 section 2.1
(MTH, PATH, PROOF/SUBPROOF) literally, hashing with hashlib directly, the way
Certificate Transparency's ``ReferenceMerkleTreeHash``, ``ReferenceMerklePath``
and ``ReferenceSnapshotConsistency`` do.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nenjim.domain.transparency import (
    EMPTY_ROOT,
    TILE_WIDTH,
    InvalidProofError,
    MemoryTree,
    TileTree,
    TreeBuilder,
    TreeNode,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    leaf_hashes,
    leaf_tile,
    tiles_for_size,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)

MAX_SIZE = 4096
ENTRIES = [b"entry %d" % i for i in range(MAX_SIZE)]
PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def big_tree() -> MemoryTree:
    return MemoryTree(ENTRIES)


class CountingSource:
    """Counts the requests a proof makes of its hash source, and the nodes they name."""

    def __init__(self, tree: MemoryTree) -> None:
        self.tree = tree
        self.requests: list[int] = []

    def node_hashes(self, nodes: Sequence[TreeNode]) -> list[bytes]:
        self.requests.append(len(nodes))
        return self.tree.node_hashes(nodes)


def _check_reads(source: CountingSource, size: int) -> None:
    """One request per proof, of at most 2 * log2(size) + 2 nodes."""
    assert len(source.requests) <= 1
    assert sum(source.requests) <= 2 * math.log2(max(size, 1)) + 2


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


@functools.cache
def reference_mth(low: int, high: int) -> bytes:
    """MTH(D[low:high]) by the RFC 6962 recursion."""
    if high == low:
        return hashlib.sha256(b"").digest()
    if high - low == 1:
        return hashlib.sha256(b"\x00" + ENTRIES[low]).digest()
    k = _split(high - low)
    return hashlib.sha256(
        b"\x01" + reference_mth(low, low + k) + reference_mth(low + k, high)
    ).digest()


Piece = tuple[str, tuple[int, int]]


def reference_path(m: int, low: int, high: int) -> list[Piece]:
    """PATH(m, D[low:high]): each hash's leaf range and side (R: right sibling, L: left)."""
    if high - low == 1:
        return []
    k = _split(high - low)
    if m < low + k:
        return [*reference_path(m, low, low + k), ("R", (low + k, high))]
    return [*reference_path(m, low + k, high), ("L", (low, low + k))]


def reference_subproof(m: int, low: int, high: int, whole: bool) -> list[Piece]:
    """SUBPROOF(m, D[low:high], b): each hash's leaf range and role (H: old subtree head)."""
    if m == high:
        return [] if whole else [("H", (low, high))]
    k = _split(high - low)
    if m <= low + k:
        return [*reference_subproof(m, low, low + k, whole), ("R", (low + k, high))]
    return [*reference_subproof(m, low + k, high, False), ("L", (low, low + k))]


def reference_proof(m: int, n: int) -> list[Piece]:
    return [] if m in (0, n) else reference_subproof(m, 0, n, True)


def _hashes(pieces: list[Piece]) -> list[bytes]:
    return [reference_mth(*leaves) for _, leaves in pieces]


def _shape(pieces: list[Piece]) -> list[str]:
    return [role for role, _ in pieces]


def _fails_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> bool:
    try:
        verify_inclusion(leaf, index, size, proof, root)
    except InvalidProofError:
        return True
    return False


def _fails_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> bool:
    try:
        verify_consistency(old, new, old_root, new_root, proof)
    except InvalidProofError:
        return True
    return False


def _alterations(proof: list[bytes], data: st.DataObject) -> list[list[bytes]]:
    """A flipped bit, every dropped hash, and an extra hash at a chosen place."""
    altered: list[list[bytes]] = []
    if proof:
        which = data.draw(st.integers(0, len(proof) - 1), label="flipped hash")
        byte = data.draw(st.integers(0, 31), label="flipped byte")
        bit = data.draw(st.integers(0, 7), label="flipped bit")
        flipped = list(proof)
        value = bytearray(flipped[which])
        value[byte] ^= 1 << bit
        flipped[which] = bytes(value)
        altered.append(flipped)
        altered.extend(proof[:i] + proof[i + 1 :] for i in range(len(proof)))
    extra = data.draw(
        st.one_of(st.binary(min_size=32, max_size=32), st.sampled_from([*proof, EMPTY_ROOT])),
        label="extra hash",
    )
    where = data.draw(st.integers(0, len(proof)), label="extra position")
    altered.append([*proof[:where], extra, *proof[where:]])
    return altered


@PROPERTIES
@given(data=st.data())
def test_every_inclusion_proof_verifies_and_every_altered_one_fails(data: st.DataObject) -> None:
    size = data.draw(st.integers(1, MAX_SIZE), label="size")
    index = data.draw(st.integers(0, size - 1), label="index")
    tree = big_tree()
    root = reference_mth(0, size)
    leaf = leaf_hash(ENTRIES[index])
    assert tree_hash(size, tree) == root

    source = CountingSource(tree)
    proof = inclusion_proof(index, size, source)
    _check_reads(source, size)
    expected = reference_path(index, 0, size)
    assert proof == _hashes(expected)
    verify_inclusion(leaf, index, size, proof, root)

    for altered in _alterations(proof, data):
        assert _fails_inclusion(leaf, index, size, altered, root)
    assert _fails_inclusion(leaf_hash(b"another entry"), index, size, proof, root)
    other_index = data.draw(
        st.integers(0, size - 1).filter(lambda i: i != index) if size > 1 else st.just(size)
    )
    assert _fails_inclusion(leaf, other_index, size, proof, root)
    # The proof alone cannot pin the tree size (the signed checkpoint does): a
    # wrong size verifies exactly when its audit path has the same shape.
    other_size = data.draw(st.integers(index + 1, 2 * MAX_SIZE).filter(lambda s: s != size))
    same_shape = _shape(reference_path(index, 0, other_size)) == _shape(expected)
    assert _fails_inclusion(leaf, index, other_size, proof, root) is not same_shape


@PROPERTIES
@given(data=st.data())
def test_every_consistency_proof_verifies_and_every_altered_one_fails(data: st.DataObject) -> None:
    new = data.draw(st.integers(0, MAX_SIZE), label="new size")
    old = data.draw(st.integers(0, new), label="old size")
    tree = big_tree()
    old_root, new_root = reference_mth(0, old), reference_mth(0, new)

    source = CountingSource(tree)
    proof = consistency_proof(old, new, source)
    _check_reads(source, new)
    expected = reference_proof(old, new)
    assert proof == _hashes(expected)
    verify_consistency(old, new, old_root, new_root, proof)

    for altered in _alterations(proof, data):
        assert _fails_consistency(old, new, old_root, new_root, altered)
    if old != new:
        assert _fails_consistency(old, new, new_root, old_root, proof)
    if 0 < old < new:
        # (Every tree extends the empty one, whatever its root.)
        assert _fails_consistency(old, new, old_root, reference_mth(0, new - 1), proof)
    if old > 0:
        assert _fails_consistency(old, new, reference_mth(0, old - 1), new_root, proof)
    other_old = data.draw(st.integers(0, new).filter(lambda m: m != old) if new else st.just(1))
    assert _fails_consistency(other_old, new, old_root, new_root, proof)
    other_new = data.draw(st.integers(0, 2 * MAX_SIZE).filter(lambda n: n != new))
    same_shape = other_new > old and _shape(reference_proof(old, other_new)) == _shape(expected)
    assert _fails_consistency(old, other_new, old_root, new_root, proof) is not same_shape


@pytest.mark.parametrize("size", range(1, 97))
def test_all_proofs_of_small_trees_verify(size: int) -> None:
    tree = big_tree()
    root = reference_mth(0, size)
    for index in range(size):
        verify_inclusion(
            leaf_hash(ENTRIES[index]), index, size, inclusion_proof(index, size, tree), root
        )
    for old in range(size + 1):
        verify_consistency(
            old, size, reference_mth(0, old), root, consistency_proof(old, size, tree)
        )


@PROPERTIES
@given(chunks=st.lists(st.integers(0, 300), max_size=12), resume_at=st.integers(0, 3000))
def test_incremental_building_matches_the_reference_at_every_step(
    chunks: list[int], resume_at: int
) -> None:
    builder = TreeBuilder()
    incremental = MemoryTree()
    size = 0
    for chunk in chunks:
        hashes = [leaf_hash(entry) for entry in ENTRIES[size : size + chunk]]
        builder.append(hashes)
        incremental.append_leaf_hashes(hashes)
        size += chunk
        assert builder.size == size
        assert builder.root() == reference_mth(0, size)
        assert incremental.root() == reference_mth(0, size)
    # Every stored node equals the one-shot tree's node at the same place.
    whole = MemoryTree(ENTRIES[:size])
    if size:
        assert inclusion_proof(size - 1, size, incremental) == inclusion_proof(
            size - 1, size, whole
        )
    resumed = TreeBuilder.resume(min(resume_at, MAX_SIZE), big_tree())
    assert resumed.root() == reference_mth(0, resumed.size)
    twin = resumed.copy()
    resumed.append([leaf_hash(entry) for entry in ENTRIES[resumed.size : resumed.size + 37]])
    assert resumed.root() == reference_mth(0, resumed.size)
    # A copy goes on from where it was taken, untouched by the original's appends.
    assert twin.root() == reference_mth(0, twin.size)
    twin.append([leaf_hash(entry) for entry in ENTRIES[twin.size : twin.size + 5]])
    assert twin.root() == reference_mth(0, twin.size)
    assert resumed.root() == reference_mth(0, resumed.size)


@PROPERTIES
@given(
    pieces=st.lists(st.tuples(st.integers(0, 10), st.integers(0, 40)), max_size=8),
    tail=st.integers(0, 300),
)
def test_appending_subtree_heads_builds_the_tree_of_their_leaves(
    pieces: list[tuple[int, int]], tail: int
) -> None:
    # Each piece appends `count` complete subtrees of 2**level leaves by their heads,
    # after enough single leaves to bring the size to a multiple of 2**level.
    builder = TreeBuilder()
    whole = big_tree()
    size = 0
    for level, count in pieces:
        align = -size % (1 << level)
        if size + align + (count << level) > MAX_SIZE:
            break
        builder.append([leaf_hash(entry) for entry in ENTRIES[size : size + align]])
        size += align
        first = size >> level
        heads = whole.node_hashes([TreeNode(level, first + i) for i in range(count)])
        runs = builder.append_subtrees(level, heads)
        size += count << level
        assert builder.size == size
        assert builder.root() == reference_mth(0, size)
        # Every node the heads complete is the whole tree's node at that place.
        for run in runs:
            assert run.hashes == whole.node_hashes(
                [TreeNode(run.level, run.start + i) for i in range(len(run.hashes))]
            )
    builder.append([leaf_hash(entry) for entry in ENTRIES[size : size + tail]])
    assert builder.root() == reference_mth(0, min(size + tail, MAX_SIZE))


@PROPERTIES
@given(size=st.integers(0, MAX_SIZE), since=st.integers(0, MAX_SIZE))
def test_a_tile_tree_from_hashed_leaf_tiles_is_the_tree_of_the_leaves(
    size: int, since: int
) -> None:
    # As a verifier builds it: whole tiles hashed apart, the bundle holding the
    # trusted size (when inside one) and the partial tail as leaf hashes.
    since = min(since, size)
    tree = TileTree()
    for start in range(0, size, TILE_WIDTH):
        entries = ENTRIES[start : min(start + TILE_WIDTH, size)]
        if len(entries) == TILE_WIDTH and not start < since < start + TILE_WIDTH:
            tree.append_leaf_tiles([leaf_tile(entries)])
        else:
            tree.append_leaf_hashes(leaf_hashes(entries))
    by_leaves = TileTree()
    by_leaves.append_leaf_hashes(leaf_hashes(ENTRIES[:size]))
    assert tree.size == size
    assert tree.root() == reference_mth(0, size)
    assert tree.tiles() == by_leaves.tiles()
    assert set(tree.tiles()) == {(tile.level, tile.index) for tile in tiles_for_size(size)}
