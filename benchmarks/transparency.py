"""The leaf-hashing benchmark: a transparency log's leaves hashed, next to ``hashlib``'s own rate.

A log of Journal leaves (``<coordinate> <journal-version> sha256:<hex>\\n``,
~100 bytes each) is encoded as C2SP entry bundles of 256 entries. Timed, each
over all the leaves, median of several runs:

* ``hashlib.sha256`` over one buffer of all the leaf bytes: the machine's raw
  SHA-256 rate, the ceiling;
* ``hashlib.sha256(entry).digest()`` for every entry: one call per leaf, the
  floor any per-leaf hashing in Python pays on one core;
* root from leaf data: ``leaf_hashes`` + ``TreeBuilder.append`` + ``root``;
* the verifier before (one core): per bundle ``decode_entry_bundle``,
  ``JournalLeaf.parse`` of every entry, and the tree with its tiles;
* ``verify-log``'s hashing as the client runs it (``nenjim.client.log_hashing.recompute_log``:
  decode, leaf-line check, ``leaf_tile``, ``TileTree`` with every tile), in
  this process alone and on its pool of one worker per core (start-up
  included).

Runs alternate them all, so a load swing on a shared machine hits them alike.

Rates are MB/s (10**6 bytes) of leaf data; the target is ``verify-log``'s
hashing at >= 100 MB/s. Run: ``python -m benchmarks.transparency [--quick]``.
"""

from __future__ import annotations

import hashlib
import random
import resource
import statistics
import time
from collections.abc import Callable, Sequence

from benchmarks.common import machine_table, mark, parse_options, table
from nenjim.client.log_hashing import pool_workers, recompute_log
from nenjim.domain.transparency import (
    TILE_WIDTH,
    EntryBundle,
    JournalLeaf,
    TileTree,
    TreeBuilder,
    check_leaf_lines,
    decode_entry_bundle,
    encode_entry_bundle,
    entry_bundles_for_size,
    journal_leaf_data,
    leaf_hashes,
    leaf_tile,
)

TARGET_MB_PER_S = 100.0


def journal_leaves(count: int, seed: int = 13) -> list[bytes]:
    """Leaf lines of ``count`` revisions spread over artifacts, with random texts."""
    rng = random.Random(seed)
    return [
        journal_leaf_data(
            f"org.example.group{i % 97}.artifact{i % 1009}",
            f"2026{1 + i % 12:02d}{1 + i % 28:02d}T{i % 24:02d}{i % 60:02d}00Z",
            rng.randbytes(200),
        )
        for i in range(count)
    ]


def root_from_entries(entries: Sequence[bytes]) -> bytes:
    """The tree head of ``entries``, appended one tile's worth at a time."""
    builder = TreeBuilder()
    for start in range(0, len(entries), TILE_WIDTH):
        builder.append(leaf_hashes(entries[start : start + TILE_WIDTH]))
    return builder.root()


def root_before(bundles: Sequence[bytes]) -> bytes:
    """The verifier's work before the pool: decode, parse every leaf, build tree and tiles."""
    tree = TileTree()
    for bundle in bundles:
        entries = decode_entry_bundle(bundle)
        for entry in entries:
            JournalLeaf.parse(entry)
        tree.append_leaf_hashes(leaf_hashes(entries))
    tree.tiles()
    return tree.root()


def root_as_verify_log(fetched: Sequence[tuple[EntryBundle, bytes]], workers: int) -> bytes:
    """The tree head as ``verify-log`` recomputes it, every tile too (``workers``: as it takes)."""
    log = recompute_log(fetched, since=None, with_leaves=False, where="", workers=workers)
    log.tree.tiles()
    return log.tree.root()


def _interleaved(actions: Sequence[Callable[[], object]], runs: int) -> list[list[float]]:
    """Seconds of each action per run; runs alternate actions so load swings hit all alike."""
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, spent in zip(actions, times, strict=True):
            started = time.perf_counter()
            action()
            spent.append(time.perf_counter() - started)
    return times


def _stages(bundles: Sequence[bytes], count: int, runs: int) -> str:
    """Where one core's time goes, per leaf: the stages of a pool worker, and the floor."""
    decoded = [decode_entry_bundle(bundle) for bundle in bundles]
    full = [entries for entries in decoded if len(entries) == TILE_WIDTH]
    sha256 = hashlib.sha256
    stages = [
        ("`decode_entry_bundle`", lambda: [decode_entry_bundle(bundle) for bundle in bundles]),
        ("`check_leaf_lines` (leaf-line check)", lambda: [check_leaf_lines(e) for e in decoded]),
        ("`leaf_tile` (511 SHA-256 calls per 256 leaves)", lambda: [leaf_tile(e) for e in full]),
        (
            "floor: 2 `hashlib.sha256(entry)` calls per leaf",
            lambda: [sha256(entry).digest() for e in decoded for entry in e + e],
        ),
    ]
    times = _interleaved([action for _, action in stages], runs)
    leaves = [count, count, len(full) * TILE_WIDTH, count]
    rows = [
        [what, f"{statistics.median(spent) / n * 1e9:,.0f}"]
        for (what, _), spent, n in zip(stages, times, leaves, strict=True)
    ]
    return table("Where a worker's time goes (one core)", ["stage", "ns per leaf"], rows)


def _pool_cpu(fetched: Sequence[tuple[EntryBundle, bytes]], workers: int) -> str:
    """Wall time of one pool run against the CPU time of this process and its workers."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time()
    started = time.perf_counter()
    root_as_verify_log(fetched, workers)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return (
        f"One pool run: {wall * 1e3:,.0f} ms wall, {cpu * 1e3:,.0f} ms CPU in this process, "
        f"{workers_cpu * 1e3:,.0f} ms in its {workers} workers: "
        f"{(cpu + workers_cpu) / wall:.2f} cores busy on average."
    )


def run(quick: bool) -> str:
    """Measure and return the Markdown report."""
    count = 70_000 if quick else 200_000  # both above the pool's threshold
    runs = 3 if quick else 7
    entries = journal_leaves(count)
    fetched = [
        (
            bundle,
            encode_entry_bundle(entries[bundle.first_entry : bundle.first_entry + bundle.width]),
        )
        for bundle in entry_bundles_for_size(count)
    ]
    bundles = [data for _, data in fetched]
    buffer = b"".join(entries)
    megabytes = len(buffer) / 1e6
    workers = pool_workers(count)
    roots = {
        root_from_entries(entries),
        root_before(bundles),
        root_as_verify_log(fetched, 0),
        root_as_verify_log(fetched, workers),
    }
    if len(roots) != 1:
        raise AssertionError("the ways of computing the root disagree")

    sha256 = hashlib.sha256
    measured = [
        ("`hashlib.sha256`, one buffer (raw rate)", lambda: sha256(buffer).digest()),
        (
            "`hashlib.sha256(entry)`, one call per leaf",
            lambda: [sha256(entry).digest() for entry in entries],
        ),
        ("root from leaf data (`leaf_hashes` + `TreeBuilder`)", lambda: root_from_entries(entries)),
        ("verifier before: decode, parse, tree (1 core)", lambda: root_before(bundles)),
        ("`verify-log` hashing, in process (1 core)", lambda: root_as_verify_log(fetched, 0)),
        (
            f"`verify-log` hashing, pool of {workers} (start-up included)",
            lambda: root_as_verify_log(fetched, workers),
        ),
    ]
    times = _interleaved([action for _, action in measured], runs)
    rates = [
        (megabytes / statistics.median(t), megabytes / max(t), megabytes / min(t)) for t in times
    ]
    raw, per_call = rates[0][0], rates[1][0]
    rows = [
        [
            what,
            f"{median:,.0f} ({low:,.0f}-{high:,.0f})",
            f"{median / raw:.2f}x",
            f"{median / per_call:.2f}x",
        ]
        for (what, _), (median, low, high) in zip(measured, rates, strict=True)
    ]
    report = table(
        f"Leaf hashing: {count:,} leaves, {megabytes:.1f} MB, "
        f"{len(entries[0])}-byte leaves, median of {runs} runs",
        ["what", "MB/s of leaf data (min-max)", "vs raw", "vs one call per leaf"],
        rows,
    )
    ours = rates[-1][0]
    per_leaf_ns = statistics.median(times[-1]) / count * 1e9
    return (
        f"{report}\n\n`verify-log` hashing: {ours:,.0f} MB/s (~{per_leaf_ns:,.0f} ns per leaf)"
        f" vs target >= {TARGET_MB_PER_S:.0f} MB/s {mark(ours >= TARGET_MB_PER_S)}\n\n"
        f"{_pool_cpu(fetched, workers)}\n\n{_stages(bundles, count, runs)}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, "Leaf hashing rate of the transparency log")
    print(machine_table(), end="\n\n")
    print(run(options.quick))


if __name__ == "__main__":
    main()
