"""Benchmark 7: peak resident memory of a cold start, next to the size of the texts it loads.

A cold start runs in a child process, once on the embedded default store
(a new SQLite file: the log lives on disk) and once on ``memory:`` (the log
itself is then held in memory too), and the peak resident set of that child
is read from the kernel as soon as ``start()`` returns (``getrusage``), before
the child checks that every revision loaded (which parses every text the
start left unparsed). The interpreter and the imports cost the same whatever
the root holds, so a second child that only imports the Journal and exits
gives the baseline (its peak read by ``os.wait4``); the goal is on the
difference: the memory a start-up adds must stay under 3x the bytes of the
revision texts.

``python -m benchmarks.memory [--quick]``
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import Options, mark, parse_options, scratch_dir, table
from benchmarks.sample_roots import generate_root

TARGET_FACTOR = 3.0
FULL_SHAPES = ((2_000, 5), (20_000, 5))  # 10,000 and 100,000 revisions
QUICK_SHAPES = ((300, 5),)

_IMPORT_ONLY = "import journal.impl.ref.assembly"
_COLD_START = """
import resource, sys, time
from journal.impl.ref.assembly import build_journal
started = time.perf_counter()
assembly = build_journal(sys.argv[1], store=sys.argv[3])
assembly.process.start()
seconds = time.perf_counter() - started
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, seconds, flush=True)
service = assembly.service
loaded = sum(len(service.revisions(c)) for c in service.coordinates())
if loaded != int(sys.argv[2]):
    raise SystemExit(f"loaded {loaded} revisions, expected {sys.argv[2]}")
"""


def peak_rss_bytes(code: str, *args: str) -> tuple[int, list[str]]:
    """Peak resident set size over the whole run of a child Python running ``code`` (fails
    if the child fails), and what the child printed, split in words."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE)
    assert child.stdout is not None
    printed = child.stdout.read().split()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"the measured child exited with {child.returncode}")
    return int(usage.ru_maxrss) * 1024, [word.decode() for word in printed]  # Linux: KiB


def cold_start(root: Path, revisions: int, url: str) -> tuple[int, float]:
    """Peak resident set size of a child when its cold start returns, and the start's
    seconds (``build_journal`` + ``start()``)."""
    _, (kilobytes, seconds) = peak_rss_bytes(_COLD_START, str(root), str(revisions), url)
    return int(kilobytes) * 1024, float(seconds)


def text_bytes(root: Path) -> int:
    """Total size of every revision file under ``root``."""
    return sum(entry.stat().st_size for entry in root.rglob("*.journal"))


def run(options: Options) -> str:
    """Measure every root shape; returns the report."""
    rows: list[list[str]] = []
    baseline, _ = peak_rss_bytes(_IMPORT_ONLY)
    with scratch_dir() as directory:
        for number, (artifacts, revisions) in enumerate(
            QUICK_SHAPES if options.quick else FULL_SHAPES
        ):
            root = directory / f"root-{number}"
            written = generate_root(root, artifacts=artifacts, revisions=revisions, seed=1)
            size = text_bytes(root)
            for store, url in (
                ("SQLite", f"sqlite:///{directory / f'cold-{number}.db'}"),
                ("memory:", "memory:"),
            ):
                rows.append(_row(store, written, size, baseline=baseline, root=root, url=url))
    imports = f"{baseline / 2**20:.1f} MiB"
    return table(
        f"Peak resident memory of a cold start (imports alone: {imports})",
        [
            "store",
            "revisions",
            "texts",
            "peak RSS",
            "added by the start",
            "added / texts",
            "wanted",
            "met",
            "start",
        ],
        rows,
    )


def _row(store: str, written: int, size: int, *, baseline: int, root: Path, url: str) -> list[str]:
    peak, seconds = cold_start(root, written, url)
    added = peak - baseline
    return [
        store,
        f"{written:,}",
        f"{size / 2**20:.1f} MiB",
        f"{peak / 2**20:.1f} MiB",
        f"{added / 2**20:.1f} MiB",
        f"{added / size:.2f}x",
        f"< {TARGET_FACTOR:.0f}x",
        mark(added < TARGET_FACTOR * size),
        f"{seconds:.1f} s",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    print(run(parse_options(argv, "Peak memory of a cold start")))


if __name__ == "__main__":
    main()
