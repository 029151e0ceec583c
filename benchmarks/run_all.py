"""Run every benchmark and print every table: ``python -m benchmarks.run_all [--quick]``.

A full run also writes its tables as JSON under ``benchmarks/results/``.

Each section is named after its benchmark (a number would shift whenever one
is added). The rebuild benchmark replays the stores that the start-up
benchmark loaded last, so the root is generated and loaded once. Three probes
(``benchmarks.probes``) run last, so that each result file keeps the floors
beside the goal rows they bound.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from benchmarks import (
    as_of,
    follower_lag,
    ingest,
    memory,
    projections,
    rebuild,
    startup,
    storage,
)
from benchmarks.common import machine_info, machine_table, parse_options
from benchmarks.probes import commit_pages, insert_floor, postgres_floor
from benchmarks.results import write_result


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, "Run every nenjim benchmark")
    started = time.perf_counter()
    machine = machine_info()
    print(machine_table(machine), end="\n\n", flush=True)
    report: list[str] = []

    def section(title: str, body: str) -> None:
        report.append(f"## {title}\n\n{body}\n")
        print(report[-1], flush=True)

    section("Single-revision ingest", ingest.run(options))
    rebuild_reports: list[str] = []

    def rebuild_on(stores: Mapping[str, str], revisions: int) -> None:
        rebuild_reports.append(rebuild.report(options, stores, revisions))

    section("Start-up load", startup.run(options, stores_ready=rebuild_on))
    section("as_of latency", as_of.run(options))
    section("Projection rebuild", "\n\n".join(rebuild_reports) or "no durable store loaded")
    section("Storage SPI operations", storage.run(options))
    section("Persisted projections", projections.run(options))
    section("Peak memory of a cold start", memory.run(options))
    section("Followers", follower_lag.run(options))
    section("Probe: pages a SQLite write commits", commit_pages.run(options))
    section("Probe: the SQLite insert's floor", insert_floor.run(options))
    section("Probe: the PostgreSQL writes' floor", postgres_floor.run(options))
    seconds = time.perf_counter() - started
    print(f"All benchmarks took {seconds:.0f} s.", flush=True)
    if not options.quick:
        written = write_result("\n".join(report), machine, seconds)
        print(f"Results written to {written}; compare: python -m benchmarks.results", flush=True)


if __name__ == "__main__":
    main()
