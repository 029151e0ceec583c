"""The start-up benchmark: start-up load of a generated root (2,000 artifacts x 5 revisions).

``benchmarks.sample_roots.generate_root`` writes the root into a temporary
directory. Each timed load opens a fresh store (``build_journal(root,
store=URL)``) and runs ``start()``, which reads, parses, decides and appends
every revision and publishes the view. The floor is "read every file and
SHA-256 it", measured in the same run on the same (page-cached) files.

One more SQLite start runs with every file parsed beforehand, outside the
timed region (``JournalFile.parse`` hands out the ready parse): what a start
costs when parsing costs nothing. If that alone is over the cold-start goal,
no parser, however fast, and no parsing on another core can meet it.

Run: ``python -m benchmarks.startup [--quick] [--no-profile]``.
"""

from __future__ import annotations

import hashlib
import os
import pstats
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import (
    Options,
    machine_table,
    mark,
    median_seconds,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
    profile_call,
    profile_summary,
    rate_text,
    ratio_text,
    scratch_dir,
    table,
)
from benchmarks.sample_roots import generate_root
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.parser import decode_journal_bytes, parse_journal
from nenjim.journal.impl.ref import JournalAssembly, build_journal
from nenjim.journal.impl.ref.filesystem import JournalFile

TARGET = 10_000  # revisions/s on SQLite
COLD_TARGET = 5.0  # cold start-up time / the floor
WARM_TARGET = 1.5  # warm restart time / the floor
FULL_SHAPE = (2_000, 5)
QUICK_SHAPE = (300, 5)
RUNS = 3
# A warm restart takes a fifth of a second and swings by a third between runs on a busy
# host; five runs make its median as steady as the cold starts' three.
WARM_RUNS = 5
BUDGET_SECONDS = 30.0  # per backend; stops further runs, never cuts one short

StoresReady = Callable[[Mapping[str, str], int], None]
"""Called with ``{backend: store URL}`` of freshly loaded stores and their revision count."""


def revision_file_bytes(root: Path) -> Iterator[bytes]:
    """The bytes of every revision file under ``root``, artifact by artifact, in name order."""
    for directory in sorted(os.scandir(root), key=lambda e: e.name):
        for entry in sorted(os.scandir(directory.path), key=lambda e: e.name):
            with open(entry.path, "rb") as file:
                yield file.read()


def _call(action: Callable[[], None]) -> None:
    action()


def read_and_hash(root: Path) -> int:
    """The floor: read every revision file under ``root`` and SHA-256 it; returns the count."""
    count = 0
    for data in revision_file_bytes(root):
        hashlib.sha256(data).digest()
        count += 1
    return count


def load(
    root: Path, url: str, expected: int, timed: Callable[[Callable[[], None]], object] = _call
) -> float:
    """Seconds to open ``url`` and start a Journal over ``root`` (checks every revision loaded).

    ``timed`` runs the timed region (opening and ``start()``), and nothing else:
    a profiler given as ``timed`` sees the start alone, not the check after it
    (which parses every revision the view holds).
    """
    assemblies: list[JournalAssembly] = []

    def start() -> None:
        assemblies.append(build_journal(root, store=url))
        assemblies[0].process.start()

    started = time.perf_counter()
    try:
        timed(start)
        elapsed = time.perf_counter() - started
        service = assemblies[0].service
        loaded = sum(len(service.revisions(c)) for c in service.coordinates())
    finally:
        if assemblies:
            assemblies[0].process.stop()
    if loaded != expected:
        raise RuntimeError(f"loaded {loaded} revisions from {url}, expected {expected}")
    return elapsed


@contextmanager
def parsed_beforehand(root: Path) -> Iterator[None]:
    """Every file under ``root`` parsed now; inside the block a file's parse is a lookup."""
    ready = {data: parse_journal(decode_journal_bytes(data)) for data in revision_file_bytes(root)}
    original = JournalFile.parse

    def looked_up(self: JournalFile) -> JournalRevision:
        return ready[self.data]

    JournalFile.parse = looked_up  # type: ignore[method-assign]
    try:
        yield
    finally:
        JournalFile.parse = original  # type: ignore[method-assign]


def _backends() -> list[str]:
    return ["memory", "SQLite"] + (["PostgreSQL"] if pg_problem() is None else [])


def _fresh(stack: ExitStack, backend: str, directory: Path, number: int) -> str:
    if backend == "memory":
        return "memory:"
    if backend == "SQLite":
        return f"sqlite:///{directory / f'startup-{number}.db'}"
    return pg_store_url(stack.enter_context(pg_schema("startup")))


def generate(directory: Path, quick: bool) -> tuple[Path, int, float]:
    """Generate the root; returns it, its revision count and the seconds it took."""
    artifacts, revisions = QUICK_SHAPE if quick else FULL_SHAPE
    root = directory / "root"
    started = time.perf_counter()
    written = generate_root(root, artifacts=artifacts, revisions=revisions, seed=1)
    return root, written, time.perf_counter() - started


@contextmanager
def loaded_stores(options: Options) -> Iterator[tuple[dict[str, str], int]]:
    """Durable stores (SQLite, and PostgreSQL if it answers) each loaded once with the root."""
    with scratch_dir() as directory, ExitStack() as stack:
        root, written, _ = generate(directory, options.quick)
        stores = {}
        for number, backend in enumerate(b for b in _backends() if b != "memory"):
            url = _fresh(stack, backend, directory, number)
            load(root, url, written)
            stores[backend] = url
        yield stores, written


@dataclass(frozen=True, slots=True)
class Loads:
    """Load times of one backend (fresh store each)."""

    seconds: list[float]

    @property
    def median(self) -> float:
        """The median load."""
        return sorted(self.seconds)[len(self.seconds) // 2]


def run(options: Options, stores_ready: StoresReady | None = None) -> str:
    """Run the start-up benchmark and return its report.

    ``stores_ready`` may use the stores loaded last.
    """
    runs = 1 if options.quick else RUNS
    warm_runs = 1 if options.quick else WARM_RUNS
    out: list[str] = []
    loads: dict[str, Loads] = {}
    profile_text = ""
    with scratch_dir() as directory, ExitStack() as kept:
        root, written, generated = generate(directory, options.quick)
        floor = median_seconds(lambda: read_and_hash(root), 5, 5.0)
        if read_and_hash(root) != written:
            raise RuntimeError("the generated root does not hold the files it reported")
        floor_seconds = sorted(floor)[len(floor) // 2]
        last: dict[str, str] = {}
        number = 0
        for backend in _backends():
            seconds: list[float] = []
            spent = time.perf_counter()
            for _ in range(runs):
                stack = ExitStack()
                number += 1
                url = _fresh(stack, backend, directory, number)
                seconds.append(load(root, url, written))
                # Keep only the latest store of each backend (for the rebuild benchmark).
                kept.enter_context(stack)
                last[backend] = url
                if time.perf_counter() - spent > BUDGET_SECONDS:
                    break
            loads[backend] = Loads(seconds)
        sqlite_rate = written / loads["SQLite"].median
        with parsed_beforehand(root):
            parse_free = []
            for _ in range(runs):
                number += 1
                parse_free.append(load(root, _fresh(kept, "SQLite", directory, number), written))
        if options.profile and sqlite_rate < TARGET:
            number += 1
            url = _fresh(kept, "SQLite", directory, number)
            profiled: list[pstats.Stats] = []
            load(root, url, written, lambda start: profiled.append(profile_call(start)))
            stats = profiled[0]
            profile_text = profile_summary(stats, f"start-up load, SQLite, {written:,} revisions")
        # Warm restart: the same root over a store that already holds it.
        warm = {
            backend: Loads([load(root, url, written) for _ in range(warm_runs)])
            for backend, url in last.items()
            if backend != "memory"
        }
        if stores_ready is not None:
            stores_ready({b: u for b, u in last.items() if b != "memory"}, written)
    rows = [
        [
            "floor: read + SHA-256 every file",
            f"{floor_seconds:.3f}",
            rate_text(written / floor_seconds),
            "1.00x",
        ]
    ]
    for backend, result in loads.items():
        rows.append(
            [
                f"`build_journal(root, store={backend})` + `start()`",
                f"{result.median:.3f} ({min(result.seconds):.3f}-{max(result.seconds):.3f})",
                rate_text(written / result.median),
                ratio_text(result.median / floor_seconds),
            ]
        )
    parse_free_seconds = sorted(parse_free)[len(parse_free) // 2]
    rows.append(
        [
            "`build_journal(root, store=SQLite)` + `start()`, every file parsed beforehand",
            f"{parse_free_seconds:.3f} ({min(parse_free):.3f}-{max(parse_free):.3f})",
            rate_text(written / parse_free_seconds),
            ratio_text(parse_free_seconds / floor_seconds),
        ]
    )
    for backend, result in warm.items():
        rows.append(
            [
                f"warm restart: the same root, {backend} store already holding it",
                f"{result.median:.3f} ({min(result.seconds):.3f}-{max(result.seconds):.3f})",
                rate_text(written / result.median),
                ratio_text(result.median / floor_seconds),
            ]
        )
    artifacts, revisions = QUICK_SHAPE if options.quick else FULL_SHAPE
    cold_ratio = loads["SQLite"].median / floor_seconds
    warm_ratio = warm["SQLite"].median / floor_seconds
    out.append(
        table(
            f"Start-up load, {artifacts:,} artifacts x {revisions} revisions = {written:,} "
            f"revisions (generated in {generated:.1f} s)",
            ["what", "seconds: median (min-max)", "revisions/s", "time vs floor"],
            rows,
        )
    )
    out.append(
        table(
            "Start-up target",
            ["target", "wanted", "measured", ""],
            [
                [
                    "start-up load on SQLite",
                    f">= {TARGET:,} revisions/s",
                    f"{rate_text(sqlite_rate)} revisions/s",
                    mark(sqlite_rate >= TARGET),
                ],
                [
                    "cold start-up on SQLite vs the floor",
                    f"<= {COLD_TARGET:.1f}x",
                    ratio_text(cold_ratio),
                    mark(cold_ratio <= COLD_TARGET),
                ],
                [
                    "(floor) cold start-up on SQLite, parsing free, vs the floor",
                    "-",
                    ratio_text(parse_free_seconds / floor_seconds),
                    "-",
                ],
                [
                    "warm restart on SQLite vs the floor",
                    f"<= {WARM_TARGET:.1f}x",
                    ratio_text(warm_ratio),
                    mark(warm_ratio <= WARM_TARGET),
                ],
            ],
        )
    )
    out.append(
        f"Each load opens a fresh store; {runs} run(s) per backend, at most "
        f"{BUDGET_SECONDS:.0f} s of runs per backend; {warm_runs} warm restart(s) per backend. "
        "The timed region is opening the store (`build_journal`) plus `start()`; the profile "
        "covers that region alone."
    )
    if profile_text:
        out.append(profile_text)
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "startup")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
