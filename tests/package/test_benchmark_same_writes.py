"""The ingest benchmark's "same writes by hand": it captures and replays what one ingest writes."""

from __future__ import annotations

import cProfile
import pstats
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks import same_writes
from benchmarks.same_writes import Statement
from nenjim.domain.transparency.tiles import tile_width_in_tree
from nenjim.journal.impl.ref.transparency import JournalTiler

# A tile boundary is crossed at 256 leaves: level 1 is written, then read.
INGESTS = 300


_MICROSECONDS = re.compile(rb"(T\d\d:\d\d:\d\d)\.\d{6}")
"""A stored timestamp's fraction: ``datetime.isoformat`` leaves it out when it is 0."""


def _sized(statements: list[Statement]) -> list[tuple[str, tuple[int | tuple[str, int], ...]]]:
    """Each statement's shape with its integers, and only the sizes of its strings and bytes
    (a state's timestamps counted without their fraction, which one in a million lacks)."""
    return [
        (
            s.shape,
            tuple(v if isinstance(v, int) else (type(v).__name__, _size(v)) for v in s.values),
        )
        for s in statements
    ]


def _size(value: str | bytes) -> int:
    return len(_MICROSECONDS.sub(rb"\1", value)) if isinstance(value, bytes) else len(value)


def test_expanded_sql_is_split_into_shape_and_values() -> None:
    parsed = same_writes.parse_statement(
        "INSERT INTO t VALUES ('it''s',4,x'00ff')  ON CONFLICT (a,b) DO NOTHING LIMIT 1"
    )
    assert parsed == Statement(
        "INSERT INTO t VALUES (?, ?, ?) ON CONFLICT (a, b) DO NOTHING LIMIT ?",
        ("it's", 4, b"\x00\xff", 1),
    )


def test_one_ingest_is_captured_as_the_writes_of_one_transaction(tmp_path: Path) -> None:
    captured = same_writes.capture_ingest(tmp_path / "capture.db", 1)
    assert [s.shape for s in captured] == [
        "BEGIN",
        "INSERT INTO journal_events VALUES (?, ?, ?, ?)",
        "INSERT INTO journal_claims VALUES (?, ?, ?) ON CONFLICT (namespace, key) DO NOTHING",
        "INSERT INTO journal_entries VALUES (?, ?, ?)",
        "COMMIT",
    ]
    writes = same_writes.ingest_writes(captured)
    assert writes.topic.endswith("SuccessorAccepted")
    assert writes.claim_namespace == "journal-digest"
    assert writes.claim_owner == "bench.capture"
    assert writes.claim_key_size == len("sha256:") + 64
    assert len(writes.state) > 200
    assert writes.entry_size > 64


def test_the_replay_runs_the_engines_statements_with_values_of_the_same_sizes(
    tmp_path: Path,
) -> None:
    engine = same_writes.capture_ingest(tmp_path / "engine.db", INGESTS)
    writes = same_writes.ingest_writes(engine)
    same_writes.prepare_store(f"sqlite:///{tmp_path / 'replay.db'}", "bench.capture")
    connection = same_writes.sqlite_connection(tmp_path / "replay.db")
    # As the engine's writer, the replay knows the end from the genesis's commit.
    known = same_writes.KnownEnd(connection)
    traced: list[str] = []
    connection.set_trace_callback(traced.append)
    try:
        # The engine's successors are versions 2.. of the artifact's stream.
        step = same_writes.sqlite_same_writes_step(connection, writes, 0, known, first_version=2)
        for _ in range(INGESTS):
            assert step()
    finally:
        connection.close()
    replay = [same_writes.parse_statement(text) for text in traced]
    assert len(engine) == len(replay)
    assert _sized(replay) == _sized(engine)


@pytest.mark.parametrize(
    "size", [0, 1, 255, 256, 257, 511, 65_535, 65_536, 70_000, 16_777_215, 123_456_789]
)
def test_the_tiles_written_are_the_tilers_and_a_committed_edge_is_not_read_again(
    size: int,
) -> None:
    reads = _Reads(size)
    first = JournalTiler().tiles_after(size, [b"a leaf"], reads, None)
    assert sorted((t.level, t.index, len(t.data) // 32) for t in first.tiles) == sorted(
        same_writes.stored_tiles_after(size)
    )
    again = _Reads(size + 1)
    second = JournalTiler().tiles_after(size + 1, [b"another leaf"], again, first.edge)
    assert (again.tiles, again.entries) == ([], [])
    assert sorted((t.level, t.index, len(t.data) // 32) for t in second.tiles) == sorted(
        same_writes.stored_tiles_after(size + 1)
    )


class _Reads:
    """Stored tiles and entries of a tree of ``size`` leaves (all hashes zero), counting reads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.tiles: list[tuple[int, int]] = []
        self.entries: list[int] = []

    def read_tiles(self, keys: Sequence[tuple[int, int]]) -> list[bytes]:
        self.tiles.extend(keys)
        return [bytes(32 * tile_width_in_tree(level, index, self.size)) for level, index in keys]

    def read_entries(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        self.entries.extend(range(start, stop))
        return [(n + 1, b"leaf %d" % n) for n in range(start, min(stop, self.size))]


def test_the_profile_split_charges_all_time_and_finds_the_commit(tmp_path: Path) -> None:
    profile = cProfile.Profile()
    profile.runcall(same_writes.capture_ingest, tmp_path / "profiled.db", 5)
    stats = pstats.Stats(profile)
    split = same_writes.time_split(stats)
    total = sum(row[2] for row in same_writes._raw(stats).values())
    assert sum(split.values()) == pytest.approx(total)
    assert split["COMMIT"] > 0
    assert split["transparency tree Python (leaf, hashes, tiles)"] > 0
    assert same_writes.calls_of(stats, "journal/impl/ref/ingestion.py", "ingest")[0] == 5
