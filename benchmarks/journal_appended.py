"""1,000,000 revisions appended to SQLite and to PostgreSQL, then the store-served Journal.

The revisions (200,000 artifacts of 5, genesis first; ``--quick``: 10,000)
are appended by ``JournalAppender`` in calls of 10,000 texts, the fastest
correct path into a store (each text parsed, judged against its chain and
appended; the chain table written every batch). Each store is kept for the
next runs, named after the count: an SQLite file under the system's temporary
directory (``nenjim-bench-appended-<N>.db``) and a PostgreSQL schema
(``nenjim_bench_appended_<N>``), reused when it holds every revision;
``--drop`` removes both and measures nothing. Then, as
``benchmarks.journal_scale`` measures a store: three child processes each
open it with ``StoredJournal`` and answer a first ``as_of`` (``nenjim
serve``'s start-up; medians of their seconds and peak resident memory), and,
in this process, ``as_of`` on 2,000 artifacts not read yet (misses) and again
on them (hits of the cache). PostgreSQL is measured when it answers on
loopback; ``--sqlite`` measures SQLite alone.

``python -m benchmarks.journal_appended [--quick] [--sqlite] [--drop]``
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
from psycopg import sql

from benchmarks.common import PG_URL, chain_texts, machine_table, mark, pg_problem, pg_store_url
from benchmarks.common import table as markdown_table
from benchmarks.journal_scale import (
    P99_GOAL_MS,
    QUERIES,
    RSS_GOAL_MIB,
    START_GOAL_S,
    child,
    percentiles,
)
from nenjim.journal.impl.ref import StoredJournal
from nenjim.journal.impl.ref.appender import JournalAppender

JOURNAL = "bench_appended"
PER_ARTIFACT = 5
CALL = 10_000
RUNS = 3


def artifact(index: int) -> str:
    return f"com.bench.appended.a{index:07d}"


def schema_name(revisions: int) -> str:
    return f"nenjim_bench_appended_{revisions}"


def sqlite_file(revisions: int) -> Path:
    return Path(tempfile.gettempdir()) / f"nenjim-bench-appended-{revisions}.db"


def sqlite_url(revisions: int) -> str:
    """The URL of the kept SQLite store of ``revisions`` revisions."""
    return f"sqlite:///{sqlite_file(revisions)}"


def held(url: str) -> int:
    """How many revisions the store's chain table tracks (0 for none)."""
    try:
        service = StoredJournal(url, journal=JOURNAL)
        service.start()
    except Exception:
        return 0
    try:
        return service.position
    finally:
        service.stop()


def fresh_store(url: str, revisions: int) -> None:
    """Remove what ``url`` (one of this benchmark's stores) holds."""
    if url.startswith("sqlite:"):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{sqlite_file(revisions)}{suffix}").unlink(missing_ok=True)
        return
    schema = schema_name(revisions)
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))


def build(url: str, revisions: int) -> float:
    """Append ``revisions`` into a fresh store at ``url``; revisions a second."""
    fresh_store(url, revisions)
    began = time.perf_counter()
    per_call = CALL // PER_ARTIFACT
    with JournalAppender(url, journal=JOURNAL) as appender:
        for first in range(0, revisions // PER_ARTIFACT, per_call):
            texts = [
                text
                for index in range(first, first + per_call)
                for text in chain_texts(artifact(index), PER_ARTIFACT)
            ]
            appender.append(texts)
    return revisions / (time.perf_counter() - began)


def latencies(url: str, artifacts: int) -> tuple[list[float], list[float]]:
    """Seconds of as_of misses, then hits, through the store in this process."""
    import random  # noqa: PLC0415

    rng = random.Random(7)
    wanted = [artifact(i) for i in rng.sample(range(artifacts), min(QUERIES, artifacts))]
    service = StoredJournal(url, journal=JOURNAL, cache_size=QUERIES)
    service.start()
    try:

        def timed(coordinate: str) -> float:
            began = time.perf_counter()
            service.as_of(coordinate, "20991231T000000Z")
            return time.perf_counter() - began

        misses = [timed(c) for c in wanted]
        hits = [timed(rng.choice(wanted)) for _ in range(QUERIES)]
        return misses, hits
    finally:
        service.stop()


def measured(name: str, url: str, revisions: int) -> list[str]:
    """The table's row of the store at ``url`` (built first unless it holds every revision)."""
    rate = "kept from an earlier run"
    if held(url) != revisions:
        rate = f"{build(url, revisions):,.0f}/s"
    runs = [child("named", JOURNAL, url, artifact(0)) for _ in range(RUNS)]
    rss = statistics.median(r[0] for r in runs)
    seconds = statistics.median(r[1] for r in runs)
    misses, hits = latencies(url, revisions // PER_ARTIFACT)
    miss50, miss99 = percentiles(misses)
    hit50, hit99 = percentiles(hits)
    return [
        name,
        f"{revisions:,}",
        rate,
        f"{seconds:.2f} s",
        f"{rss:.0f} MiB",
        mark(seconds <= START_GOAL_S and rss <= RSS_GOAL_MIB),
        f"{hit50 * 1e3:.0f} / {hit99 * 1e3:.0f} µs",
        mark(hit99 <= P99_GOAL_MS),
        f"{miss50:.2f} / {miss99:.2f} ms",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Build (once) and measure; print the table."""
    args = list(sys.argv[1:] if argv is None else argv)
    revisions = 10_000 if "--quick" in args else 1_000_000
    stores = {"SQLite": sqlite_url(revisions)}
    problem = pg_problem()
    if "--sqlite" not in args and problem is None:
        stores["PostgreSQL"] = pg_store_url(schema_name(revisions))
    if "--drop" in args:
        for url in stores.values():
            fresh_store(url, revisions)
        if "PostgreSQL" in stores:
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                schema = sql.Identifier(schema_name(revisions))
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
        print(f"dropped the stores of {revisions:,} revisions")
        return
    print(machine_table())
    if "--sqlite" not in args and problem is not None:
        print(f"PostgreSQL skipped: {problem}")
    rows = [measured(name, url, revisions) for name, url in stores.items()]
    print(
        markdown_table(
            f"Revisions appended by JournalAppender, then StoredJournal (goals: start "
            f"<= {START_GOAL_S} s, RSS <= {RSS_GOAL_MIB:.0f} MiB, cached as_of p99 <= "
            f"{P99_GOAL_MS} ms)",
            [
                "store",
                "revisions",
                "appended",
                "start",
                "peak RSS",
                "met",
                "as_of cached",
                "met",
                "a miss",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
