"""The Journal at scale: start-up and memory of the in-memory Journal against the store path.

A store of 10,000 and of 100,000 revisions (1,000,000 with ``--million``) is
built, on SQLite and on PostgreSQL (when it answers on loopback), by the
fastest correct path there is today: a cold start of a generated root, which
writes the log and the chain table. Then, alternating, each
path runs in a child process, three times: open the store and answer a
first ``as_of`` (``nenjim serve``'s start-up), its seconds and its peak
resident memory (``VmHWM``, which starts afresh in a child). The in-memory
path is ``build_journal`` + ``start()`` (the whole worldview), the store
path ``StoredJournal`` + ``start()`` (the chain table, through its index).
Last, ``as_of`` through the store, in this process, at random versions: p50
and p99 of misses (artifacts not read yet) and of hits (a working set the
cache holds); the goal is on hits, a miss is reported.

``python -m benchmarks.journal_scale [--quick] [--million]``
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import psycopg

from benchmarks.common import PG_URL, mark, pg_problem, pg_schema, pg_store_url, scratch_dir, table
from benchmarks.sample_roots import generate_root
from nenjim.journal.impl.ref import StoredJournal, build_journal

SHAPES = {"10K": (2_000, 5), "100K": (20_000, 5)}
MILLION = {"1M": (200_000, 5)}
QUICK = {"1.5K": (300, 5)}
RUNS = 3
START_GOAL_S = 2.0
RSS_GOAL_MIB = 200.0
P99_GOAL_MS = 1.0
QUERIES = 2_000
CHAIN_TABLE = "journal_chain_revisions"
DISK: dict[str, tuple[int, dict[str, int]]] = {}
"""Each measured store's revisions and bytes by table (filled by a run)."""

_CHILD = """
import sys, time
def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
kind, opened, url, coordinate = sys.argv[1:5]
started = time.perf_counter()
if kind == "memory":
    from nenjim.journal.impl.ref import build_journal
    service = build_journal(opened, store=url).process
elif kind == "store":
    from nenjim.journal.impl.ref import StoredJournal
    service = StoredJournal(url, root=opened)
else:
    from nenjim.journal.impl.ref import StoredJournal
    service = StoredJournal(url, journal=opened)
service.start()
answer = service.as_of(coordinate, "20991231T000000Z")
seconds = time.perf_counter() - started
assert answer is not None
print(peak_kib(), seconds, flush=True)
service.stop()
"""


def disk_bytes(url: str) -> dict[str, int]:
    """Bytes of each table of the store, with its indexes (a chain table's generation
    counted under its base name)."""
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            rows = conn.execute(
                "SELECT coalesce(m.tbl_name, d.name), SUM(d.pgsize) FROM dbstat d "
                "LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1"
            ).fetchall()
    else:
        schema = url.split("schema=")[1].split("&", maxsplit=1)[0]
        with psycopg.connect(PG_URL) as conn:
            rows = conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'r'",
                (schema,),
            ).fetchall()
    sizes: dict[str, int] = {}
    for name, size in rows:
        key = CHAIN_TABLE if str(name).startswith(CHAIN_TABLE) else str(name)
        sizes[key] = sizes.get(key, 0) + int(size)
    return sizes


def child(kind: str, opened: Path | str, url: str, coordinate: str) -> tuple[float, float]:
    """MiB of peak resident memory and seconds of a child's start-up and first answer: the
    in-memory Journal of the root ``opened`` (``kind`` ``memory``), the store path of it
    (``store``), or the store path of the Journal named ``opened`` (``named``)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(opened), url, coordinate],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    kib, seconds = done.stdout.split()
    return int(kib) / 1024, float(seconds)


def as_of_latencies(
    root: Path, url: str, coordinates: list[str]
) -> tuple[list[float], list[float]]:
    """Seconds of as-of queries through the store, in this process: first on
    :data:`QUERIES` artifacts not read yet (each a miss: its chain read through the
    index, its text read from the log and parsed), then :data:`QUERIES` more on those
    artifacts again (each a hit of the cache, which holds them all)."""
    service = StoredJournal(url, root=root, cache_size=QUERIES)
    service.start()
    rng = random.Random(7)
    wanted = rng.sample(coordinates, min(QUERIES, len(coordinates)))
    try:

        def timed(coordinate: str) -> float:
            version = f"2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}T000000Z"
            began = time.perf_counter()
            service.as_of(coordinate, version)
            return time.perf_counter() - began

        misses = [timed(coordinate) for coordinate in wanted]
        for coordinate in wanted:  # every revision of the working set parsed once
            service.revisions(coordinate)
        hits = [timed(rng.choice(wanted)) for _ in range(QUERIES)]
        return misses, hits
    finally:
        service.stop()


def percentiles(seconds: list[float]) -> tuple[float, float]:
    """p50 and p99, in milliseconds."""
    ordered = sorted(seconds)
    return ordered[len(ordered) // 2] * 1e3, ordered[int(len(ordered) * 0.99)] * 1e3


def run(shapes: dict[str, tuple[int, int]]) -> str:
    """Build each store, measure both paths; the report."""
    rows = []
    with scratch_dir() as directory, ExitStack() as stack:
        for name, (artifacts, revisions) in shapes.items():
            root = directory / f"root-{name}"
            written = generate_root(root, artifacts=artifacts, revisions=revisions, seed=1)
            stores = [("SQLite", f"sqlite:///{directory / f'{name}.db'}")]
            if pg_problem() is None:
                stores.append(
                    ("PostgreSQL", pg_store_url(stack.enter_context(pg_schema(f"scale{written}"))))
                )
            for store, url in stores:
                rows.extend(_measured(store, name, root, written, url))
    return table(
        "Journal at scale: start-up + first as_of and peak RSS of a child (median of 3, "
        f"alternating); as_of through the store in-process (goals: start <= {START_GOAL_S} s, "
        f"RSS <= {RSS_GOAL_MIB:.0f} MiB, p99 <= {P99_GOAL_MS} ms)",
        [
            "store",
            "revisions",
            "built",
            "path",
            "start",
            "peak RSS",
            "met",
            "as_of p50 / p99, cached",
            "met",
            "as_of p50 / p99, a miss",
            "disk a revision (chain table + index)",
        ],
        rows,
    )


def _measured(store: str, name: str, root: Path, written: int, url: str) -> list[list[str]]:
    """Build ``url`` from ``root``, then the rows of both paths over it."""
    began = time.perf_counter()
    assembly = build_journal(root, store=url)
    assembly.process.start()
    coordinates = sorted(str(c) for c in assembly.service.coordinates())
    assembly.process.stop()
    built = time.perf_counter() - began
    sizes = disk_bytes(url)
    total, chains = sum(sizes.values()), sizes.get(CHAIN_TABLE, 0)
    DISK[f"{store} {name}"] = (written, sizes)
    measured: dict[str, list[tuple[float, float]]] = {"memory": [], "store": []}
    for _ in range(RUNS):
        for kind in ("memory", "store"):  # alternating
            measured[kind].append(child(kind, root, url, coordinates[0]))
    misses, hits = as_of_latencies(root, url, coordinates)
    miss50, miss99 = percentiles(misses)
    hit50, hit99 = percentiles(hits)
    rows = []
    for kind in ("memory", "store"):
        rss = statistics.median(m[0] for m in measured[kind])
        seconds = statistics.median(m[1] for m in measured[kind])
        served = kind == "store"
        rows.append(
            [
                f"{store} {name}",
                f"{written:,}",
                f"{written / built:,.0f}/s",
                "store" if served else "in memory",
                f"{seconds:.2f} s",
                f"{rss:.0f} MiB",
                mark(seconds <= START_GOAL_S and rss <= RSS_GOAL_MIB) if served else "-",
                f"{hit50:.3f} / {hit99:.3f} ms" if served else "-",
                mark(hit99 <= P99_GOAL_MS) if served else "-",
                f"{miss50:.3f} / {miss99:.3f} ms" if served else "-",
                f"{total / written:,.0f} B ({chains / written:,.0f} B)" if served else "-",
            ]
        )
    return rows


def disk_table() -> str:
    """Bytes a revision, by table, of every store measured."""
    tables = sorted({name for _, sizes in DISK.values() for name in sizes})
    rows = [
        [store, *(f"{sizes.get(name, 0) / written:,.1f}" for name in tables)]
        for store, (written, sizes) in DISK.items()
    ]
    return table("Disk bytes a revision, by table (with its indexes)", ["store", *tables], rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    shapes = QUICK if "--quick" in args else {**SHAPES, **(MILLION if "--million" in args else {})}
    print(run(shapes))
    print(disk_table())


if __name__ == "__main__":
    main()
