"""Purges: a delete that erases records, streams (or their oldest entries) and blobs.

What every backend must do alike: the purged values no longer read back through
any handle (rows, history, stream reads, blobs), everything else reads back
unchanged, the purge reports the key, the count of events it erased and
their digest, a purge inside a scope that fails erases nothing, and a key
purged can be written again.
"""

from __future__ import annotations

import pytest

from nenjim.infrastructure.storage import AppendEntry, Backend, NotFoundError, Purge
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import StorageContract

KEY = "wf-purged"
KEPT = "wf-kept"


class _ScopeFailedError(Exception):
    """Raised to fail a scope on purpose."""


def _write_twice(backend: Backend, key: str) -> None:
    records = backend.view.records(WORKFLOW_STATES)
    records.insert(key=key, revision=0, attributes={}, record=opaque_record({"n": 1, "k": key}))
    records.replace(
        key=key, expected_revision=0, next_revision=1, attributes={}, record=opaque_record({"n": 2})
    )


def _entries(*ids: str) -> list[AppendEntry]:
    return [AppendEntry(id=entry, record=opaque_record({"id": entry})) for entry in ids]


class StoragePurgeContract(StorageContract):
    """``Records.purge``/``purge_matching``, ``Streams.purge`` and ``Blobs.purge``."""

    def test_a_purged_record_reads_back_nowhere_and_the_others_are_unchanged(
        self, backend: Backend
    ) -> None:
        _write_twice(backend, KEY)
        _write_twice(backend, KEPT)
        records = backend.view.records(WORKFLOW_STATES)
        kept = (records.read(KEPT), records.history(KEPT))

        purged = records.purge(key=KEY)

        assert isinstance(purged, Purge)
        assert (purged.kind, purged.resource, purged.key, purged.events) == (
            "records",
            WORKFLOW_STATES.id,
            KEY,
            2,
        )
        assert len(purged.digest) == 64
        assert records.read(KEY) is None
        assert records.history(KEY) == ()
        assert (records.read(KEPT), records.history(KEPT)) == kept

    def test_the_log_tells_a_purged_key_from_one_never_written(self, backend: Backend) -> None:
        _write_twice(backend, KEY)
        records = backend.view.records(WORKFLOW_STATES)
        first = records.purge(key=KEY)
        records.insert(key=KEY, revision=0, attributes={}, record=opaque_record())
        second = records.purge(key=KEY)
        journal = backend.view.streams(JOURNAL)
        journal.append(stream=OWNER, expected_head=0, entries=_entries("e1", "e2"))
        cut = journal.purge(stream=OWNER, before=2)

        assert records.purges(KEY) == (first, second)
        assert records.purges("never") == ()
        assert journal.purges(OWNER) == (cut,)
        assert backend.view.blobs(CONTENT_BLOBS).purges(KEY) == ()

    def test_a_record_deleted_before_is_still_erased_from_history(self, backend: Backend) -> None:
        _write_twice(backend, KEY)
        records = backend.view.records(WORKFLOW_STATES)
        records.delete(key=KEY)
        assert len(records.history(KEY)) == 2

        purged = records.purge(key=KEY)

        assert purged is not None
        assert purged.events == 2
        assert records.history(KEY) == ()

    def test_purging_a_key_never_written_or_purged_already_erases_nothing(
        self, backend: Backend
    ) -> None:
        records = backend.view.records(WORKFLOW_STATES)
        assert records.purge(key="never") is None
        _write_twice(backend, KEY)
        assert records.purge(key=KEY) is not None
        assert records.purge(key=KEY) is None

    def test_a_purged_key_is_written_again_from_scratch(self, backend: Backend) -> None:
        _write_twice(backend, KEY)
        records = backend.view.records(WORKFLOW_STATES)
        records.purge(key=KEY)

        records.insert(key=KEY, revision=0, attributes={}, record=opaque_record({"n": 3}))

        stored = records.read(KEY)
        assert stored is not None
        assert stored.record.payload == {"n": 3}
        assert [entry.record.payload for entry in records.history(KEY)] == [{"n": 3}]
        second = records.purge(key=KEY)
        assert second is not None
        assert second.events == 1

    def test_a_purge_in_a_failed_scope_erases_nothing(self, backend: Backend) -> None:
        _write_twice(backend, KEY)
        records = backend.view.records(WORKFLOW_STATES)
        before = (records.read(KEY), records.history(KEY))

        def purge_then_fail() -> None:
            with backend.transaction() as view:
                view.records(WORKFLOW_STATES).purge(key=KEY)
                raise _ScopeFailedError

        with pytest.raises(_ScopeFailedError):
            purge_then_fail()

        assert (records.read(KEY), records.history(KEY)) == before

    def test_purge_matching_purges_each_matching_row(self, backend: Backend) -> None:
        items = backend.view.records(INVENTORY_ITEMS)
        for key, available in (("a", True), ("b", True), ("c", False)):
            attributes = {
                "code": None,
                "label": key,
                "quantity": 1,
                "reserved": None,
                "available": available,
                "flagged": None,
            }
            items.insert(key=key, revision=0, attributes=attributes, record=opaque_record())

        purged = items.purge_matching(index="available", equals={"available": True})

        assert [purge.key for purge in purged] == ["a", "b"]
        assert items.read("a") is None
        assert items.history("b") == ()
        assert items.read("c") is not None

    def test_a_purged_stream_restarts_and_keeps_nothing(self, backend: Backend) -> None:
        journal = backend.view.streams(JOURNAL)
        journal.append(stream=OWNER, expected_head=0, entries=_entries("e1", "e2", "e3"))

        purged = journal.purge(stream=OWNER)

        assert purged is not None
        assert (purged.kind, purged.events) == ("streams", 3)
        assert purged.before is None
        assert journal.head(stream=OWNER) == 0
        assert journal.read(stream=OWNER) == ()
        again = journal.append(stream=OWNER, expected_head=0, entries=_entries("e1"))
        assert [entry.position for entry in again] == [1]

    def test_purging_before_a_position_keeps_the_head_and_the_later_entries(
        self, backend: Backend
    ) -> None:
        log = backend.view.streams(JOURNAL)
        log.append(stream=OWNER, expected_head=0, entries=_entries("e1", "e2", "e3", "e4"))

        purged = log.purge(stream=OWNER, before=3)

        assert purged is not None
        assert (purged.events, purged.before) == (2, 3)
        assert log.head(stream=OWNER) == 4
        assert [(entry.position, entry.id) for entry in log.read(stream=OWNER)] == [
            (3, "e3"),
            (4, "e4"),
        ]
        assert [entry.id for entry in log.read(stream=OWNER, after=3)] == ["e4"]
        # The erased ids are free again; the stream goes on at its head.
        added = log.append(stream=OWNER, expected_head=4, entries=_entries("e1"))
        assert [entry.position for entry in added] == [5]
        assert log.purge(stream=OWNER, before=3) is None

    def test_a_partial_purge_also_erases_the_streams_earlier_lives(self, backend: Backend) -> None:
        log = backend.view.streams(JOURNAL)
        log.append(stream=OWNER, expected_head=0, entries=_entries("old1", "old2"))
        log.delete(stream=OWNER)
        log.append(stream=OWNER, expected_head=0, entries=_entries("new1", "new2"))

        purged = log.purge(stream=OWNER, before=2)

        assert purged is not None
        assert purged.events == 3
        assert [entry.id for entry in log.read(stream=OWNER)] == ["new2"]

    def test_a_purged_blob_is_gone_and_can_be_put_again(self, backend: Backend) -> None:
        blobs = backend.view.blobs(CONTENT_BLOBS)
        attributes = {"canonicalization_version": 1}
        blobs.put_if_absent(key="b1", data=b"secret", attributes=attributes)

        purged = blobs.purge(key="b1")

        assert purged is not None
        assert (purged.kind, purged.events) == ("blobs", 1)
        assert not blobs.exists("b1")
        with pytest.raises(NotFoundError):
            blobs.fetch("b1")
        blobs.put_if_absent(key="b1", data=b"other", attributes=attributes)
        assert blobs.fetch("b1").data == b"other"
        assert blobs.purge(key="missing") is None
