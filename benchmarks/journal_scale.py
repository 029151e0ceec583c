"""The Journal at scale: start-up and memory of the in-memory Journal against the store path.

A store of 10,000 and of 100,000 revisions (1,000,000 with ``--million``) is
built by the fastest correct path there is: a cold start of a generated root
on SQLite, which writes the log and the chain table. Then, alternating, each
path runs in a child process, three times: open the store and answer a
first ``as_of`` (``nenjim serve``'s start-up), its seconds and its peak
resident memory (``VmHWM``, which starts afresh in a child). The in-memory
path is ``build_journal`` + ``start()`` (the whole worldview), the store
path ``StoredJournal`` + ``start()`` (the chain table, through its index).
Last, ``as_of`` through the store, in this process: p50 and p99 over
random artifacts and versions, the cache smaller than the artifacts.

``python -m benchmarks.journal_scale [--quick] [--million]``
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import mark, scratch_dir, table
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

_CHILD = """
import sys, time
def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
kind, root, url, coordinate = sys.argv[1:5]
started = time.perf_counter()
if kind == "memory":
    from nenjim.journal.impl.ref import build_journal
    service = build_journal(root, store=url).process
else:
    from nenjim.journal.impl.ref import StoredJournal
    service = StoredJournal(url, root=root)
service.start()
answer = service.as_of(coordinate, "20991231T000000Z")
seconds = time.perf_counter() - started
assert answer is not None
print(peak_kib(), seconds, flush=True)
service.stop()
"""


def child(kind: str, root: Path, url: str, coordinate: str) -> tuple[float, float]:
    """MiB of peak resident memory and seconds of a child's start-up and first answer."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(root), url, coordinate],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    kib, seconds = done.stdout.split()
    return int(kib) / 1024, float(seconds)


def as_of_latencies(root: Path, url: str, coordinates: list[str]) -> list[float]:
    """Seconds of each of :data:`QUERIES` as-of queries through the store, in this process."""
    service = StoredJournal(url, root=root, cache_size=1_000)
    service.start()
    rng = random.Random(7)
    try:
        times = []
        for _ in range(QUERIES):
            coordinate = rng.choice(coordinates)
            version = f"2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}T000000Z"
            began = time.perf_counter()
            service.as_of(coordinate, version)
            times.append(time.perf_counter() - began)
        return times
    finally:
        service.stop()


def run(shapes: dict[str, tuple[int, int]]) -> str:
    """Build each store, measure both paths; the report."""
    rows = []
    with scratch_dir() as directory:
        for name, (artifacts, revisions) in shapes.items():
            root = directory / f"root-{name}"
            written = generate_root(root, artifacts=artifacts, revisions=revisions, seed=1)
            url = f"sqlite:///{directory / f'{name}.db'}"
            began = time.perf_counter()
            assembly = build_journal(root, store=url)
            assembly.process.start()
            coordinates = sorted(str(c) for c in assembly.service.coordinates())
            assembly.process.stop()
            built = time.perf_counter() - began
            measured: dict[str, list[tuple[float, float]]] = {"memory": [], "store": []}
            for _ in range(RUNS):
                for kind in ("memory", "store"):  # alternating
                    measured[kind].append(child(kind, root, url, coordinates[0]))
            latencies = sorted(as_of_latencies(root, url, coordinates))
            p50 = latencies[len(latencies) // 2] * 1e3
            p99 = latencies[int(len(latencies) * 0.99)] * 1e3
            for kind in ("memory", "store"):
                rss = statistics.median(m[0] for m in measured[kind])
                seconds = statistics.median(m[1] for m in measured[kind])
                store = kind == "store"
                rows.append(
                    [
                        name,
                        f"{written:,}",
                        f"{written / built:,.0f}/s",
                        kind,
                        f"{seconds:.2f} s",
                        f"{rss:.0f} MiB",
                        mark(seconds <= START_GOAL_S and rss <= RSS_GOAL_MIB) if store else "-",
                        f"{p50:.3f} / {p99:.3f} ms" if store else "-",
                        mark(p99 <= P99_GOAL_MS) if store else "-",
                    ]
                )
    return table(
        "Journal at scale on SQLite: start-up + first as_of, peak RSS (median of 3, "
        f"alternating); as_of through the store in-process (goals: start <= {START_GOAL_S} s, "
        f"RSS <= {RSS_GOAL_MIB:.0f} MiB, p99 <= {P99_GOAL_MS} ms)",
        ["store", "revisions", "built", "path", "start", "peak RSS", "met", "as_of p50/p99", "met"],
        rows,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    shapes = QUICK if "--quick" in args else {**SHAPES, **(MILLION if "--million" in args else {})}
    print(run(shapes))


if __name__ == "__main__":
    main()
