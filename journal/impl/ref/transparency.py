"""The Journal's transparency log: its revisions as the leaves of a tiled Merkle tree.

Every accepted revision, in the log's notification order, is one leaf; its
data is the leaf line of :mod:`nenjim.domain.transparency.journal_leaf`, computed
from the stored text. :class:`JournalTiler` is what the Journal log gives
``nenjim.infrastructure.log`` so that the leaves (as entries) and the tree's tiles
are written in the transaction of the revisions they cover.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from eventsourcing.persistence import Notification

from nenjim.domain.journal.chain import EVENT_TOPICS, JournalChain
from nenjim.domain.transparency import (
    HASH_SIZE,
    TILE_HEIGHT,
    TILE_WIDTH,
    JournalLeaf,
    Tile,
    TileHashSource,
    TileTree,
    TreeBuilder,
    leaf_hashes,
)
from nenjim.domain.transparency.tiles import tile_width_in_tree
from nenjim.infrastructure.log import (
    Decode,
    StoredTile,
    TileGrowth,
    TileKey,
    TileReads,
    TilesMissingError,
)

RevisionEvent = JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted
_FULL_TILE = TILE_WIDTH * HASH_SIZE


def revision_leaf(event: RevisionEvent) -> bytes:
    """The leaf data of an accepted revision, from its stored text."""
    return JournalLeaf.of_revision(
        event.coordinate, event.journal_version, event.text.encode("utf-8")
    ).data()


class JournalTiler:
    """Leaves of revision events, and the tiles they change (the log's ``EntryTiler``).

    Every tile is stored except a partial tile of level 0: its hashes are
    those of the newest leaves, so :class:`TreeTiles` hashes it from the
    entries when it is read. Rewriting that tile at every append (up to 8 KiB)
    would cost more than the rest of the append's rows.
    """

    def entry_of(self, notification: Notification, decode: Decode) -> bytes | None:
        """The leaf of a stored revision event (the topic is checked before decoding)."""
        if notification.topic not in EVENT_TOPICS:
            return None
        event = decode(notification)
        return revision_leaf(event) if isinstance(event, RevisionEvent) else None

    def tiles_after(
        self, size: int, entries: Sequence[bytes], reads: TileReads, edge: object | None
    ) -> TileGrowth:
        """The tiles to store when leaves ``entries`` follow the ``size`` stored ones, and
        the tree's right edge after them (``edge``: the one before, when known)."""
        if isinstance(edge, _RightEdge):
            reader = TreeTiles(reads, edge.tiles)
            builder = edge.builder.copy()
        else:
            reader = TreeTiles(reads)
            builder = TreeBuilder.resume(size, TileHashSource(size, reader))
        grown = grown_tiles(builder, entries, reader)
        for tile in grown:
            reader.seen[(tile.level, tile.index)] = tile.data
        stored = [tile for tile in grown if is_stored_tile(tile.level, tile.data)]
        return TileGrowth(stored, _RightEdge.of(builder, reader.seen))


def is_stored_tile(level: int, data: bytes) -> bool:
    """Whether the Journal log stores the tile of ``level`` with bytes ``data`` (every
    tile but a partial one of level 0)."""
    return level > 0 or len(data) == _FULL_TILE


class _RightEdge:
    """What the next append needs of a tree: a builder at its size, and the partial tile
    of each level."""

    __slots__ = ("builder", "tiles")

    def __init__(self, builder: TreeBuilder, tiles: dict[TileKey, bytes]) -> None:
        self.builder = builder
        self.tiles = tiles

    @classmethod
    def of(cls, builder: TreeBuilder, seen: Mapping[TileKey, bytes]) -> _RightEdge:
        """The edge of ``builder``'s tree, its partial tiles out of the tiles ``seen`` (at
        least as wide as the tree's; a tile not seen is left out, and read when needed)."""
        tiles: dict[TileKey, bytes] = {}
        level, count = 0, builder.size
        while count:
            index, width = divmod(count, TILE_WIDTH)
            data = seen.get((level, index)) if width else None
            if data is not None and len(data) >= width * HASH_SIZE:
                tiles[(level, index)] = data[: width * HASH_SIZE]
            level, count = level + 1, count >> TILE_HEIGHT
        return cls(builder, tiles)


class NewestLeafHashes:
    """A reader's newest tile of level 0 as last hashed from the entries, kept between
    reads: leaves never change, so the next read hashes only the leaves added since
    (a server signing a checkpoint per request)."""

    __slots__ = ("_tile",)

    def __init__(self) -> None:
        self._tile: tuple[TileKey, bytes] | None = None

    def known(self) -> dict[TileKey, bytes]:
        """The kept tile, by key (empty if none)."""
        tile = self._tile
        return {} if tile is None else {tile[0]: tile[1]}

    def keep(self, key: TileKey, data: bytes) -> None:
        """Keep ``data`` for tile ``key`` if it is at least as new as the kept one."""
        tile = self._tile
        if tile is None or (key[1], len(data)) >= (tile[0][1], len(tile[1])):
            self._tile = (key, data)  # replaced whole: safe for readers on other threads


class TreeTiles:
    """A ``TileReader`` over a tiled Journal log's tables (committed, or inside the
    writing transaction).

    Tiles are read as stored, except a partial tile of level 0, which is not
    stored: its hashes are those of its entries' leaves (only the leaves past
    a narrower version of it already at hand are read and hashed). ``known``
    tiles (a writer's right edge) are used first; every tile read is kept in
    ``seen``, and each tile hashed from entries is offered to ``newest``.
    """

    def __init__(
        self,
        reads: TileReads,
        known: Mapping[TileKey, bytes] | None = None,
        newest: NewestLeafHashes | None = None,
    ) -> None:
        self._reads = reads
        self._newest = newest
        self.seen: dict[TileKey, bytes] = dict(known or {})
        if newest is not None:
            self.seen.update(newest.known())

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        """The bytes of each tile (at least its width), in request order."""
        found: list[bytes] = []
        stored: list[tuple[int, TileKey]] = []
        for position, tile in enumerate(tiles):
            key = (tile.level, tile.index)
            data = self.seen.get(key, b"")
            if len(data) < tile.width * HASH_SIZE:
                if tile.level == 0 and tile.width < TILE_WIDTH:
                    data = self.seen[key] = _hashed_from_entries(self._reads, tile, data)
                    if self._newest is not None:
                        self._newest.keep(key, data)
                else:
                    stored.append((position, key))
            found.append(data)
        if stored:
            answers = self._reads.read_tiles([key for _, key in stored])
            for (position, key), data in zip(stored, answers, strict=True):
                tile = tiles[position]
                if len(data) < tile.width * HASH_SIZE:
                    raise TilesMissingError(
                        f"tile {tile.path} is stored with {len(data)} bytes, too few for its "
                        f"{tile.width} hashes"
                    )
                found[position] = self.seen[key] = bytes(data)
        return found


def _hashed_from_entries(reads: TileReads, tile: Tile, prefix: bytes) -> bytes:
    """The bytes of partial level-0 tile ``tile``: the leaf hashes of its entries, after
    the hashes ``prefix`` already holds."""
    first = tile.index * TILE_WIDTH + len(prefix) // HASH_SIZE
    stop = tile.index * TILE_WIDTH + tile.width
    entries = reads.read_entries(first, stop)
    if len(entries) != stop - first:
        raise TilesMissingError(
            f"tile {tile.path} is hashed from entries {tile.index * TILE_WIDTH} to {stop - 1}; "
            f"{len(entries)} of entries {first} to {stop - 1} are stored"
        )
    return prefix + b"".join(leaf_hashes([data for _, data in entries]))


def grown_tiles(
    builder: TreeBuilder, entries: Sequence[bytes], reader: TreeTiles
) -> list[StoredTile]:
    """Every tile that leaves ``entries`` change or create, appended to ``builder`` (the
    tree ``reader`` reads, at its size)."""
    size = builder.size
    added: dict[tuple[int, int], list[bytes]] = {}
    for run in builder.append(leaf_hashes(entries)):
        if run.level % TILE_HEIGHT:
            continue  # between tile levels: rebuilt from the tile below when needed
        level = run.level // TILE_HEIGHT
        for offset, value in enumerate(run.hashes):
            added.setdefault((level, (run.start + offset) // TILE_WIDTH), []).append(value)
    return [
        StoredTile(level, index, _old_hashes(level, index, size, reader) + b"".join(hashes))
        for (level, index), hashes in added.items()
    ]


def _old_hashes(level: int, index: int, size: int, reader: TreeTiles) -> bytes:
    width = tile_width_in_tree(level, index, size)
    if not width:
        return b""
    return reader.read_tiles([Tile(level, index, width)])[0][: width * HASH_SIZE]


def expected_tiles(leaves: Iterable[bytes]) -> tuple[int, dict[tuple[int, int], bytes]]:
    """The tree size and every tile of the tree of ``leaves`` (streamed, for audits)."""
    tree = TileTree()
    batch: list[bytes] = []
    for leaf in leaves:
        batch.append(leaf)
        if len(batch) == TILE_WIDTH:
            tree.append_leaf_hashes(leaf_hashes(batch))
            batch.clear()
    tree.append_leaf_hashes(leaf_hashes(batch))
    return tree.size, tree.tiles()
