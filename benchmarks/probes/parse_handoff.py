"""What handing parsed revisions from another process would cost the start-up's process.

Parsing on a second core helps a cold start only if the process that
decides and appends gets a parsed revision for less than parsing it itself.
A revision crosses processes pickled; this measures, on the start-up
benchmark's generated root and in the same run, parsing every file (the
baseline) against pickling the parses one artifact at a time (the worker's
side) and unpickling them (the start-up process's side). Unpickling a
Journal value checks its text again, as building it does.

Run: ``python -m benchmarks.probes.parse_handoff [--quick]``.
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.common import machine_table, scratch_dir, table
from benchmarks.sample_roots import generate_root
from benchmarks.startup import FULL_SHAPE, QUICK_SHAPE, revision_file_bytes
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.parser import decode_journal_bytes, forget_shared_values, parse_journal

RUNS = 3


def _best_of(runs: int, action: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``runs`` calls of ``action`` (seconds) and its last result."""
    best = float("inf")
    result: Any = None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - started)
    return best, result


def _parse_all(files: Sequence[bytes]) -> list[JournalRevision]:
    forget_shared_values()  # every run starts as a start-up does, with no value shared yet
    return [parse_journal(decode_journal_bytes(data)) for data in files]


def measure(files: Sequence[bytes], per_batch: int, runs: int = RUNS) -> dict[str, float]:
    """Seconds per revision: parse, pickle, unpickle; and pickled bytes per revision."""
    count = len(files)
    parse, revisions = _best_of(runs, lambda: _parse_all(files))
    batches = [revisions[i : i + per_batch] for i in range(0, count, per_batch)]
    dumps, pickled = _best_of(runs, lambda: [pickle.dumps(b, protocol=5) for b in batches])
    loads, loaded = _best_of(runs, lambda: [pickle.loads(p) for p in pickled])
    if [r for batch in loaded for r in batch] != revisions:
        raise RuntimeError("unpickled revisions differ from the parsed ones")
    return {
        "parse": parse / count,
        "dumps": dumps / count,
        "loads": loads / count,
        "bytes": sum(map(len, pickled)) / count,
        "text": sum(map(len, files)) / count,
    }


def report(figures: dict[str, float], count: int) -> str:
    """The table: each cost per revision and against the parse measured beside it."""
    parse = figures["parse"]

    def row(what: str, seconds: float) -> list[str]:
        return [what, f"{seconds * 1e6:.1f}", f"{seconds / parse:.2f}x"]

    rows = [
        row("parse in the start-up's process (the baseline)", parse),
        row("pickle, in the worker", figures["dumps"]),
        row("unpickle, in the start-up's process", figures["loads"]),
    ]
    verdict = (
        "a parse on another core costs this process less than parsing"
        if figures["loads"] < parse
        else "a parse on another core costs this process more than parsing it itself"
    )
    return "\n".join(
        [
            table(
                f"Parsed revisions handed across processes ({count:,} revisions, "
                f"{figures['text']:,.0f} text bytes and {figures['bytes']:,.0f} pickled "
                "bytes per revision)",
                ["step", "µs per revision", "vs the parse"],
                rows,
            ),
            f"Unpickled / parsed: {figures['loads'] / parse:.2f}x: {verdict}.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick root (300 x 5)")
    options = parser.parse_args(argv)
    artifacts, per_artifact = QUICK_SHAPE if options.quick else FULL_SHAPE
    with scratch_dir() as directory:
        root = directory / "root"
        generate_root(root, artifacts=artifacts, revisions=per_artifact, seed=1)
        files = list(revision_file_bytes(root))
    print(machine_table())
    print(report(measure(files, per_artifact), len(files)))


if __name__ == "__main__":
    main()
