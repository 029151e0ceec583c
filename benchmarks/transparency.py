"""Benchmark 6: hashing a transparency log's leaves, next to ``hashlib.sha256``'s own rate.

A log of Journal leaves (``<coordinate> <journal-version> sha256:<hex>\\n``,
~100 bytes each) is encoded as C2SP entry bundles of 256 entries. Timed, each
over all the leaves, median of several runs:

* ``hashlib.sha256`` over one buffer of all the leaf bytes: the machine's raw
  SHA-256 rate, the ceiling;
* ``hashlib.sha256(entry).digest()`` for every entry: one call per leaf, the
  floor any per-leaf hashing in Python pays;
* ours, root from leaf data: ``leaf_hashes`` + ``TreeBuilder.append`` + ``root``;
* ours, the verifier's path: ``decode_entry_bundle`` of every bundle, then as above.

Runs alternate the four, so a load swing on a shared machine hits them alike.

Rates are MB/s (10**6 bytes) of leaf data; the target is the verifier's path
at >= 100 MB/s. Run: ``python -m benchmarks.transparency [--quick]``.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
from collections.abc import Callable, Sequence

from benchmarks.common import machine_table, mark, parse_options, table
from domain.transparency import (
    TILE_WIDTH,
    TreeBuilder,
    decode_entry_bundle,
    encode_entry_bundle,
    journal_leaf_data,
    leaf_hashes,
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


def root_from_bundles(bundles: Sequence[bytes]) -> bytes:
    """The tree head of a log downloaded as entry bundles (a verifier's work)."""
    builder = TreeBuilder()
    for bundle in bundles:
        builder.append(leaf_hashes(decode_entry_bundle(bundle)))
    return builder.root()


def _interleaved(actions: Sequence[Callable[[], object]], runs: int) -> list[list[float]]:
    """Seconds of each action per run; runs alternate actions so load swings hit all alike."""
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, spent in zip(actions, times, strict=True):
            started = time.perf_counter()
            action()
            spent.append(time.perf_counter() - started)
    return times


def run(quick: bool) -> str:
    """Measure and return the Markdown report."""
    count = 20_000 if quick else 200_000
    runs = 3 if quick else 7
    entries = journal_leaves(count)
    bundles = [
        encode_entry_bundle(entries[start : start + TILE_WIDTH])
        for start in range(0, count, TILE_WIDTH)
    ]
    buffer = b"".join(entries)
    megabytes = len(buffer) / 1e6
    if root_from_entries(entries) != root_from_bundles(bundles):
        raise AssertionError("the two ways of computing the root disagree")

    sha256 = hashlib.sha256
    times = _interleaved(
        [
            lambda: sha256(buffer).digest(),
            lambda: [sha256(entry).digest() for entry in entries],
            lambda: root_from_entries(entries),
            lambda: root_from_bundles(bundles),
        ],
        runs,
    )
    raw, per_call, ours_entries, ours_bundles = (
        (megabytes / statistics.median(t), megabytes / max(t), megabytes / min(t)) for t in times
    )
    per_leaf_ns = statistics.median(times[3]) / count * 1e9

    def row(what: str, rate: tuple[float, float, float]) -> list[str]:
        median, low, high = rate
        return [
            what,
            f"{median:,.0f} ({low:,.0f}-{high:,.0f})",
            f"{median / raw[0]:.2f}x",
            f"{median / per_call[0]:.2f}x",
        ]

    rows = [
        row("`hashlib.sha256`, one buffer (raw rate)", raw),
        row("`hashlib.sha256(entry)`, one call per leaf", per_call),
        row("ours: root from leaf data", ours_entries),
        row("ours: root from entry bundles (verifier)", ours_bundles),
    ]
    report = table(
        f"Leaf hashing: {count:,} leaves, {megabytes:.1f} MB, "
        f"{len(entries[0])}-byte leaves, median of {runs} runs",
        ["what", "MB/s of leaf data (min-max)", "vs raw", "vs one call per leaf"],
        rows,
    )
    met = ours_bundles[0] >= TARGET_MB_PER_S
    return (
        f"{report}\n\nVerifier path: {ours_bundles[0]:,.0f} MB/s (~{per_leaf_ns:,.0f} ns per leaf)"
        f" vs target >= {TARGET_MB_PER_S:.0f} MB/s {mark(met)}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, "Leaf hashing rate of the transparency log")
    print(machine_table(), end="\n\n")
    print(run(options.quick))


if __name__ == "__main__":
    main()
