"""The Journal's transparency log: its revisions as the leaves of a tiled Merkle tree.

Every accepted revision, in the log's notification order, is one leaf; its
data is the leaf line of :mod:`domain.transparency.journal_leaf`, computed
from the stored text. :class:`JournalTiler` is what the Journal log gives
``infrastructure.log`` so that the leaves (as entries) and the tree's tiles
are written in the transaction of the revisions they cover.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from eventsourcing.persistence import Notification

from domain.journal.chain import EVENT_TOPICS, JournalChain
from domain.transparency import (
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
from domain.transparency.tiles import tile_width_in_tree
from infrastructure.log import Decode, ReadTiles, StoredTile

RevisionEvent = JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted


def revision_leaf(event: RevisionEvent) -> bytes:
    """The leaf data of an accepted revision, from its stored text."""
    return JournalLeaf.of_revision(
        event.coordinate, event.journal_version, event.text.encode("utf-8")
    ).data()


class JournalTiler:
    """Leaves of revision events, and the tiles they change (``infrastructure.log.EntryTiler``)."""

    def entry_of(self, notification: Notification, decode: Decode) -> bytes | None:
        """The leaf of a stored revision event (the topic is checked before decoding)."""
        if notification.topic not in EVENT_TOPICS:
            return None
        event = decode(notification)
        return revision_leaf(event) if isinstance(event, RevisionEvent) else None

    def tiles_after(
        self, size: int, entries: Sequence[bytes], read_tiles: ReadTiles
    ) -> list[StoredTile]:
        """The tiles that change when leaves ``entries`` follow the ``size`` stored ones."""
        return grown_tiles(size, entries, _CachedTiles(read_tiles))


class _CachedTiles:
    """A ``TileReader`` over a store's tile reads, each tile read once."""

    def __init__(self, read_tiles: ReadTiles) -> None:
        self._read = read_tiles
        self._cache: dict[tuple[int, int], bytes] = {}

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        keys = [(tile.level, tile.index) for tile in tiles]
        missing = [key for key in dict.fromkeys(keys) if key not in self._cache]
        if missing:
            self._cache.update(zip(missing, self._read(missing), strict=True))
        return [self._cache[key] for key in keys]


def grown_tiles(size: int, entries: Sequence[bytes], reader: _CachedTiles) -> list[StoredTile]:
    """Every tile that leaves ``entries`` change or create, after ``size`` stored leaves."""
    builder = TreeBuilder.resume(size, TileHashSource(size, reader))
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


def _old_hashes(level: int, index: int, size: int, reader: _CachedTiles) -> bytes:
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
