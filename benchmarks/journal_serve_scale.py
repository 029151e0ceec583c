"""``as_of`` over HTTP from a store-served ``nenjim serve``, under a loopback load of 8 clients.

An SQLite store of 100,000 revisions (20,000 artifacts of 5; ``--million``:
1,000,000 more; ``--quick``: 1,500) is built once by appending generated
chains (``benchmarks.sample_roots``) with ``JournalAppender`` and kept under
the system's temporary directory, named after its shape, for the next runs.
``nenjim serve`` (its default chain cache of 10,000 chains) then answers
``GET /journal/{coordinate}/as-of/{version}`` for random artifacts at random
instants from :data:`CLIENTS` client threads (``benchmarks.http_load``: one
keep-alive connection each, asking for gzip) for a fixed time, three times,
each run against a freshly started server (its cache empty): back to back
(each client's next request as soon as its answer came), then, on another
fresh server, paced at half the rate the back-to-back load reached (random
instants, each request timed from when it was due). Back to back, the
latency is mostly the queue of 8 clients at a saturated server; paced, it is
what a client sees of a server with room to spare. Reported, the median of
the runs: requests/s, p50 and p99 of the latency, the share of chain lookups
the server's cache answered (``nenjim_chain_cache_lookups`` of its
``/metrics``: uniform artifacts over more than the cache holds, so that hits
and misses both happen), and the server's CPU time a request. The clients
share the 2 cores with the server: the numbers bound what one machine does,
not a server alone.

``python -m benchmarks.journal_serve_scale [--quick] [--million]``
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import tempfile
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

import httpx

from benchmarks.common import machine_table, mark, table
from benchmarks.http_load import http_load
from benchmarks.journal_scale import MILLION, QUICK
from benchmarks.journal_scale import SHAPES as STORE_SHAPES
from benchmarks.sample_roots import generated_chains
from benchmarks.served_log import served_log
from nenjim.domain.transparency import SignerKey
from nenjim.journal.impl.ref.appender import JournalAppender

SHAPES = {"100K": STORE_SHAPES["100K"]}
CLIENTS = 8
RUNS = 3
SECONDS = 8.0
P99_GOAL_MS = 5.0
CACHE = Path(tempfile.gettempdir()) / "nenjim-bench-journal-serve"
JOURNAL = "bench_serve"
APPEND_CALL = 10_000
"""Texts a call of the appender takes while a store is built."""
PACED_SHARE = 0.5
"""The paced load's rate, as a share of what the same run's back-to-back load reached."""
GZIP = {"Accept-Encoding": "gzip"}
"""What a browser or ``httpx`` sends: the answers are gzip-encoded, as such clients get them."""


def built_store(artifacts: int, revisions: int) -> tuple[str, list[str]]:
    """The URL of the SQLite store of this shape (appended the first time) and its artifacts."""
    CACHE.mkdir(exist_ok=True)
    database = CACHE / f"appended-{artifacts}x{revisions}.db"
    if not database.exists():
        partial = CACHE / f"building-{artifacts}x{revisions}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{partial}{suffix}").unlink(missing_ok=True)  # what a killed build left
        chains = generated_chains(artifacts=artifacts, revisions=revisions, seed=1)
        with JournalAppender(f"sqlite:///{partial}", journal=JOURNAL) as appender:
            while batch := list(islice(chains, APPEND_CALL // revisions)):
                appender.append(text for _, texts in batch for _, text in texts)
        partial.rename(database)  # a killed build leaves no store a later run would trust
    with sqlite3.connect(database) as conn:
        [(generation,)] = conn.execute(
            "SELECT generation FROM nenjim_projections WHERE name = 'journal-chains'"
        ).fetchall()
        rows = conn.execute(
            f"SELECT DISTINCT coordinate FROM journal_chain_revisions_g{generation}"
        ).fetchall()
    return f"sqlite:///{database}", [coordinate for (coordinate,) in rows]


def scraped(url: str) -> dict[str, float]:
    """The server's chain lookups so far (``hit``, ``miss``) and its CPU seconds (``cpu``)."""
    found = {"hit": 0.0, "miss": 0.0, "cpu": 0.0}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("nenjim_chain_cache_lookups{"):
            result = line.split('result="', 1)[1].split('"', 1)[0]
            found[result] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("process_cpu_seconds_total "):
            found["cpu"] = float(line.rsplit(" ", 1)[1])
    return found


def load(
    url: str, coordinates: list[str], rate: float | None = None
) -> tuple[float, float, float, float, float]:
    """Requests/s, p50 and p99 (ms), the cache's hit ratio and the server's CPU µs a request
    of :data:`CLIENTS` clients asking ``as_of`` of random artifacts at random instants for
    :data:`SECONDS`, back to back or at ``rate`` requests a second in all."""

    def as_of(rng: random.Random) -> str:
        coordinate = rng.choice(coordinates)
        # In 2025: past every artifact's first revision (2024), within its chain.
        instant = f"2025{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}T000000Z"
        return f"/journal/{coordinate}/as-of/{instant}"

    before = scraped(url)
    result = http_load([url], as_of, clients=CLIENTS, seconds=SECONDS, headers=GZIP, rate=rate)
    after = scraped(url)
    hits, misses = after["hit"] - before["hit"], after["miss"] - before["miss"]
    requests = result.rate * SECONDS
    cpu = (after["cpu"] - before["cpu"]) / requests * 1e6
    return result.rate, result.p50_ms, result.p99_ms, hits / (hits + misses), cpu


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the table."""
    import sys  # noqa: PLC0415

    args = list(sys.argv[1:] if argv is None else argv)
    shapes = QUICK if "--quick" in args else {**SHAPES, **(MILLION if "--million" in args else {})}
    print(machine_table())
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        key = Path(directory) / "log.key"
        key.write_text(SignerKey.generate("bench.example/log").encode() + "\n")
        key.chmod(0o600)  # nenjim serve refuses a signer key others can read
        for name, (artifacts, revisions) in shapes.items():
            url, coordinates = built_store(artifacts, revisions)
            full, paced = [], []
            for _ in range(RUNS):
                with served_log(url, key, journal=JOURNAL) as served:
                    full.append(load(served, coordinates))
                with served_log(url, key, journal=JOURNAL) as served:
                    paced.append(load(served, coordinates, full[-1][0] * PACED_SHARE))
            for runs, load_name in ((full, "back to back"), (paced, "paced")):
                rate, p50, p99, ratio, cpu = (
                    statistics.median(r[i] for r in runs) for i in range(5)
                )
                rows.append(
                    [
                        f"SQLite {name}",
                        f"{artifacts * revisions:,}",
                        load_name,
                        f"{rate:,.0f}/s",
                        f"{p50:.2f} / {p99:.2f} ms",
                        mark(p99 <= P99_GOAL_MS),
                        f"{ratio:.0%}",
                        f"{cpu:,.0f} µs",
                    ]
                )
    print(
        table(
            f"as_of over HTTP, {CLIENTS} loopback clients, {SECONDS:.0f} s a run, median of "
            f"{RUNS} fresh servers (goal p99 <= {P99_GOAL_MS} ms)",
            [
                "store",
                "revisions",
                "load",
                "requests",
                "p50 / p99",
                "met",
                "cache hits",
                "server CPU",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
