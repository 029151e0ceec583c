"""The in-memory backend: what one operation costs does not grow with the store."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.storage import AppendEntry, DurableRecord, RecordEntry
from nenjim.infrastructure.storage.rules import find_unique_violation
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS, JOURNAL, ROOTS

RECORD = DurableRecord("test.execution", "0.1", {"step": 1})


def _store(executions: int) -> InMemoryBackend:
    backend = InMemoryBackend([ROOTS, EXECUTIONS])
    with backend.transaction() as view:
        view.records(ROOTS).insert(key="root", revision=0, attributes={}, record=RECORD)
        records = view.records(EXECUTIONS)
        for n in range(executions):
            attributes = {"owner": "root", "active": False}
            records.insert(key=f"x{n}", revision=0, attributes=attributes, record=RECORD)
    return backend


def _bytes_allocated_by_a_read(backend: InMemoryBackend) -> int:
    """The peak of memory allocated while one root-view operation (a read) runs."""
    records = backend.view.records(EXECUTIONS)
    records.read("x0")  # warm: nothing lazily built is counted below
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        records.read("x0")
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_a_transaction_allocates_no_more_in_a_large_store_than_in_a_small_one() -> None:
    """A rollback point costs the size of the transaction's changes, not a copy of the store
    (a snapshot per transaction made every insert linear in the number of records)."""
    small = _bytes_allocated_by_a_read(_store(10))
    large = _bytes_allocated_by_a_read(_store(3_000))
    assert large < small + 4_096, (small, large)


def _bytes_allocated_by_an_append(entries: int, others: int) -> int:
    """The least memory allocated by one of three appends to a stream of ``entries``
    entries, in a store whose log holds ``entries + others`` events either way (the
    least: a list that grows reallocates now and then, not at every append)."""
    backend = InMemoryBackend([ROOTS, JOURNAL])
    journal = backend.view.streams(JOURNAL)
    with backend.transaction() as view:
        for root in ("root", "other"):
            view.records(ROOTS).insert(key=root, revision=0, attributes={}, record=RECORD)
        streams = view.streams(JOURNAL)
        for stream, count in (("root", entries), ("other", others)):
            batch = [AppendEntry(f"e{n}", RECORD) for n in range(count)]
            streams.append(stream=stream, expected_head=0, entries=batch)
    peaks = []
    for n in range(3):
        entry = [AppendEntry(f"next{n}", RECORD)]
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            journal.append(stream="root", expected_head=entries + n, entries=entry)
            peaks.append(tracemalloc.get_traced_memory()[1] - start)
        finally:
            tracemalloc.stop()
    return min(peaks)


def test_an_append_allocates_no_more_on_a_long_stream_than_on_a_short_one() -> None:
    """An append checks its ids against the stream's id index, not a set built from every
    entry of the stream at each call."""
    short = _bytes_allocated_by_an_append(10, 3_000)
    long = _bytes_allocated_by_an_append(3_000, 10)
    assert long < short + 4_096, (short, long)


def test_a_rollback_after_a_large_store_keeps_what_was_committed() -> None:
    backend = _store(100)
    records = backend.view.records(EXECUTIONS)
    try:
        with backend.transaction() as view:
            scoped = view.records(EXECUTIONS)
            scoped.delete(key="x1")
            scoped.insert(
                key="new", revision=0, attributes={"owner": "root", "active": True}, record=RECORD
            )
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert records.read("x1") is not None
    assert records.read("new") is None
    assert len(records.scan(index="owner", equals={"owner": "root"})) == 100


def test_the_unique_check_reads_no_stored_row_for_a_candidate_outside_every_constraint() -> None:
    read: list[RecordEntry] = []

    def stored() -> Iterator[RecordEntry]:
        for n in range(100):
            row = RecordEntry(f"x{n}", 0, {"owner": "root", "active": True}, RECORD)
            read.append(row)
            yield row

    inactive = RecordEntry("new", 0, {"owner": "root", "active": False}, RECORD)
    assert find_unique_violation(EXECUTIONS, inactive, stored()) is None
    assert read == []
    active = RecordEntry("new", 0, {"owner": "root", "active": True}, RECORD)
    assert find_unique_violation(EXECUTIONS, active, stored()) == "one_active_owner"
