"""Recompute a served log's tree from its entry bundles, on every core for a large log.

A verifier hashes every leaf of the log: 2n - 1 SHA-256 calls for n leaves,
each mostly interpreter overhead for ~100-byte leaves, and ``hashlib`` keeps
the GIL for inputs that small, so threads do not help. The head of each full
entry bundle (256 leaves, one level 0 tile) depends on nothing else, so worker
processes decode, check and hash chunks of whole bundles (``leaf_tile``) while
this process fetches, and it appends the tiles and their heads to the tree in
log order. Small logs hash in this process: starting a pool costs more than it
saves.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

from nenjim.domain.transparency import (
    EMPTY_ROOT,
    TILE_WIDTH,
    Checkpoint,
    EntryBundle,
    JournalLeaf,
    LeafTile,
    Tile,
    TileTree,
    TransparencyError,
    check_leaf_lines,
    decode_entry_bundle,
    leaf_hashes,
    leaf_tile,
    tile_hashes,
)

POOL_MIN_TILES = 256
"""Full tiles (of 256 leaves) from which a log is hashed on a process pool.

Starting the workers costs ~20-60 ms of wall time on a loaded machine; hashing 256
tiles in one process takes ~100 ms, so below this the pool saves nothing.
"""

CHUNK_TILES = 16
"""Bundles per pool task: ~0.5 MB of entries, so that pickling them stays a small share."""

LoggedLeaves = dict[tuple[str, str], bytes]
"""Each entry's digest by ``(coordinate, journal version)``."""


class LogCheckError(Exception):
    """The served log does not verify: one line says why."""


class BadCheckpointError(LogCheckError):
    """The served checkpoint is not a checkpoint signed by the verifier key."""


class LogUnavailableError(LogCheckError):
    """The served log cannot be read (unreachable, too slow, a server error): one line says
    why. Nothing was found wrong with what was read of it."""


class HashedBundle(NamedTuple):
    """What hashing one entry bundle gave, or the one line saying why it could not be."""

    leaf_bytes: int
    hashes: bytes
    head: bytes | None
    leaves: tuple[tuple[str, str, bytes], ...]
    error: str | None


def hash_bundles(bundles: Sequence[tuple[bytes, int]], with_leaves: bool) -> list[HashedBundle]:
    """Decode, check and hash ``(bundle bytes, width)`` pairs, stopping at the first bad one.

    A full bundle's result carries its level 0 tile and the head of its 256
    leaves; a partial one its leaf hashes only. ``with_leaves``: also each
    entry's coordinate, journal version and digest. Runs in the pool's workers
    (in this process for a small log).
    """
    hashed: list[HashedBundle] = []
    for data, width in bundles:
        try:
            entries = decode_entry_bundle(data, width)
            check_leaf_lines(entries)
        except TransparencyError as error:
            hashed.append(HashedBundle(0, b"", None, (), str(error)))
            break
        leaves = (
            tuple(
                (leaf.coordinate, leaf.journal_version, leaf.digest)
                for leaf in map(JournalLeaf.parse, entries)
            )
            if with_leaves
            else ()
        )
        size = len(data) - 2 * width  # each entry's 2-byte length aside
        if width == TILE_WIDTH:
            tile = leaf_tile(entries)
            hashed.append(HashedBundle(size, tile.data, tile.head, leaves, None))
        else:
            hashed.append(HashedBundle(size, b"".join(leaf_hashes(entries)), None, leaves, None))
    return hashed


@dataclass(slots=True)
class RecomputedLog:
    """The tree recomputed from a log's entries, their bytes, and (if asked) what they log."""

    tree: TileTree = field(default_factory=TileTree)
    leaf_bytes: int = 0
    logged: LoggedLeaves = field(default_factory=dict)


def pool_workers(size: int) -> int:
    """How many worker processes hash a log of ``size`` leaves (0: none, this process does).

    One per core, and this process only fetches and builds the tree from the
    tile heads: when it hashed chunks too, it held the GIL that the pool's
    threads need to feed the workers and collect their results, and the
    workers waited (75 MB/s with one worker beside it, against 101-116 MB/s with
    two, on two free cores).
    """
    cores = usable_cores()
    return cores if cores > 1 and size // TILE_WIDTH >= POOL_MIN_TILES else 0


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def recompute_log(
    fetched: Iterable[tuple[EntryBundle, bytes]],
    *,
    since: Checkpoint | None,
    with_leaves: bool,
    where: str,
    workers: int,
) -> RecomputedLog:
    """The tree of the entry bundles ``fetched`` (in log order), checked against ``since``.

    Raises ``LogCheckError`` naming ``where`` + the bundle's path for a bundle
    that is malformed or holds an entry that is not a leaf line, and when the
    first ``since.size`` entries do not hash to ``since``'s root. ``workers``:
    worker processes to hash on (0: none, this process hashes).
    """
    log = RecomputedLog()
    tree = log.tree
    if since is not None and since.size == 0:
        _check_prefix(EMPTY_ROOT, since)
    for bundle, hashed in _hashed_in_order(fetched, with_leaves, workers):
        if hashed.error is not None:
            raise LogCheckError(f"{where}{bundle.path}: {hashed.error}")
        log.leaf_bytes += hashed.leaf_bytes
        for coordinate, version, digest in hashed.leaves:
            log.logged[coordinate, version] = digest
        end = tree.size + bundle.width
        if since is not None and tree.size < since.size < end:
            hashes = tile_hashes(Tile(0, bundle.index, bundle.width), hashed.hashes)
            tree.append_leaf_hashes(hashes[: since.size - tree.size])
            _check_prefix(tree.root(), since)
            tree.append_leaf_hashes(hashes[since.size - bundle.first_entry :])
            continue
        if hashed.head is not None:
            tree.append_leaf_tiles([LeafTile(hashed.hashes, hashed.head)])
        else:
            tree.append_leaf_hashes(tile_hashes(Tile(0, bundle.index, bundle.width), hashed.hashes))
        if since is not None and since.size == end:
            _check_prefix(tree.root(), since)
    return log


def _check_prefix(root: bytes, since: Checkpoint) -> None:
    if root != since.root_hash:
        raise LogCheckError(
            f"the first {since.size} served entries do not hash to the root of the checkpoint "
            "trusted before: the log was rewritten"
        )


Hashed = Iterator[tuple[EntryBundle, HashedBundle]]
Task = tuple[list[EntryBundle], Future[list[HashedBundle]]]
"""A chunk's bundles and their hashes to come."""


def _hashed_in_order(
    fetched: Iterable[tuple[EntryBundle, bytes]], with_leaves: bool, workers: int
) -> Hashed:
    """Each bundle with its hashes, in log order; chunks of bundles go to ``workers`` processes.

    Fetching goes on while the workers hash, at most two chunks per worker
    ahead. When fetching fails, the bundles fetched before are hashed first, so
    that the error reported is the first in log order.
    """
    if workers == 0:
        for bundle, data in fetched:
            yield bundle, hash_bundles([(data, bundle.width)], with_leaves)[0]
        return
    pending: deque[Task] = deque()
    chunk: list[tuple[EntryBundle, bytes]] = []
    pool = ProcessPoolExecutor(workers)
    try:
        try:
            for item in fetched:
                chunk.append(item)
                if len(chunk) == CHUNK_TILES:
                    pending.append(_submit(pool, chunk, with_leaves))
                    chunk = []
                    while pending and (len(pending) > 2 * workers or pending[0][1].done()):
                        yield from _results(pending.popleft())
        except LogCheckError:
            yield from _drain(pool, pending, chunk, with_leaves)
            raise
        yield from _drain(pool, pending, chunk, with_leaves)
    finally:
        pool.shutdown(cancel_futures=True)


def _submit(
    pool: ProcessPoolExecutor, chunk: list[tuple[EntryBundle, bytes]], with_leaves: bool
) -> Task:
    work = [(data, bundle.width) for bundle, data in chunk]
    return [bundle for bundle, _ in chunk], pool.submit(hash_bundles, work, with_leaves)


def _results(task: Task) -> Hashed:
    bundles, future = task
    # A chunk's results stop at its first bad bundle, which the caller raises on.
    return zip(bundles, future.result(), strict=False)


def _drain(
    pool: ProcessPoolExecutor,
    pending: deque[Task],
    chunk: list[tuple[EntryBundle, bytes]],
    with_leaves: bool,
) -> Hashed:
    if chunk:
        pending.append(_submit(pool, chunk, with_leaves))
    while pending:
        yield from _results(pending.popleft())
