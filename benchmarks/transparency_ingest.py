"""The transparency-ingest benchmark: what the transparency tree costs a single-revision ingest.

``JournalIngestion.ingest(revision)`` of successor revisions (as in the ingest
benchmark: one writer, one append at the expected head per revision, durable), on a
Journal log that writes the tree's leaves and tiles in each append's
transaction, and on the same log without them (the log as a build before the
tree wrote it: events and claims only). Both run on fresh stores of each kind,
their passes alternating so that a load swing hits them alike; cells give the
median pass rate (revisions/s) with min-max, and the ratio with / without.

Run: ``python -m benchmarks.transparency_ingest [--quick]``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from benchmarks.common import (
    Step,
    Timing,
    chain_texts,
    machine_table,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
    run_pass,
    scratch_dir,
    table,
)
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import LogApplication
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection

SUCCESSORS_PER_ARTIFACT = 20
FULL = Timing(runs=5, seconds=2.0, warmup=0.3)
QUICK = Timing(runs=2, seconds=0.4, warmup=0.1)


class UntiledJournalLog(JournalLog):
    """The Journal log without its tree: what a build before the tree appended."""

    def __init__(self, store: str) -> None:
        LogApplication.__init__(self, store)  # no tiler: no leaves, no tiles


def _workload(prefix: str, capacity: int) -> tuple[list[JournalRevision], list[JournalRevision]]:
    artifacts = max(1, capacity // SUCCESSORS_PER_ARTIFACT)
    chains = [chain_texts(f"{prefix}.a{i}", SUCCESSORS_PER_ARTIFACT + 1) for i in range(artifacts)]
    genesis = [parse_journal(chain[0]) for chain in chains]
    successors = [
        parse_journal(chains[a][s])
        for s in range(1, SUCCESSORS_PER_ARTIFACT + 1)
        for a in range(artifacts)
    ]
    return genesis, successors


@contextmanager
def _writer(log: JournalLog, capacity: int) -> Iterator[Step]:
    ingestion = JournalIngestion(log, JournalChainsProjection())
    try:
        genesis, successors = _workload("bench.tree", capacity)
        ingestion.ingest_all(genesis)
        pending = iter(successors)

        def step() -> bool:
            revision = next(pending, None)
            if revision is None:
                return False
            if not ingestion.ingest(revision)[1]:
                raise RuntimeError(f"{revision.coordinate} {revision.version} was not new")
            return True

        yield step
    finally:
        ingestion.close()


def _alternate(
    variants: Sequence[tuple[str, Step]], timing: Timing
) -> dict[str, tuple[float, ...]]:
    """Warm each variant up, then run their timed passes in turn."""
    for _, step in variants:
        run_pass([step], timing.warmup)
    rates: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(timing.runs):
        for name, step in variants:
            rates[name].append(run_pass([step], timing.seconds).rate)
    return {name: tuple(values) for name, values in rates.items()}


def _cell(rates: tuple[float, ...]) -> str:
    return f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"


def _measure(
    store: str, url: Callable[[str], str], timing: Timing, capacity: int
) -> list[list[str]]:
    with (
        _writer(JournalLog(url("tiled")), capacity) as tiled,
        _writer(UntiledJournalLog(url("untiled")), capacity) as untiled,
    ):
        rates = _alternate([("tiled", tiled), ("untiled", untiled)], timing)
    ratio = statistics.median(rates["tiled"]) / statistics.median(rates["untiled"])
    return [[store, _cell(rates["untiled"]), _cell(rates["tiled"]), f"{ratio:.2f}x"]]


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the table."""
    options = parse_options(argv, __doc__ or "")
    timing = QUICK if options.quick else FULL
    capacity = 2_000 if options.quick else 8_000
    print(machine_table())
    rows: list[list[str]] = []
    with scratch_dir() as directory:
        rows += _measure("SQLite", lambda tag: f"sqlite:///{directory / tag}.db", timing, capacity)
    problem = pg_problem()
    if problem is None:
        with pg_schema("tiled") as tiled_schema, pg_schema("untiled") as untiled_schema:
            schemas = {"tiled": tiled_schema, "untiled": untiled_schema}
            rows += _measure("PostgreSQL", lambda tag: pg_store_url(schemas[tag]), timing, capacity)
    else:
        print(f"PostgreSQL skipped: {problem}")
    print(
        table(
            "single-revision ingest, 1 writer (revisions/s, median (min-max))",
            ["store", "without the tree", "with the tree", "with / without"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
