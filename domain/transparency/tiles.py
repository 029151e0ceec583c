"""C2SP tlog-tiles: tile coordinates and paths, tile bytes, entry bundles.

A tile has height 8: the tile at level ``L``, index ``N`` holds the hashes of
the tree nodes at height ``8 * L`` with indexes ``256 * N`` to ``256 * N + W - 1``
concatenated (32 bytes each); level 0 tiles hold leaf hashes. A full tile has
``W = 256`` hashes (8,192 bytes); the right-most tile of a level may be
partial, ``1 <= W <= 255``, and is never hashed into the level above.

Paths: ``tile/<L>/<N>[.p/<W>]`` and ``tile/entries/<N>[.p/<W>]``. ``L`` is
decimal without leading zeros (0 to 63); ``N`` is written in groups of three
zero-padded digits, every group but the last prefixed with ``x`` (5 is
``005``, 1234067 is ``x001/x234/067``); ``.p/<W>`` marks a partial tile.

An entry bundle holds the leaf data of the entries of one level 0 tile, each
as a 2-byte big-endian length followed by the bytes.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple, Protocol

from nenjim.domain.transparency.errors import (
    HashSourceError,
    InvalidEntryBundleError,
    InvalidTileError,
    InvalidTilePathError,
)
from nenjim.domain.transparency.merkle import (
    HASH_SIZE,
    HashSource,
    NodeRun,
    TreeBuilder,
    TreeNode,
    node_hash,
)

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
MAX_TILE_LEVEL = 63
MAX_ENTRY_SIZE = 0xFFFF

_INDEX = r"((?:x[0-9]{3}/)*[0-9]{3})"
_PARTIAL = r"(?:\.p/([1-9][0-9]{0,2}))?"
_TILE_PATH = re.compile(rf"tile/(0|[1-9][0-9]?)/{_INDEX}{_PARTIAL}")
_BUNDLE_PATH = re.compile(rf"tile/entries/{_INDEX}{_PARTIAL}")
_LENGTH = struct.Struct(">H")


def _encode_index(index: int) -> str:
    groups = [f"{index % 1000:03d}"]
    index //= 1000
    while index:
        groups.append(f"x{index % 1000:03d}")
        index //= 1000
    return "/".join(reversed(groups))


def _suffix(width: int) -> str:
    return "" if width == TILE_WIDTH else f".p/{width}"


def _check_width(width: int, what: str) -> None:
    if not 1 <= width <= TILE_WIDTH:
        raise InvalidTileError(f"{what}: width {width} is not in [1, {TILE_WIDTH}]")


@dataclass(frozen=True, slots=True)
class Tile:
    """The coordinates of a hash tile: level, index within the level, width."""

    level: int
    index: int
    width: int = TILE_WIDTH

    def __post_init__(self) -> None:
        if not 0 <= self.level <= MAX_TILE_LEVEL:
            raise InvalidTileError(f"tile level {self.level} is not in [0, {MAX_TILE_LEVEL}]")
        if self.index < 0:
            raise InvalidTileError(f"tile index {self.index} is negative")
        _check_width(self.width, f"tile at level {self.level}, index {self.index}")

    @property
    def is_full(self) -> bool:
        """Whether the tile holds all 256 hashes (and so never changes)."""
        return self.width == TILE_WIDTH

    @property
    def path(self) -> str:
        """The canonical C2SP path, ``tile/<L>/<N>[.p/<W>]``."""
        return f"tile/{self.level}/{_encode_index(self.index)}{_suffix(self.width)}"

    @property
    def node_level(self) -> int:
        """The tree level (height) of the nodes whose hashes the tile holds."""
        return self.level * TILE_HEIGHT

    def nodes(self) -> list[TreeNode]:
        """The tree nodes whose hashes the tile holds, in tile order."""
        first = self.index * TILE_WIDTH
        return [TreeNode(self.node_level, first + i) for i in range(self.width)]


@dataclass(frozen=True, slots=True)
class EntryBundle:
    """The coordinates of an entry bundle: the entries of level 0 tile ``index``."""

    index: int
    width: int = TILE_WIDTH

    def __post_init__(self) -> None:
        if self.index < 0:
            raise InvalidTileError(f"entry bundle index {self.index} is negative")
        _check_width(self.width, f"entry bundle {self.index}")

    @property
    def is_full(self) -> bool:
        """Whether the bundle holds all 256 entries (and so never changes)."""
        return self.width == TILE_WIDTH

    @property
    def path(self) -> str:
        """The canonical C2SP path, ``tile/entries/<N>[.p/<W>]``."""
        return f"tile/entries/{_encode_index(self.index)}{_suffix(self.width)}"

    @property
    def first_entry(self) -> int:
        """The log index of the bundle's first entry."""
        return self.index * TILE_WIDTH


def _parse_index_and_width(match: re.Match[str], index_group: int) -> tuple[int, int]:
    index = int(match.group(index_group).replace("x", "").replace("/", ""))
    partial = match.group(index_group + 1)
    return index, TILE_WIDTH if partial is None else int(partial)


def parse_tile_path(path: str) -> Tile:
    """The tile a canonical ``tile/<L>/<N>[.p/<W>]`` path names; anything else is refused."""
    match = _TILE_PATH.fullmatch(path)
    if match is not None:
        level = int(match.group(1))
        index, width = _parse_index_and_width(match, 2)
        if level <= MAX_TILE_LEVEL and width <= TILE_WIDTH:
            tile = Tile(level, index, width)
            # Re-encoding refuses the non-canonical rest: "x000/" groups, ".p/256".
            if tile.path == path:
                return tile
    raise InvalidTilePathError(f"not a canonical tile path: {path!r}")


def parse_entry_bundle_path(path: str) -> EntryBundle:
    """The bundle a canonical ``tile/entries/<N>[.p/<W>]`` path names; anything else is refused."""
    match = _BUNDLE_PATH.fullmatch(path)
    if match is not None:
        index, width = _parse_index_and_width(match, 1)
        if width <= TILE_WIDTH:
            bundle = EntryBundle(index, width)
            if bundle.path == path:
                return bundle
    raise InvalidTilePathError(f"not a canonical entry bundle path: {path!r}")


def _check_size(size: int) -> None:
    if size < 0:
        raise InvalidTileError(f"tree size {size} is negative")


def tile_width_in_tree(level: int, index: int, size: int) -> int:
    """How many hashes tile ``level``/``index`` holds in the tree of ``size`` leaves (0: none)."""
    _check_size(size)
    return max(0, min(TILE_WIDTH, (size >> (TILE_HEIGHT * level)) - index * TILE_WIDTH))


def tiles_for_size(size: int) -> list[Tile]:
    """Every tile of the tree of ``size`` leaves, level by level, partial ones included."""
    return new_tiles(0, size)


def new_tiles(old_size: int, new_size: int) -> list[Tile]:
    """The tiles of the tree of ``new_size`` that the tree of ``old_size`` lacks.

    These are the tiles to write when the log grows from ``old_size`` to
    ``new_size``: tiles that became full, and the new partial tile of each
    level whose width changed.
    """
    _check_size(old_size)
    if new_size < old_size:
        raise InvalidTileError(f"tree size {new_size} is smaller than tree size {old_size}")
    tiles: list[Tile] = []
    level = 0
    while (new_count := new_size >> (TILE_HEIGHT * level)) != old_size >> (TILE_HEIGHT * level):
        old_count = old_size >> (TILE_HEIGHT * level)
        full = new_count // TILE_WIDTH
        tiles.extend(Tile(level, index) for index in range(old_count // TILE_WIDTH, full))
        if new_count % TILE_WIDTH:
            tiles.append(Tile(level, full, new_count % TILE_WIDTH))
        level += 1
    return tiles


def entry_bundles_for_size(size: int) -> list[EntryBundle]:
    """Every entry bundle of the tree of ``size`` leaves, the partial one last."""
    _check_size(size)
    bundles = [EntryBundle(index) for index in range(size // TILE_WIDTH)]
    if size % TILE_WIDTH:
        bundles.append(EntryBundle(size // TILE_WIDTH, size % TILE_WIDTH))
    return bundles


def tile_for_node(node: TreeNode, size: int) -> Tile:
    """The tile of the tree of ``size`` leaves from which ``node``'s hash is read.

    A node at a tree level between two tile levels is rebuilt from the hashes
    of the tile below it, as a perfect subtree of those hashes.
    """
    _check_size(size)
    tile_level, tile_index, _, _ = _locate(node, size)
    return Tile(tile_level, tile_index, tile_width_in_tree(tile_level, tile_index, size))


def _locate(node: TreeNode, size: int) -> tuple[int, int, int, int]:
    """Where ``node`` of the tree of ``size`` leaves is read from: its tile's level and
    index, the offset of the node's first hash in that tile, and the height of the
    subtree those hashes are the bottom of (0: the node's own hash)."""
    level, index = node.level, node.index
    if level < 0 or index < 0 or (index + 1) << level > size:
        raise HashSourceError(
            f"node (level {level}, index {index}) is not a complete subtree "
            f"of the tree of size {size}"
        )
    tile_level, height = divmod(level, TILE_HEIGHT)
    first = index << height
    tile_index = first // TILE_WIDTH
    return tile_level, tile_index, first - tile_index * TILE_WIDTH, height


def tile_hashes(tile: Tile, data: bytes) -> list[bytes]:
    """The ``tile.width`` hashes in tile bytes ``data`` (exactly ``32 * width`` bytes)."""
    if len(data) != tile.width * HASH_SIZE:
        raise InvalidTileError(
            f"{tile.path}: {len(data)} bytes, expected {tile.width * HASH_SIZE} "
            f"({tile.width} hashes of {HASH_SIZE} bytes)"
        )
    return [data[offset : offset + HASH_SIZE] for offset in range(0, len(data), HASH_SIZE)]


def tile_data(hashes: Sequence[bytes]) -> bytes:
    """Tile bytes: 1 to 256 hashes of 32 bytes, concatenated."""
    _check_width(len(hashes), "tile data")
    for position, value in enumerate(hashes):
        if len(value) != HASH_SIZE:
            raise InvalidTileError(
                f"tile data: hash {position} is {len(value)} bytes, not {HASH_SIZE}"
            )
    return b"".join(hashes)


def read_tile(tile: Tile, source: HashSource) -> bytes:
    """The bytes of ``tile``, built from the node hashes that ``source`` stores."""
    return tile_data(source.node_hashes(tile.nodes()))


def node_hash_from_tile(tile: Tile, data: bytes, node: TreeNode) -> bytes:
    """The hash of ``node``, read from (or rebuilt out of) the bytes of ``tile``."""
    if len(data) != tile.width * HASH_SIZE:
        tile_hashes(tile, data)  # raises, naming the tile
    tile_level, height = divmod(node.level, TILE_HEIGHT)
    first = node.index << height
    offset = first - tile.index * TILE_WIDTH
    if tile_level != tile.level or not 0 <= offset <= tile.width - (1 << height):
        raise InvalidTileError(
            f"{tile.path} does not hold node (level {node.level}, index {node.index})"
        )
    return _head_of_row(data, offset, height)


def _head_of_row(data: bytes, offset: int, height: int) -> bytes:
    """The head of the ``2**height`` hashes of tile bytes ``data`` from ``offset`` on."""
    row = data[offset * HASH_SIZE : (offset + (1 << height)) * HASH_SIZE]
    return row if height == 0 else _subtree_head(row)


@lru_cache(maxsize=1024)
def _subtree_head(row: bytes) -> bytes:
    """The head of the complete subtree whose bottom hashes are ``row`` (2, 4, ... 128 of them).

    A writer resumes the tree at its right edge before every append, and the
    edge's nodes inside a tile do not change while the tile grows: the same
    rows come back append after append, so their heads are kept (keyed by the
    bytes themselves, so a cached head is always the right one).
    """
    hashes = [row[offset : offset + HASH_SIZE] for offset in range(0, len(row), HASH_SIZE)]
    while len(hashes) > 1:
        pairs = iter(hashes)
        hashes = [node_hash(left, right) for left, right in zip(pairs, pairs, strict=False)]
    return hashes[0]


class TileReader(Protocol):
    """Anything that returns tile bytes: a store, a cache, an HTTP client."""

    def read_tiles(self, tiles: Sequence[Tile]) -> Sequence[bytes]:
        """The bytes of each tile, in request order."""
        ...


class TileHashSource:
    """A :class:`~nenjim.domain.transparency.merkle.HashSource` over the tiles of a tree.

    Each request reads every tile it needs once, in one ``read_tiles`` call: a
    proof for a tree of ``n`` leaves needs ``O(log n)`` tiles. A reader may
    answer a partial tile with a wider version of it (the full tile that
    replaced it); only the first ``width`` hashes are used.
    """

    __slots__ = ("_reader", "_size")

    def __init__(self, size: int, reader: TileReader) -> None:
        _check_size(size)
        self._size = size
        self._reader = reader

    def node_hashes(self, nodes: Sequence[TreeNode]) -> list[bytes]:
        """The hash of each node, read out of the tiles of the tree."""
        size = self._size
        # Located by numbers, one Tile per distinct tile: a writer resumes the tree
        # before every append, asking for ~log2(size) nodes in two or three tiles.
        located = [_locate(node, size) for node in nodes]
        keys = list(dict.fromkeys([(level, index) for level, index, _, _ in located]))
        tiles = [Tile(level, i, tile_width_in_tree(level, i, size)) for level, i in keys]
        answers = self._reader.read_tiles(tiles)
        if len(answers) != len(tiles):
            raise HashSourceError(f"tile reader returned {len(answers)} tiles for {len(tiles)}")
        data: dict[tuple[int, int], bytes] = {}
        for key, tile, raw in zip(keys, tiles, answers, strict=True):
            if (
                len(raw) % HASH_SIZE
                or not tile.width * HASH_SIZE <= len(raw) <= TILE_WIDTH * HASH_SIZE
            ):
                raise InvalidTileError(
                    f"{tile.path}: {len(raw)} bytes, expected {tile.width * HASH_SIZE} "
                    f"({tile.width} hashes of {HASH_SIZE} bytes)"
                )
            data[key] = raw[: tile.width * HASH_SIZE]
        # A node inside the tree lies inside its tile's width there: no range check.
        return [
            _head_of_row(data[level, index], offset, height)
            for level, index, offset, height in located
        ]


def encode_entry_bundle(entries: Iterable[bytes]) -> bytes:
    """An entry bundle: 1 to 256 entries, each a 2-byte big-endian length and the bytes."""
    parts: list[bytes] = []
    count = 0
    for count, entry in enumerate(entries, start=1):
        if len(entry) > MAX_ENTRY_SIZE:
            raise InvalidEntryBundleError(
                f"entry {count - 1} is {len(entry)} bytes; a bundled entry has at most "
                f"{MAX_ENTRY_SIZE} bytes"
            )
        parts.append(_LENGTH.pack(len(entry)))
        parts.append(entry)
    if not 1 <= count <= TILE_WIDTH:
        raise InvalidEntryBundleError(
            f"an entry bundle holds 1 to {TILE_WIDTH} entries, not {count}"
        )
    return b"".join(parts)


def decode_entry_bundle(data: bytes, width: int | None = None) -> list[bytes]:
    """The entries of bundle bytes ``data``; with ``width``, exactly that many.

    Truncated lengths or entries, trailing bytes, an empty bundle and more
    than 256 entries are refused.
    """
    entries: list[bytes] = []
    append = entries.append
    position = 0
    end = len(data)
    # The hot loop of a verifier reading a whole log: index bytes rather than
    # unpacking a struct, and check a truncated entry once, after the loop.
    for _ in range(TILE_WIDTH):
        if position >= end:
            break
        if position + 2 > end:
            raise InvalidEntryBundleError(f"entry bundle has a truncated length at byte {position}")
        start = position + 2
        position = start + (data[position] << 8 | data[position + 1])
        append(data[start:position])
    else:
        if position < end:
            raise InvalidEntryBundleError(
                f"entry bundle has more than {TILE_WIDTH} entries: byte {position} of {end} "
                "starts another"
            )
    if position > end:
        raise InvalidEntryBundleError(
            f"entry {len(entries) - 1} of the entry bundle is truncated: it claims "
            f"{len(entries[-1]) + position - end} bytes, {len(entries[-1])} remain"
        )
    if not entries or (width is not None and len(entries) != width):
        expected = "at least 1" if width is None else str(width)
        raise InvalidEntryBundleError(
            f"entry bundle has {len(entries)} entries, expected {expected}"
        )
    return entries


class LeafTile(NamedTuple):
    """A full level 0 tile hashed from its 256 entries: the tile bytes and the subtree's head."""

    data: bytes
    head: bytes


def leaf_tile(entries: Sequence[bytes]) -> LeafTile:
    """Hash the 256 entries of a full entry bundle: their leaf hashes as tile bytes, and the head.

    The head is the level 8 node over the entries, what
    :meth:`~nenjim.domain.transparency.merkle.TreeBuilder.append_subtrees` takes. This
    is the per-leaf hot loop of a verifier: 511 SHA-256 calls per tile, with
    the hash function and prefixes bound locally and no per-node objects but
    the digests.
    """
    if len(entries) != TILE_WIDTH:
        raise InvalidTileError(f"a full leaf tile has {TILE_WIDTH} entries, not {len(entries)}")
    sha256 = hashlib.sha256
    leaf, node = b"\x00", b"\x01"
    row = [sha256(leaf + entry).digest() for entry in entries]
    data = b"".join(row)
    while len(row) > 1:
        pairs = iter(row)
        row = [
            sha256(node + left + right).digest() for left, right in zip(pairs, pairs, strict=False)
        ]
    return LeafTile(data, row[0])


class TileTree:
    """A tree built from leaf hashes or whole hashed leaf tiles, keeping every tile of it.

    What a verifier recomputes to compare with the tiles a log serves: full
    level 0 tiles may be hashed anywhere (:func:`leaf_tile`, on other cores) and
    appended as they are; the rest of the tree is built from their heads.
    """

    __slots__ = ("_builder", "_tiles")

    def __init__(self) -> None:
        self._builder = TreeBuilder()
        self._tiles: dict[tuple[int, int], bytearray] = {}

    @property
    def size(self) -> int:
        """The number of leaves appended."""
        return self._builder.size

    def append_leaf_hashes(self, hashes: Sequence[bytes]) -> None:
        """Append leaves given as leaf hashes."""
        self._keep(self._builder.append(hashes))

    def append_leaf_tiles(self, tiles: Sequence[LeafTile]) -> None:
        """Append full level 0 tiles; the tree's size must be a multiple of 256."""
        first = self.size // TILE_WIDTH
        for index, tile in enumerate(tiles, start=first):
            if len(tile.data) != TILE_WIDTH * HASH_SIZE:
                tile_hashes(Tile(0, index), tile.data)  # raises, naming the tile
        runs = self._builder.append_subtrees(TILE_HEIGHT, [tile.head for tile in tiles])
        for index, tile in enumerate(tiles, start=first):
            self._tiles[0, index] = bytearray(tile.data)
        self._keep(runs)

    def _keep(self, runs: list[NodeRun]) -> None:
        tiles = self._tiles
        for run in runs:
            if run.level % TILE_HEIGHT == 0:
                level = run.level // TILE_HEIGHT
                for index, value in enumerate(run.hashes, start=run.start):
                    tiles.setdefault((level, index // TILE_WIDTH), bytearray()).extend(value)

    def root(self) -> bytes:
        """The head of the tree of every leaf appended."""
        return self._builder.root()

    def tiles(self) -> dict[tuple[int, int], bytes]:
        """Every tile of the tree, by ``(level, index)``: partial ones as wide as they are."""
        return {key: bytes(data) for key, data in self._tiles.items()}
