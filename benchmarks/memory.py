"""The memory benchmark: peak resident memory of a cold start, next to the size of its texts.

A cold start runs in a child process, once on the embedded default store
(a new SQLite file: the log lives on disk) and once on ``memory:`` (the log
itself is then held in memory too), and the peak resident set of that child
is read as soon as ``start()`` returns, before the child checks that every
revision loaded (which parses every text the start left unparsed). The
interpreter and the imports cost the same whatever the root holds, so a second
child that only imports the Journal gives the baseline; the goal is on the
difference: the memory a start-up adds must stay under 3x the bytes of the
revision texts.

Each child reads its own peak from ``VmHWM`` in ``/proc/self/status``, which
starts afresh when the child's program is loaded. ``getrusage``'s and
``os.wait4``'s ``ru_maxrss`` do not: a forked child inherits the parent's
resident set before it loads Python, so a parent that has grown (as
``run_all`` has by this benchmark: ~260 MiB) would set every child's peak.

``python -m benchmarks.memory [--quick]``
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import Options, mark, parse_options, scratch_dir, table
from benchmarks.sample_roots import generate_root

TARGET_FACTOR = 3.0
FULL_SHAPES = ((2_000, 5), (20_000, 5))  # 10,000 and 100,000 revisions
QUICK_SHAPES = ((300, 5),)

_PEAK_KIB = """
def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
"""
_IMPORT_ONLY = (
    _PEAK_KIB
    + """
import nenjim.journal.impl.ref.assembly
print(peak_kib(), flush=True)
"""
)
_COLD_START = (
    _PEAK_KIB
    + """
import sys, time
from nenjim.journal.impl.ref.assembly import build_journal
started = time.perf_counter()
assembly = build_journal(sys.argv[1], store=sys.argv[3])
assembly.process.start()
seconds = time.perf_counter() - started
print(peak_kib(), seconds, flush=True)
service = assembly.service
loaded = sum(len(service.revisions(c)) for c in service.coordinates())
if loaded != int(sys.argv[2]):
    raise SystemExit(f"loaded {loaded} revisions, expected {sys.argv[2]}")
"""
)


def child_output(code: str, *args: str) -> list[str]:
    """What a child Python running ``code`` printed, split in words (fails if it fails)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the measured child exited with {done.returncode}")
    return done.stdout.split()


def imports_peak() -> int:
    """Peak resident set size, in bytes, of a child that only imports the Journal."""
    (kilobytes,) = child_output(_IMPORT_ONLY)
    return int(kilobytes) * 1024


def cold_start(root: Path, revisions: int, url: str) -> tuple[int, float]:
    """Peak resident set size of a child when its cold start returns, and the start's
    seconds (``build_journal`` + ``start()``)."""
    kilobytes, seconds = child_output(_COLD_START, str(root), str(revisions), url)
    return int(kilobytes) * 1024, float(seconds)


def text_bytes(root: Path) -> int:
    """Total size of every revision file under ``root``."""
    return sum(entry.stat().st_size for entry in root.rglob("*.journal"))


def run(options: Options) -> str:
    """Measure every root shape; returns the report."""
    rows: list[list[str]] = []
    baseline = imports_peak()
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
