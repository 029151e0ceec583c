"""Deterministic ingest work for instruction counts: independent writers, round-robin.

``--writers`` ingestions, each with its own log and view over one SQLite
file (the benchmark's independent writers), ingest successors in turns from
one thread: writer 1, writer 2, ..., then writer 1 again, ``--rounds``
times. Each ingest then folds, from memory, the other writers' appends since
its own, as with threads, but in the same order every run, so an instruction
count is the same on any host, loaded or not. Run it under callgrind twice,
with ``--rounds 0`` (set-up only) and with rounds, and divide the difference
by the ingests::

    valgrind --tool=callgrind python -m benchmarks.probes.ingest_rounds --writers 8 --rounds 0
    valgrind --tool=callgrind python -m benchmarks.probes.ingest_rounds --writers 8 --rounds 50

Without valgrind it prints the ingests per second of the rounds (no ratio:
this is a counting tool, not a benchmark with a baseline).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from benchmarks.common import scratch_dir
from benchmarks.ingest import build_workload
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection

# Successors prepared per writer: enough for 400 rounds.
CAPACITY = 400


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=50)
    options = parser.parse_args(argv)
    if not 0 <= options.rounds <= CAPACITY:
        parser.error(f"--rounds must be 0 to {CAPACITY}")
    with scratch_dir() as directory:
        url = f"sqlite:///{directory / 'rounds.db'}"
        writers = [
            JournalIngestion(JournalLog(url), JournalChainsProjection())
            for _ in range(options.writers)
        ]
        works = [build_workload(f"bench.w{i}", CAPACITY) for i in range(options.writers)]
        for writer, work in zip(writers, works, strict=True):
            writer.ingest_all(work.genesis)
        for writer in writers:
            writer.catch_up()
        started = time.perf_counter()
        for round_ in range(options.rounds):
            for writer, work in zip(writers, works, strict=True):
                writer.ingest(work.successors[round_])
        elapsed = time.perf_counter() - started
        for writer in writers:
            writer.close()
    ingests = options.rounds * options.writers
    if ingests:
        print(f"{ingests} ingests by {options.writers} writers: {ingests / elapsed:,.0f}/s")


if __name__ == "__main__":
    main()
