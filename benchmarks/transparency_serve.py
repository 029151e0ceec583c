"""The serve benchmark: ``nenjim serve`` under a bounded load on loopback, 1 and 4 server processes.

A PostgreSQL Journal log of 5,000 revisions (``--quick``: 1,000) is served by
1, then 4 ``nenjim serve`` processes (each its own port; the client spreads
its requests over them round-robin). For each kind of request, client
threads (``benchmarks.http_load``: one keep-alive connection each) send requests for a fixed
time; the table gives requests/s and the p50 and p99 latency. Kinds: the
checkpoint (a signature over the tree's head, read from the tiles), a random
full level 0 tile, the partial tiles of the right edge, and a lookup (a
revision's inclusion proof with a fresh checkpoint). The client shares the
2 cores with the servers and the database: the numbers bound what one
machine does, they do not measure a server alone.

Run: ``python -m benchmarks.transparency_serve [--quick]``.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from benchmarks.common import (
    journal_text,
    machine_table,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
)
from benchmarks.common import table as markdown_table
from benchmarks.http_load import http_load
from benchmarks.served_log import served_log
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.transparency import SignerKey, tiles_for_size
from nenjim.journal.impl.ref.log import JournalLog

VERSION = "20260101T000000Z"
THREADS = 4


def _fill(store: str, count: int) -> None:
    log = JournalLog(store)
    try:
        for start in range(0, count, 500):
            log.append_chains(
                [
                    JournalChain.start(
                        parse_journal(journal_text(f"bench.serve.a{n}", VERSION, None))
                    )
                    for n in range(start, min(count, start + 500))
                ]
            )
    finally:
        log.close()


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the table."""
    options = parse_options(argv, __doc__ or "")
    size = 1_000 if options.quick else 5_000
    seconds = 2.0 if options.quick else 6.0
    problem = pg_problem()
    if problem is not None:
        print(f"skipped: {problem}")
        return
    print(machine_table())
    full_tiles = [tile.path for tile in tiles_for_size(size) if tile.is_full and tile.level == 0]
    edge = [tile.path for tile in tiles_for_size(size) if not tile.is_full]
    kinds: dict[str, Callable[[random.Random], str]] = {
        "checkpoint": lambda rng: "/checkpoint",
        "full tile (tile/0/N)": lambda rng: "/" + rng.choice(full_tiles),
        "partial tiles of the edge": lambda rng: "/" + rng.choice(edge),
        "lookup with inclusion proof": lambda rng: (
            f"/lookup/bench.serve.a{rng.randrange(size)}/{VERSION}"
        ),
    }
    rows: list[list[str]] = []
    with pg_schema("serve") as schema, tempfile.TemporaryDirectory() as directory:
        store = pg_store_url(schema)
        _fill(store, size)
        key = Path(directory) / "log.key"
        key.write_text(SignerKey.generate("bench.example/log").encode() + "\n")
        key.chmod(0o600)  # nenjim serve refuses a signer key others can read
        for processes in (1, 4):
            with ExitStack() as servers:
                urls = [servers.enter_context(served_log(store, key)) for _ in range(processes)]
                for name, paths in kinds.items():
                    http_load(urls, paths, clients=THREADS, seconds=0.5)  # warm-up
                    got = http_load(urls, paths, clients=THREADS, seconds=seconds)
                    rows.append(
                        [
                            name,
                            str(processes),
                            f"{got.rate:,.0f}",
                            f"{got.p50_ms:.1f}",
                            f"{got.p99_ms:.1f}",
                        ]
                    )
    print(
        markdown_table(
            f"nenjim serve over PostgreSQL, {size:,} revisions, {THREADS} client threads",
            ["request", "server processes", "requests/s", "p50 ms", "p99 ms"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
