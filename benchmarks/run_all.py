"""Run every benchmark and print every table: ``python -m benchmarks.run_all [--quick]``.

Benchmark 4 (rebuild) replays the stores that benchmark 2 (start-up) loaded
last, so the root is generated and loaded once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from benchmarks import as_of, follower_lag, ingest, rebuild, startup, storage
from benchmarks.common import machine_table, parse_options


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, "Run every nenjim benchmark")
    started = time.perf_counter()
    print(machine_table(), end="\n\n", flush=True)

    def section(title: str, body: str) -> None:
        print(f"## {title}\n\n{body}\n", flush=True)

    section("1. Single-revision ingest", ingest.run(options))
    rebuild_reports: list[str] = []

    def rebuild_on(stores: Mapping[str, str], revisions: int) -> None:
        rebuild_reports.append(rebuild.report(options, stores, revisions))

    section("2. Start-up load", startup.run(options, stores_ready=rebuild_on))
    section("3. as_of latency", as_of.run(options))
    section("4. Projection rebuild", "\n\n".join(rebuild_reports) or "no durable store loaded")
    section("5. Storage SPI operations", storage.run(options))
    section("Followers", follower_lag.run(options))
    print(f"All benchmarks took {time.perf_counter() - started:.0f} s.", flush=True)


if __name__ == "__main__":
    main()
