"""Where a 1-thread SQLite SPI write spends its time: inside ``sqlite3`` or in Python.

For each operation, ours and the hand-written baseline run alternately on fresh
files (5 rounds, the median round by ratio is printed). Every statement ours
sends is timed inside the backend connection's ``execute`` (SQLite's work and
the ``COMMIT``'s fsync); the rest of an operation is Python. "If Python were
free" is the baseline's time over ours' time in ``sqlite3`` alone: the ratio
the statements ours sends would reach with no Python around them, i.e. the
floor that the storage format sets for the goal of >= 0.6x.

Run: ``python -m benchmarks.probes.storage_split [operations per round]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

import nenjim.infrastructure.sqlite.storage as sqlite_backend
from benchmarks.common import scratch_dir
from benchmarks.storage import OPS, _sqlite_store, spi_steps

ROUNDS = 5
WARMUP = 200


class _StatementClock:
    """Total seconds spent inside the SQLite backend's ``execute`` since the last reset."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._execute = sqlite_backend._Connection.execute

    def install(self) -> None:
        clock, execute = self, self._execute

        def timed(connection: Any, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return execute(connection, *args)
            finally:
                clock.seconds += time.perf_counter() - started

        sqlite_backend._Connection.execute = timed  # type: ignore[method-assign]

    def uninstall(self) -> None:
        sqlite_backend._Connection.execute = self._execute  # type: ignore[method-assign]


def split(operation: str, count: int) -> str:
    """One table row: ours (in ``sqlite3`` / Python), the baseline, both ratios."""
    op = next(o for o in OPS if o.name == operation)
    clock = _StatementClock()
    clock.install()
    rounds: list[tuple[float, float, float]] = []
    try:
        with scratch_dir() as directory, ExitStack() as stack:
            store = _sqlite_store(directory)
            assert store.raw is not None
            (ours,) = spi_steps(store.ours(stack), op, 1)
            (raw,) = store.raw(stack, op, 1)
            for _ in range(WARMUP):
                ours()
                raw()
            for _ in range(ROUNDS):
                clock.seconds = 0.0
                started = time.perf_counter()
                for _ in range(count):
                    ours()
                ours_s = time.perf_counter() - started
                in_sqlite = clock.seconds
                started = time.perf_counter()
                for _ in range(count):
                    raw()
                rounds.append(
                    (ours_s / count, in_sqlite / count, (time.perf_counter() - started) / count)
                )
    finally:
        clock.uninstall()
    ratios = [r / o for o, _, r in rounds]
    ours_s, in_sqlite, raw_s = rounds[ratios.index(statistics.median_low(ratios))]
    us = 1e6
    return (
        f"| {op.label} | {ours_s * us:,.0f} | {in_sqlite * us:,.0f} "
        f"| {(ours_s - in_sqlite) * us:,.0f} "
        f"| {raw_s * us:,.0f} | {raw_s / ours_s:.2f}x | {raw_s / in_sqlite:.2f}x |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table for insert, replace, 1-entry append and ``check()``."""
    args = list(sys.argv[1:] if argv is None else argv)
    count = int(args[0]) if args else 1000
    print(
        "| operation (SQLite, 1 thread) | ours µs/op | in sqlite3 | Python | raw µs/op "
        "| ours/raw | if Python were free |"
    )
    print("|---|---|---|---|---|---|---|")
    for operation in ("insert", "replace", "append1", "check"):
        print(split(operation, count), flush=True)


if __name__ == "__main__":
    main()
