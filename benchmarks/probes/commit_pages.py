"""The pages a 1-thread SQLite write commits: WAL frames per operation, and whose they are.

In WAL mode every page a transaction changes is appended to the WAL as one
frame (the page and a 24-byte header, two ``pwrite`` calls) before the
commit's fsync, so frames per write, times the frame's size, are the bytes a
commit writes, counted instead of timed: they do not move with the host's
noise. Each frame is attributed to the b-tree (table or index) that owns its
page, through SQLite's ``dbstat`` table.

Two sets of writes, each measured in 5 passes of 60 operations (6 appends of
100 entries) on one file (few enough that no automatic checkpoint restarts
the WAL mid-pass), the median pass shown:

- the Storage SPI benchmark's writes (:mod:`benchmarks.storage`: insert,
  replace, appends of 1 and of 100 entries) and the hand-written baseline
  doing the same on its own file;
- writes to resources of the domain catalog (``Persistence``), where one
  ``storage_records`` table holds the rows of every resource: an unindexed
  root inserted, an unindexed workflow state replaced, an indexed execution
  inserted.

Run: ``python -m benchmarks.probes.commit_pages`` (also part of ``benchmarks.run_all``).
"""

from __future__ import annotations

import collections
import itertools
import sqlite3
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

from benchmarks.common import Options, parse_options, scratch_dir
from benchmarks.storage import OPS, _sqlite_store, spi_steps
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage import DurableRecord, open_backend

PASSES = 5
PER_PASS = 60
BATCH_PER_PASS = 6
"""Appends of 100 per pass: ~170 frames, well under the 1,000 pages at which an
automatic checkpoint would restart the WAL mid-pass."""
WARMUP = 300
_HEADER = 32  # the WAL file header
_FRAME_HEADER = 24

# The SPI benchmark's payload size (~230 bytes of Canonical JSON).
RECORD = DurableRecord("bench.pages", "1.0", {"status": "running", "note": "x" * 180})

Write = Callable[[], object]


def wal_pages(path: Path) -> list[int]:
    """The page number of every frame in the WAL of the database at ``path``."""
    data = (path.parent / f"{path.name}-wal").read_bytes()
    if len(data) < _HEADER:
        return []
    (page_size,) = struct.unpack(">I", data[8:12])
    return [
        struct.unpack(">I", data[offset : offset + 4])[0]
        for offset in range(_HEADER, len(data) - _FRAME_HEADER + 1, _FRAME_HEADER + page_size)
    ]


def frame_bytes(path: Path) -> int:
    """The bytes of one WAL frame of the database at ``path``: its page and a header."""
    with closing(sqlite3.connect(path)) as connection:
        (page_size,) = connection.execute("PRAGMA page_size").fetchone()
    return int(page_size) + _FRAME_HEADER


def _kib(frames: float, path: Path) -> float:
    return frames * frame_bytes(path) / 1024


def frames_per_write(
    path: Path, write: Write, per_pass: int = PER_PASS
) -> tuple[float, dict[str, float]]:
    """Median frames per ``write`` over the passes of ``per_pass`` writes, and that pass's
    frames by b-tree."""
    passes: list[tuple[float, dict[str, float]]] = []
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for _ in range(PASSES):
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            for _ in range(per_pass):
                write()
            pages = wal_pages(path)
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            owners = dict(connection.execute("SELECT pageno, name FROM dbstat"))
            counted = collections.Counter(owners.get(page, "(new pages)") for page in pages)
            passes.append(
                (len(pages) / per_pass, {name: n / per_pass for name, n in counted.items()})
            )
    passes.sort(key=lambda found: found[0])
    return passes[len(passes) // 2]


def _breakdown(by_tree: dict[str, float]) -> str:
    return ", ".join(
        f"{_short(name)} {n:.2f}" for name, n in sorted(by_tree.items(), key=lambda x: -x[1])
    )


def _short(name: str) -> str:
    """An index name without its definition hash."""
    head, _, tail = name.rpartition("_")
    return head if len(tail) == 12 and head.startswith("storage_") else name


def spi_rows(directory: Path) -> Iterator[str]:
    """Ours and the baseline for insert, replace and the appends of 1 and 100 entries."""
    store = _sqlite_store(directory)
    assert store.raw is not None
    for name in ("insert", "replace", "append1", "append100"):
        op = next(o for o in OPS if o.name == name)
        per_pass = BATCH_PER_PASS if op.batch > 1 else PER_PASS
        with ExitStack() as stack:
            before = set(directory.glob("*.db"))
            (ours,) = spi_steps(store.ours(stack), op, 1)
            (ours_file,) = set(directory.glob("*.db")) - before
            before = set(directory.glob("*.db"))
            (raw,) = store.raw(stack, op, 1)
            (raw_file,) = set(directory.glob("*.db")) - before
            for _ in range(WARMUP):
                ours()
                raw()
            ours_frames, ours_trees = frames_per_write(ours_file, ours, per_pass)
            raw_frames, _ = frames_per_write(raw_file, raw, per_pass)
            ours_kib, raw_kib = _kib(ours_frames, ours_file), _kib(raw_frames, raw_file)
        yield (
            f"| {op.label} | {ours_frames:.2f} | {ours_kib:.1f} | {raw_frames:.2f} | {raw_kib:.1f} "
            f"| {raw_kib / ours_kib:.2f}x | {_breakdown(ours_trees)} |"
        )


@contextmanager
def _catalog_writes(directory: Path) -> Iterator[tuple[Path, Sequence[tuple[str, Write]]]]:
    """Writes to three resources of the domain catalog, on one store that holds all six."""
    path = directory / "catalog.db"
    backend = open_backend(f"sqlite:///{path}", CATALOG)
    try:
        resources = {resource.id: resource for resource in CATALOG}
        roots = backend.view.records(resources["agent.roots"])
        states = backend.view.records(resources["workflow.states"])
        executions = backend.view.records(resources["agent.executions"])
        numbers = itertools.count()
        owners = [f"agent-{n}" for n in range(50)]
        for owner in owners:
            roots.insert(key=owner, revision=0, attributes={}, record=RECORD)
        states.insert(key="state", revision=0, attributes={}, record=RECORD)
        revision = itertools.count()

        def insert_root() -> None:
            roots.insert(key=f"root-{next(numbers)}", revision=0, attributes={}, record=RECORD)

        def replace_state() -> None:
            at = next(revision)
            states.replace(
                key="state",
                expected_revision=at,
                next_revision=at + 1,
                attributes={},
                record=RECORD,
            )

        def insert_execution() -> None:
            n = next(numbers)
            attributes = {"owner": owners[n % len(owners)], "active": False}
            executions.insert(key=f"run-{n}", revision=0, attributes=attributes, record=RECORD)

        yield (
            path,
            (
                ("`agent.roots` insert (no index)", insert_root),
                ("`workflow.states` replace (no index)", replace_state),
                ("`agent.executions` insert (2 indexes)", insert_execution),
            ),
        )
    finally:
        backend.close()


def catalog_rows(directory: Path) -> Iterator[str]:
    """Frames per write to resources of the domain catalog."""
    with _catalog_writes(directory) as (path, writes):
        for _ in range(WARMUP):
            for _, write in writes:
                write()
        for label, write in writes:
            frames, trees = frames_per_write(path, write)
            yield f"| {label} | {frames:.2f} | {_kib(frames, path):.1f} | {_breakdown(trees)} |"


def run(options: Options) -> str:
    """Both tables, as one report (counts: ``--quick`` changes nothing)."""
    del options
    lines = [
        "### WAL frames per Storage SPI write, SQLite, 1 thread",
        "",
        "| operation (SQLite, 1 thread) | ours frames/op | ours KiB/op | raw frames/op "
        "| raw KiB/op | raw/ours (bytes) | ours frames by b-tree |",
        "|---|---|---|---|---|---|---|",
    ]
    with scratch_dir() as directory:
        lines += spi_rows(directory)
        lines += [
            "",
            "### WAL frames per write to the domain catalog, SQLite, 1 thread",
            "",
            "| write (domain catalog, SQLite) | frames/op | KiB/op | frames by b-tree |",
            "|---|---|---|---|",
        ]
        lines += catalog_rows(directory)
    lines += [
        "",
        f"(median of {PASSES} passes of {PER_PASS} writes, of {BATCH_PER_PASS} appends of 100; "
        "a frame is one page and its 24-byte header)",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    print(run(parse_options(argv, "The pages a 1-thread SQLite write commits")))


if __name__ == "__main__":
    main()
