"""The audit of a Journal log's transparency tree: stored leaves and tiles against the texts.

The tree is recomputed from the stored texts, in notification order, and
every stored leaf (its bytes and the notification it came from) and every
stored tile is compared with it (a partial tile of level 0 is not stored: it
is hashed from the leaves). The first difference is named: the leaf's
position, or the tile's path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from nenjim.domain.transparency import (
    HASH_SIZE,
    TILE_WIDTH,
    InvalidTileError,
    Tile,
    TileTree,
    leaf_hashes,
)
from nenjim.infrastructure.log import LogDamagedError, LogReader, StoredTile, TiledLog
from nenjim.journal.impl.ref.chain_log import read_after
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency import (
    RevisionEvent,
    is_stored_tile,
    revision_leaf,
)
from nenjim.projections.journal_chains import ChainFold, JournalWorldview


def text_leaves(log: JournalLog) -> list[tuple[int, bytes]]:
    """``(notification id, leaf data)`` of every revision, from its stored text, in log order.

    Each event is checked as start-up checks it before its leaf is computed: an
    event that is not a well-formed revision (an unknown or missing topic, an
    undecodable state, a field of the wrong type, a broken link) raises
    ``JournalIntegrityError`` naming its notification.
    """
    reader = LogReader(log)
    fold = ChainFold(JournalWorldview.empty(), keep=False)
    leaves: list[tuple[int, bytes]] = []
    for position, event in read_after(reader, 0):
        fold.add_row(position, event)
        leaves.append((position, revision_leaf(cast(RevisionEvent, event))))
    return leaves


def tree_problem(log: JournalLog) -> str | None:
    """The first way the stored tree disagrees with the log's texts (``None``: none), the
    texts read for it (see :class:`TreeCheck`, which the audit feeds from its own pass)."""
    check = TreeCheck(log)
    for position, leaf in text_leaves(log):
        check.add(position, leaf)
    return check.problem()


ENTRY_PAGE = 2_000
"""Stored leaves the streamed comparison reads at a time."""


class TreeCheck:
    """The stored tree compared with the leaves of the log's texts, fed in log order
    (:meth:`add`) by a pass that reads the log once; :meth:`problem` is the first way they
    disagree (``None``: none). A value of the wrong type in its tables is one.

    The stored leaves are read a page at a time, alongside; what is held is the tree
    recomputed so far (its tiles: 32 bytes a leaf), not the leaves.
    """

    def __init__(self, log: JournalLog) -> None:
        self._tiled = log.tiled_log
        self._leaves = 0  # fed so far
        self._batch: list[bytes] = []
        self._tree = TileTree()
        self._found: str | None = None
        self._stored = 0  # stored leaves compared so far
        self._count = 0
        self._entries: Iterator[tuple[int, bytes]] = iter(())
        try:
            self._found = self._stored_tables()
        except LogDamagedError as error:
            self._found = str(error)

    def _stored_tables(self) -> str | None:
        """A log without both tables of the tree was written before the tree existed:
        there is nothing stored to compare (the next writer's open builds it). One table
        without the other is damage, and so is a value of another type than its column's,
        even one that reads back as the same bytes."""
        absent = self._tiled.missing_tables()
        if len(absent) == 2:
            self._absent = True
            return None
        self._absent = False
        if absent:
            return f"table {absent[0]} of the transparency tree is missing"
        if (mistyped := self._tiled.mistyped_value()) is not None:
            return mistyped
        self._count = self._tiled.entry_count()
        self._entries = self._pages()
        return None

    def _pages(self) -> Iterator[tuple[int, bytes]]:
        """Every stored leaf in position order, read a page at a time (up to the positions
        the whole stored tree and the leaves fed so far reach)."""
        start = 0
        while start <= max(self._count, self._leaves):
            yield from self._tiled.read_entries(start, start + ENTRY_PAGE)
            start += ENTRY_PAGE

    def add(self, notification: int, leaf: bytes) -> None:
        """The leaf of the revision at ``notification``, the next one in log order."""
        index = self._leaves
        self._leaves += 1
        self._batch.append(leaf)
        if len(self._batch) == TILE_WIDTH:
            self._tree.append_leaf_hashes(leaf_hashes(self._batch))
            self._batch.clear()
        if self._found is None and not self._absent:
            try:
                self._compare(index, notification, leaf)
            except LogDamagedError as error:
                self._found = str(error)

    def _compare(self, index: int, notification: int, leaf: bytes) -> None:
        found = next(self._entries, None)
        if found is None:
            return
        self._stored += 1
        if found[0] != notification:
            self._found = (
                f"transparency leaf {index} is stored for notification {found[0]}; "
                f"the revision at that position is notification {notification}"
            )
        elif found[1] != leaf:
            self._found = (
                f"transparency leaf {index} (notification {notification}) differs from "
                f"the leaf of its stored text: {found[1]!r} != {leaf!r}"
            )

    def problem(self) -> str | None:
        """The first way the stored tree disagrees with the leaves fed (``None``: none)."""
        if self._found is not None or self._absent:
            return self._found
        try:
            return self._rest()
        except LogDamagedError as error:
            return str(error)

    def _rest(self) -> str | None:
        stored = self._stored + sum(1 for _ in self._entries)
        leaves = self._leaves
        if stored != leaves:
            return f"the transparency tree holds {stored} leaves; the log holds {leaves} revisions"
        if self._count != stored:
            return (
                f"the transparency tree's {stored} leaves are not numbered from 0 to "
                f"{stored - 1}: the last is at position {self._count - 1}"
            )
        self._tree.append_leaf_hashes(leaf_hashes(self._batch))
        self._batch.clear()
        return _tiles_problem(self._tiled, self._tree.size, self._tree.tiles())


def _tiles_problem(tiled: TiledLog, size: int, tiles: dict[tuple[int, int], bytes]) -> str | None:
    """How the stored tiles differ from ``tiles``, those of the tree of ``size`` leaves."""
    for tile in tiled.stored_tiles():
        key = (tile.level, tile.index)
        path = _path(tile.level, tile.index, len(tile.data))
        wanted = tiles.pop(key, None)
        if wanted is None:
            return f"stored tile {path} is not a tile of the tree of {size} revisions"
        if tile.data != wanted and not _earlier_partial(tile, wanted):
            return f"stored tile {path} differs from the tree recomputed from the texts"
    tiles = {key: data for key, data in tiles.items() if is_stored_tile(key[0], data)}
    if tiles:
        level, index = min(tiles)
        missing = _path(level, index, len(tiles[(level, index)]))
        return f"tile {missing} of the tree of {size} revisions is not stored"
    return None


def _earlier_partial(tile: StoredTile, wanted: bytes) -> bool:
    """Whether ``tile`` is the tree's partial tile of level 0 as an earlier version stored
    it: the first hashes of that tile (no longer read: hashed from the leaves)."""
    return (
        tile.level == 0
        and 0 < len(tile.data) < len(wanted) < TILE_WIDTH * HASH_SIZE
        and not len(tile.data) % HASH_SIZE
        and wanted.startswith(tile.data)
    )


def _path(level: int, index: int, length: int) -> str:
    """The tile's path as the bytes stored make it (a malformed length is shown as such)."""
    width, stray = divmod(length, HASH_SIZE)
    try:
        if not stray:
            return Tile(level, index, width).path
    except InvalidTileError:
        pass  # impossible coordinates or width: named by its row instead
    return f"(level {level}, index {index}, {length} bytes)"
