"""RFC 6962 / RFC 9162 Merkle trees: hashes, tree heads, proofs and their checks.

The hash is SHA-256. A leaf hashes as ``H(0x00 || data)``, an interior node as
``H(0x01 || left || right)``. The tree over ``n`` leaves splits at ``k``, the
largest power of two below ``n``: its head is ``node(head(first k),
head(rest))``. The head of the empty tree is SHA-256 of the empty string.

Proofs are generated from a :class:`HashSource`, anything that answers "the
hash of the complete subtree at level L, index K" (:class:`TreeNode`). A proof
or tree head of a tree of size ``n`` asks for at most ``2 * log2(n) + 2``
such nodes, in one call, so a store that keeps node hashes in tiles serves a
proof with a handful of reads. :class:`TreeBuilder` computes those node hashes
as leaves are appended, keeping only the tree's right edge in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from nenjim.domain.transparency.errors import (
    HashSourceError,
    InvalidHashError,
    InvalidProofError,
    InvalidProofRequestError,
)

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

_sha256 = hashlib.sha256
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


def leaf_hash(data: bytes) -> bytes:
    """The RFC 6962 leaf hash ``SHA-256(0x00 || data)``."""
    return _sha256(_LEAF_PREFIX + data).digest()


def leaf_hashes(entries: Iterable[bytes]) -> list[bytes]:
    """The leaf hash of every entry, in order (the fast path for many leaves)."""
    return [_sha256(_LEAF_PREFIX + entry).digest() for entry in entries]


def node_hash(left: bytes, right: bytes) -> bytes:
    """The RFC 6962 interior node hash ``SHA-256(0x01 || left || right)``."""
    return _sha256(_NODE_PREFIX + left + right).digest()


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A complete subtree: the ``2**level`` leaves from ``index * 2**level`` on.

    Level 0 nodes are the leaves themselves; their hashes are leaf hashes.
    """

    level: int
    index: int


class HashSource(Protocol):
    """Anything that knows the hashes of a tree's complete subtrees."""

    def node_hashes(self, nodes: Sequence[TreeNode]) -> Sequence[bytes]:
        """The hash of each requested node, in request order."""
        ...


class NodeRun(NamedTuple):
    """Consecutive new node hashes at one level, the first at index ``start``."""

    level: int
    start: int
    hashes: list[bytes]


def subtree_nodes(start: int, end: int) -> list[TreeNode]:
    """The complete subtrees, left to right, that make up ``MTH(D[start:end])``.

    ``start`` must be a boundary the RFC 6962 recursion produces (a multiple of
    the largest power of two not above ``end - start``); every range used by
    tree heads and proofs is one.
    """
    nodes: list[TreeNode] = []
    while start < end:
        level = (end - start).bit_length() - 1
        nodes.append(TreeNode(level, start >> level))
        start += 1 << level
    return nodes


def _split(width: int) -> int:
    """The largest power of two strictly below ``width`` (``width >= 2``)."""
    return 1 << ((width - 1).bit_length() - 1)


def _inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose heads form the audit path, leaf side first."""
    ranges: list[tuple[int, int]] = []
    low, high = 0, size
    while high - low > 1:
        k = _split(high - low)
        if index < low + k:
            ranges.append((low + k, high))
            high = low + k
        else:
            ranges.append((low, low + k))
            low += k
    ranges.reverse()
    return ranges


def _consistency_ranges(old_size: int, new_size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose heads form PROOF(old_size, D[new_size]) (0 < old < new)."""
    tail: list[tuple[int, int]] = []
    low, high = 0, new_size
    old_tree_is_subtree = True
    while old_size != high:
        k = _split(high - low)
        if old_size <= low + k:
            tail.append((low + k, high))
            high = low + k
        else:
            tail.append((low, low + k))
            low += k
            old_tree_is_subtree = False
    tail.reverse()
    # The verifier knows the old head; it is sent only when it is not itself
    # the head of a subtree the proof reaches.
    return tail if old_tree_is_subtree else [(low, high), *tail]


def _fold(hashes: Sequence[bytes]) -> bytes:
    """Combine the heads of consecutive complete subtrees into one head."""
    head = hashes[-1]
    for left in reversed(hashes[:-1]):
        head = _sha256(_NODE_PREFIX + left + head).digest()
    return head


def _read(source: HashSource, nodes: list[TreeNode]) -> Sequence[bytes]:
    hashes = source.node_hashes(nodes)
    if len(hashes) != len(nodes):
        raise HashSourceError(
            f"hash source returned {len(hashes)} hashes for {len(nodes)} requested nodes"
        )
    for node, value in zip(nodes, hashes, strict=True):
        if len(value) != HASH_SIZE:
            raise HashSourceError(
                f"hash source returned a {len(value)}-byte value for node "
                f"(level {node.level}, index {node.index}); hashes are {HASH_SIZE} bytes"
            )
    return hashes


def _heads(ranges: list[tuple[int, int]], source: HashSource) -> list[bytes]:
    groups = [subtree_nodes(low, high) for low, high in ranges]
    hashes = _read(source, [node for group in groups for node in group])
    heads: list[bytes] = []
    position = 0
    for group in groups:
        heads.append(_fold(hashes[position : position + len(group)]))
        position += len(group)
    return heads


def tree_hash(size: int, source: HashSource) -> bytes:
    """The head (root hash) of the tree's first ``size`` leaves."""
    if size < 0:
        raise InvalidProofRequestError(f"tree size {size} is negative")
    if size == 0:
        return EMPTY_ROOT
    return _heads([(0, size)], source)[0]


def inclusion_proof(index: int, size: int, source: HashSource) -> list[bytes]:
    """The audit path of leaf ``index`` in the tree of ``size`` leaves, leaf side first."""
    if not 0 <= index < size:
        raise InvalidProofRequestError(
            f"cannot prove leaf {index} in a tree of size {size}: the index must be in [0, size)"
        )
    return _heads(_inclusion_ranges(index, size), source)


def consistency_proof(old_size: int, new_size: int, source: HashSource) -> list[bytes]:
    """The RFC 6962 consistency proof that the tree of ``old_size`` is a prefix of ``new_size``.

    It is empty when ``old_size`` is 0 or equals ``new_size``.
    """
    if not 0 <= old_size <= new_size:
        raise InvalidProofRequestError(
            f"cannot prove tree size {old_size} consistent with tree size {new_size}: "
            "sizes must satisfy 0 <= old <= new"
        )
    if old_size in (0, new_size):
        return []
    return _heads(_consistency_ranges(old_size, new_size), source)


def _check_hash(value: bytes, what: str) -> None:
    if not isinstance(value, bytes):
        raise InvalidProofError(f"{what} is a {type(value).__name__}, not bytes")
    if len(value) != HASH_SIZE:
        raise InvalidProofError(f"{what} is {len(value)} bytes; hashes are {HASH_SIZE} bytes")


def _check_path(path: Sequence[bytes], expected: int, what: str) -> None:
    if len(path) != expected:
        raise InvalidProofError(f"{what} has {len(path)} hashes; it needs exactly {expected}")
    for position, value in enumerate(path):
        _check_hash(value, f"{what}: hash {position}")


def root_from_inclusion_proof(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """The tree head ``proof`` implies for leaf hash ``leaf`` at ``index`` (RFC 9162 2.1.3.2)."""
    what = f"inclusion proof for leaf {index} in tree size {size}"
    if not 0 <= index < size:
        raise InvalidProofError(f"{what}: the leaf index must be in [0, size)")
    _check_hash(leaf, f"{what}: leaf hash")
    _check_path(proof, len(_inclusion_ranges(index, size)), what)
    fn, sn = index, size - 1
    head = leaf
    for sibling in proof:
        if sn == 0:
            raise InvalidProofError(f"{what} is longer than the path to the root")
        if fn & 1 or fn == sn:
            head = _sha256(_NODE_PREFIX + sibling + head).digest()
            # A right-edge node without a sibling moves up unchanged.
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            head = _sha256(_NODE_PREFIX + head + sibling).digest()
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise InvalidProofError(f"{what} is shorter than the path to the root")
    return head


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that leaf hash ``leaf`` is leaf ``index`` of the tree of ``size`` with head ``root``.

    Raises :class:`InvalidProofError` (one line, saying why) unless it is.
    """
    _check_hash(root, f"root hash of tree size {size}")
    if root_from_inclusion_proof(leaf, index, size, proof) != root:
        raise InvalidProofError(
            f"inclusion proof for leaf {index} in tree size {size} does not lead to the root hash"
        )


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree ``old_size``/``old_root`` is a prefix of ``new_size``/``new_root``.

    RFC 9162 2.1.4.2. Two equal sizes need equal roots and an empty proof; the
    empty tree (whose head is SHA-256 of the empty string) is a prefix of every
    tree, with an empty proof. Raises :class:`InvalidProofError` unless consistent.
    """
    what = f"consistency proof from tree size {old_size} to {new_size}"
    if not 0 <= old_size <= new_size:
        raise InvalidProofError(f"{what}: sizes must satisfy 0 <= old <= new")
    _check_hash(old_root, f"{what}: old root hash")
    _check_hash(new_root, f"{what}: new root hash")
    if old_size in (0, new_size):
        _check_path(proof, 0, what)
        if old_size == 0 and old_root != EMPTY_ROOT:
            raise InvalidProofError(f"{what}: the old root is not the empty tree's head")
        if old_size == new_size and old_root != new_root:
            raise InvalidProofError(f"{what}: equal sizes with different root hashes")
        return
    _check_path(proof, len(_consistency_ranges(old_size, new_size)), what)
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    old_head = new_head = path[0]
    for sibling in path[1:]:
        if sn == 0:
            raise InvalidProofError(f"{what} is longer than the path to the root")
        if fn & 1 or fn == sn:
            old_head = _sha256(_NODE_PREFIX + sibling + old_head).digest()
            new_head = _sha256(_NODE_PREFIX + sibling + new_head).digest()
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            new_head = _sha256(_NODE_PREFIX + new_head + sibling).digest()
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise InvalidProofError(f"{what} is shorter than the path to the root")
    if old_head != old_root:
        raise InvalidProofError(f"{what} does not lead to the old root hash")
    if new_head != new_root:
        raise InvalidProofError(f"{what} does not lead to the new root hash")


class TreeBuilder:
    """Builds a tree incrementally from leaf hashes, keeping only its right edge.

    :meth:`append` returns every node hash that the new leaves complete, level
    by level (what a writer stores as tiles); :meth:`root` is the current head.
    Memory is one hash per level, so recomputing the head of a log of any size
    streams through it.
    """

    __slots__ = ("_edge", "_size")

    def __init__(self) -> None:
        self._size = 0
        # _edge[level] is the complete node at that level still waiting for its
        # right sibling: present exactly when bit ``level`` of the size is set.
        self._edge: list[bytes | None] = []

    @classmethod
    def resume(cls, size: int, source: HashSource) -> TreeBuilder:
        """A builder that continues the tree of ``size`` leaves stored in ``source``."""
        if size < 0:
            raise InvalidProofRequestError(f"tree size {size} is negative")
        builder = cls()
        nodes = subtree_nodes(0, size)
        builder._edge = [None] * size.bit_length()
        for node, value in zip(nodes, _read(source, nodes), strict=True):
            builder._edge[node.level] = value
        builder._size = size
        return builder

    @property
    def size(self) -> int:
        """The number of leaves appended so far."""
        return self._size

    def copy(self) -> TreeBuilder:
        """A builder of the same tree, appended to independently of this one."""
        twin = TreeBuilder()
        twin._size = self._size
        twin._edge = list(self._edge)
        return twin

    def append(self, hashes: Sequence[bytes]) -> list[NodeRun]:
        """Append leaf hashes; return the new complete nodes, lowest level first.

        The first run is the leaves themselves (level 0). Nothing is appended if
        any hash is not 32 bytes.
        """
        return self.append_subtrees(0, hashes)

    def append_subtrees(self, level: int, heads: Sequence[bytes]) -> list[NodeRun]:
        """Append complete subtrees of ``2**level`` leaves each, given by their heads.

        A verifier that hashed whole tiles elsewhere (256 leaves into one level 8
        head, on other cores) appends the heads here: the root and every node
        above ``level`` are those the leaves themselves give. The tree's size
        must be a multiple of ``2**level``. Returns the new complete nodes from
        ``level`` up, the heads first; nothing is appended if any head is not
        32 bytes.
        """
        if level < 0:
            raise InvalidProofRequestError(f"subtree level {level} is negative")
        if self._size % (1 << level):
            raise InvalidProofRequestError(
                f"cannot append level {level} subtrees to a tree of {self._size} leaves: "
                f"its size is not a multiple of {1 << level}"
            )
        current = list(heads)
        count = len(current)
        if count and set(map(len, current)) != {HASH_SIZE}:
            position, value = next((i, v) for i, v in enumerate(current) if len(v) != HASH_SIZE)
            what = "leaf hash" if level == 0 else f"level {level} subtree head"
            raise InvalidHashError(
                f"{what} {position} of the {count} appended is {len(value)} bytes, not {HASH_SIZE}"
            )
        runs: list[NodeRun] = []
        edge = self._edge
        # Below ``level`` the edge is empty: the size is a multiple of 2**level.
        while len(edge) < level:
            edge.append(None)
        sha256, prefix = _sha256, _NODE_PREFIX
        self._size += count << level
        start = (self._size >> level) - count
        while current:
            runs.append(NodeRun(level, start, current))
            if level == len(edge):
                edge.append(None)
            waiting = edge[level]
            row = current if waiting is None else [waiting, *current]
            if waiting is not None:
                start -= 1
            pairs = iter(row)
            edge[level] = row[-1] if len(row) & 1 else None
            current = [
                sha256(prefix + left + right).digest()
                for left, right in zip(pairs, pairs, strict=False)
            ]
            start >>= 1
            level += 1
        return runs

    def root(self) -> bytes:
        """The head of the tree of all leaves appended so far."""
        head: bytes | None = None
        for value in self._edge:
            if value is not None:
                head = value if head is None else _sha256(_NODE_PREFIX + value + head).digest()
        return EMPTY_ROOT if head is None else head


def root_hash(hashes: Iterable[bytes]) -> bytes:
    """The head of the tree whose leaf hashes are ``hashes``."""
    builder = TreeBuilder()
    builder.append(list(hashes))
    return builder.root()


class MemoryTree:
    """A whole tree in memory: every complete node hash, as a :class:`HashSource`.

    For tests, examples and small logs; stores keep the same hashes in tiles.
    """

    __slots__ = ("_builder", "_levels")

    def __init__(self, entries: Iterable[bytes] = ()) -> None:
        self._builder = TreeBuilder()
        self._levels: list[list[bytes]] = []
        self.append_entries(entries)

    @property
    def size(self) -> int:
        """The number of leaves."""
        return self._builder.size

    def append_entries(self, entries: Iterable[bytes]) -> None:
        """Append leaves given as entry data (hashed as RFC 6962 leaves)."""
        self.append_leaf_hashes(leaf_hashes(entries))

    def append_leaf_hashes(self, hashes: Sequence[bytes]) -> None:
        """Append leaves given as leaf hashes."""
        for run in self._builder.append(hashes):
            if run.level == len(self._levels):
                self._levels.append([])
            self._levels[run.level].extend(run.hashes)

    def root(self) -> bytes:
        """The head of the whole tree."""
        return self._builder.root()

    def node_hashes(self, nodes: Sequence[TreeNode]) -> list[bytes]:
        """The stored hash of each complete node; a node not in the tree is an error."""
        hashes: list[bytes] = []
        for node in nodes:
            level, index = node.level, node.index
            if not (0 <= level < len(self._levels) and 0 <= index < len(self._levels[level])):
                raise HashSourceError(
                    f"node (level {level}, index {index}) is not a complete subtree "
                    f"of the tree of size {self.size}"
                )
            hashes.append(self._levels[level][index])
        return hashes
