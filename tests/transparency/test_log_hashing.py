"""verify-log's recomputation of a served log: on a process pool as in this process."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from nenjim.client.log_hashing import (
    CHUNK_TILES,
    POOL_MIN_TILES,
    LogCheckError,
    pool_workers,
    recompute_log,
    usable_cores,
)
from nenjim.domain.transparency import (
    TILE_WIDTH,
    Checkpoint,
    EntryBundle,
    MemoryTree,
    encode_entry_bundle,
    entry_bundles_for_size,
    journal_leaf_data,
)
from nenjim.journal.impl.ref.transparency import expected_tiles

SIZE = (CHUNK_TILES + 3) * TILE_WIDTH + 77  # more than one pool task, and a partial bundle
LEAVES = [
    journal_leaf_data(f"org.example.a{n % 50}", f"2026{n:011d}", b"%d" % n) for n in range(SIZE)
]
WORKERS = [0, 1, 2]


def _served(leaves: list[bytes]) -> list[tuple[EntryBundle, bytes]]:
    return [
        (
            bundle,
            encode_entry_bundle(leaves[bundle.first_entry : bundle.first_entry + bundle.width]),
        )
        for bundle in entry_bundles_for_size(len(leaves))
    ]


def _trusted(size: int) -> Checkpoint:
    return Checkpoint("example.com/log", size, MemoryTree(LEAVES[:size]).root())


@pytest.mark.parametrize("workers", WORKERS)
def test_the_recomputed_tree_is_the_tree_of_the_served_entries(workers: int) -> None:
    log = recompute_log(
        _served(LEAVES), since=None, with_leaves=True, where="http://log/", workers=workers
    )
    size, tiles = expected_tiles(LEAVES)
    assert (log.tree.size, log.tree.root()) == (size, MemoryTree(LEAVES).root())
    assert log.tree.tiles() == tiles
    assert log.leaf_bytes == sum(map(len, LEAVES))
    assert len(log.logged) == SIZE
    assert log.logged["org.example.a7", f"2026{7:011d}"] == hashlib.sha256(b"7").digest()


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("since", [0, 1, TILE_WIDTH, 5 * TILE_WIDTH + 3, SIZE - 1, SIZE])
def test_a_trusted_prefix_of_the_served_entries_is_accepted(workers: int, since: int) -> None:
    log = recompute_log(
        _served(LEAVES), since=_trusted(since), with_leaves=False, where="", workers=workers
    )
    assert log.tree.root() == MemoryTree(LEAVES).root()
    assert log.logged == {}


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("since", [1, TILE_WIDTH, 5 * TILE_WIDTH + 3, SIZE])
def test_a_rewritten_prefix_is_refused(workers: int, since: int) -> None:
    rewritten = [*LEAVES]
    rewritten[since - 1] = journal_leaf_data("org.example.other", "20260101T000000Z", b"x")
    with pytest.raises(LogCheckError) as caught:
        recompute_log(
            _served(rewritten), since=_trusted(since), with_leaves=False, where="", workers=workers
        )
    assert str(caught.value) == (
        f"the first {since} served entries do not hash to the root of the checkpoint "
        "trusted before: the log was rewritten"
    )


@pytest.mark.parametrize("workers", WORKERS)
def test_the_first_bad_bundle_in_log_order_is_named(workers: int) -> None:
    served = _served(LEAVES)
    for index in (CHUNK_TILES + 1, 3):  # the later one is in another pool task
        bundle, data = served[index]
        served[index] = (bundle, data[:100] + b"X" + data[101:])
    with pytest.raises(LogCheckError) as caught:
        recompute_log(served, since=None, with_leaves=False, where="http://log/", workers=workers)
    assert str(caught.value).startswith(
        "http://log/tile/entries/003: not a journal leaf line (<coordinate> <journal-version> "
    )
    served[3] = (served[3][0], served[3][1][:-1])
    with pytest.raises(LogCheckError) as caught:
        recompute_log(served, since=None, with_leaves=False, where="http://log/", workers=workers)
    assert str(caught.value).startswith("http://log/tile/entries/003: entry 255 of the entry ")


def _failing_after(
    served: list[tuple[EntryBundle, bytes]], count: int
) -> Iterator[tuple[EntryBundle, bytes]]:
    yield from served[:count]
    raise LogCheckError(f"cannot fetch http://log/tile/entries/{count:03d}: connection refused")


@pytest.mark.parametrize("workers", WORKERS)
def test_a_failed_fetch_is_reported_after_the_bundles_fetched_before_it(workers: int) -> None:
    served = _served(LEAVES)
    count = CHUNK_TILES + 5  # one whole pool task, and some bundles not yet sent
    with pytest.raises(LogCheckError, match=rf"entries/{count:03d}: connection refused$"):
        recompute_log(
            _failing_after(served, count), since=None, with_leaves=False, where="", workers=workers
        )
    bundle, data = served[CHUNK_TILES + 2]
    served[CHUNK_TILES + 2] = (bundle, data[:-1])
    with pytest.raises(LogCheckError, match=rf"^http://log/{bundle.path}: entry 255 "):
        recompute_log(
            _failing_after(served, count),
            since=None,
            with_leaves=False,
            where="http://log/",
            workers=workers,
        )


def test_only_a_log_of_many_full_tiles_is_hashed_on_a_pool() -> None:
    assert pool_workers((POOL_MIN_TILES - 1) * TILE_WIDTH + 255) == 0
    cores = usable_cores()
    assert pool_workers(POOL_MIN_TILES * TILE_WIDTH) == (cores if cores > 1 else 0)
