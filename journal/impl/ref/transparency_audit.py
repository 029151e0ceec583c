"""The audit of a Journal log's transparency tree: stored leaves and tiles against the texts.

The tree is recomputed from the stored texts, in notification order, and
every stored leaf (its bytes and the notification it came from) and every
stored tile is compared with it (a partial tile of level 0 is not stored: it
is hashed from the leaves). The first difference is named: the leaf's
position, or the tile's path.
"""

from __future__ import annotations

from typing import cast

from nenjim.domain.transparency import HASH_SIZE, TILE_WIDTH, InvalidTileError, Tile
from nenjim.infrastructure.log import LogDamagedError, LogReader, StoredTile
from nenjim.journal.impl.ref.chain_log import read_after
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency import (
    RevisionEvent,
    expected_tiles,
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
    """The first way the stored tree disagrees with the log's texts (``None``: none); see
    :func:`_tree_problem`. A value of the wrong type in its tables is one."""
    try:
        return _tree_problem(log)
    except LogDamagedError as error:
        return str(error)


def _tree_problem(log: JournalLog) -> str | None:
    """The first way the stored tree disagrees with the log's texts (``None``: none).

    A log without both tables of the tree was written before the tree existed:
    there is nothing stored to compare (the next writer's open builds it). One
    table without the other is damage, and so is a value of another type than its
    column's, even one that reads back as the same bytes.
    """
    leaves = text_leaves(log)
    tiled = log.tiled_log
    absent = tiled.missing_tables()
    if len(absent) == 2:
        return None
    if absent:
        return f"table {absent[0]} of the transparency tree is missing"
    if (mistyped := tiled.mistyped_value()) is not None:
        return mistyped
    stored = tiled.read_entries(0, max(tiled.entry_count(), len(leaves)) + 1)
    for position, (expected, found) in enumerate(zip(leaves, stored, strict=False)):
        if found[0] != expected[0]:
            return (
                f"transparency leaf {position} is stored for notification {found[0]}; "
                f"the revision at that position is notification {expected[0]}"
            )
        if found[1] != expected[1]:
            return (
                f"transparency leaf {position} (notification {expected[0]}) differs from "
                f"the leaf of its stored text: {found[1]!r} != {expected[1]!r}"
            )
    if len(stored) != len(leaves):
        return (
            f"the transparency tree holds {len(stored)} leaves; "
            f"the log holds {len(leaves)} revisions"
        )
    if (count := tiled.entry_count()) != len(stored):
        return (
            f"the transparency tree's {len(stored)} leaves are not numbered from 0 to "
            f"{len(stored) - 1}: the last is at position {count - 1}"
        )
    size, tiles = expected_tiles(data for _, data in leaves)
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
