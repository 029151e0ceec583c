"""Neutral storage primitives: records, streams, blobs, checks, view scopes.

Every test starts from a fresh backend whose ``agent.roots`` holds the row
:data:`OWNER` at revision 7, the anchor that executions and journal streams
need.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    UNCHECKED,
    AppendEntry,
    Backend,
    BlobConflictError,
    ConditionFailedError,
    ConflictError,
    GuardRef,
    NoRows,
    NotFoundError,
    RecordEntry,
    RevisionIs,
    StreamHeadIs,
    TransactionError,
    UniqueConstraintError,
    UnsupportedBackendError,
)
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    EXECUTIONS_ID,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import (
    OWNER_ROOT_REVISION,
    StorageContract,
    assert_names_missing,
    assign,
    in_thread,
    set_item,
)

RUN = "run-1"
"""The execution key most record tests use."""

MISSING_OWNER = "missing-parent"
"""An owner with no ``agent.roots`` row."""

# Scans order keys by their UTF-8 bytes. The expected order is spelled out so a
# backend sorting by a locale collation or case-insensitively fails visibly.
SCAN_KEYS = ("z", "é", "Z", "あ", "a")
SCAN_ORDER = ("Z", "a", "z", "é", "あ")

# Outside the BMP, UTF-16 code-unit order (surrogates D800-DFFF) puts U+1F600
# before U+FF61, UTF-8 byte order (and code-point order) after it.
BEYOND_BMP_KEYS = ("\U0001f600", "\uff61", "\ud7ff")
BEYOND_BMP_ORDER = ("\ud7ff", "\uff61", "\U0001f600")


class StoragePrimitivesContract(StorageContract):
    """The neutral storage primitives every backend must implement identically."""

    @staticmethod
    def _insert(
        backend: Backend, key: str = RUN, *, active: bool = True, owner: str = OWNER
    ) -> RecordEntry:
        entry: RecordEntry = backend.view.records(EXECUTIONS).insert(
            key=key,
            revision=0,
            attributes={"owner": owner, "active": active},
            record=opaque_record(),
        )
        return entry

    def _insert_for_another_owner(self, backend: Backend, key: str) -> None:
        """An inactive execution ``key`` of an owner of its own, ``someone-else``."""
        backend.view.records(ROOTS).insert(
            key="someone-else", revision=0, attributes={}, record=opaque_record()
        )
        self._insert(backend, key, active=False, owner="someone-else")

    @staticmethod
    def _replace(
        backend: Backend,
        key: str,
        expected: int,
        *,
        active: bool,
        owner: str = OWNER,
        expected_attributes: dict[str, Any] | None = None,
    ) -> RecordEntry:
        entry: RecordEntry = backend.view.records(EXECUTIONS).replace(
            key=key,
            expected_revision=expected,
            next_revision=expected + 1,
            attributes={"owner": owner, "active": active},
            record=opaque_record(),
            expected_attributes=expected_attributes or {},
        )
        return entry

    # 1 ------------------------------------------------------------------
    def test_payload_is_opaque_and_entries_are_fresh_immutable_copies(
        self, backend: Backend
    ) -> None:
        records = backend.view.records(EXECUTIONS)
        attributes: dict[str, Any] = {"owner": OWNER, "active": True}
        record = opaque_record()
        inserted = records.insert(key=RUN, revision=0, attributes=attributes, record=record)
        # The caller's map is copied on the way in.
        attributes["active"] = False
        loaded = records.fetch(RUN)
        again = records.fetch(RUN)

        assert isinstance(loaded, RecordEntry)
        assert loaded is not inserted
        assert loaded is not again
        assert loaded.record is not inserted.record
        assert loaded.record is not record
        assert inserted.record is not record
        for entry in (inserted, loaded):
            assert (entry.key, entry.revision, dict(entry.attributes)) == (
                RUN,
                0,
                {"owner": OWNER, "active": True},
            )
            assert entry.record == record
        assert loaded.record.record_type == "unrelated.envelope"
        assert loaded.record.format_version == "0.1"
        assert loaded.record.payload == {"status": "ignored"}

        with pytest.raises(AttributeError):
            assign(loaded, "revision", 5)
        with pytest.raises(TypeError):
            set_item(loaded.attributes, "active", False)
        with pytest.raises(AttributeError):
            assign(loaded.record, "record_type", "changed")
        payload = loaded.record.payload
        # A read-only payload is as good as a private copy.
        with contextlib.suppress(TypeError):
            set_item(payload, "status", "changed")
        assert records.fetch(RUN).record.payload == {"status": "ignored"}
        assert records.fetch(RUN).attributes["active"] is True

    def test_stream_and_blob_entries_are_fresh_immutable_copies(self, backend: Backend) -> None:
        streams = backend.view.streams(JOURNAL)
        record = opaque_record()
        appended = streams.append(
            stream=OWNER, expected_head=0, entries=[AppendEntry("first", record)]
        )
        assert isinstance(appended, tuple)
        first, second = streams.read(stream=OWNER)[0], streams.read(stream=OWNER)[0]
        assert first is not second
        assert first is not appended[0]
        assert first.record is not record
        assert first.record is not second.record
        assert (first.position, first.id, first.record) == (1, "first", record)
        with pytest.raises(AttributeError):
            assign(first, "position", 9)

        blobs = backend.view.blobs(CONTENT_BLOBS)
        attributes: dict[str, Any] = {"canonicalization_version": 1}
        put = blobs.put_if_absent(key="blob", data=b"bytes", attributes=attributes)
        attributes["canonicalization_version"] = 2
        fetched = blobs.fetch("blob")
        assert fetched is not put
        assert fetched is not blobs.fetch("blob")
        assert (fetched.key, fetched.data, dict(fetched.attributes)) == (
            "blob",
            b"bytes",
            {"canonicalization_version": 1},
        )
        with pytest.raises(AttributeError):
            assign(fetched, "data", b"other")
        with pytest.raises(TypeError):
            set_item(fetched.attributes, "canonicalization_version", 3)
        assert blobs.fetch("blob").attributes["canonicalization_version"] == 1

    # 2 ------------------------------------------------------------------
    def test_named_unique_constraint_is_reported_apart_from_primary_identity(
        self, backend: Backend
    ) -> None:
        self._insert(backend)
        with pytest.raises(UniqueConstraintError) as unique:
            self._insert(backend, "other")
        assert unique.value.resource == EXECUTIONS_ID
        assert unique.value.constraint == "one_active_owner"
        assert isinstance(unique.value, ConflictError)
        assert backend.view.records(EXECUTIONS).read("other") is None

        with pytest.raises(ConflictError) as duplicate:
            self._insert(backend)
        assert not isinstance(duplicate.value, UniqueConstraintError)

    # 3 ------------------------------------------------------------------
    def test_replace_checks_revision_before_unique_rule_and_keeps_failed_rows(
        self, backend: Backend
    ) -> None:
        self._insert(backend)
        with pytest.raises(ConflictError):
            self._replace(backend, RUN, 9, active=False)
        assert backend.view.records(EXECUTIONS).fetch(RUN).revision == 0

        # A stale revision that would also break one_active_owner is a plain
        # revision conflict: the revision check comes first.
        self._insert(backend, "competitor", active=False)
        with pytest.raises(ConflictError) as error:
            self._replace(backend, "competitor", 9, active=True)
        assert not isinstance(error.value, UniqueConstraintError)
        competitor = backend.view.records(EXECUTIONS).fetch("competitor")
        assert (competitor.revision, competitor.attributes["active"]) == (0, False)

    # 4 ------------------------------------------------------------------
    def test_replace_checks_immutable_owner_and_expected_attributes(self, backend: Backend) -> None:
        self._insert(backend)
        with pytest.raises(ConflictError):
            self._replace(backend, RUN, 0, active=True, owner="another")
        with pytest.raises(ConflictError):
            self._replace(backend, RUN, 0, active=True, expected_attributes={"active": False})
        stored = backend.view.records(EXECUTIONS).fetch(RUN)
        assert (stored.revision, dict(stored.attributes)) == (
            0,
            {"owner": OWNER, "active": True},
        )
        # The matching precondition passes.
        replaced = self._replace(
            backend, RUN, 0, active=False, expected_attributes={"active": True}
        )
        assert replaced.revision == 1

    # 5 ------------------------------------------------------------------
    def test_active_rule_is_enforced_only_through_the_declared_constraint(
        self, backend: Backend
    ) -> None:
        self._insert(backend, active=False)
        self._insert(backend, "competitor")
        with pytest.raises(UniqueConstraintError):
            self._replace(backend, RUN, 0, active=True)
        assert backend.view.records(EXECUTIONS).fetch(RUN).revision == 0

        assert self._replace(backend, "competitor", 0, active=False).revision == 1
        reactivated = self._replace(backend, RUN, 0, active=True)
        assert reactivated.revision == 1
        assert reactivated.attributes["active"] is True

    # 6 ------------------------------------------------------------------
    def test_scan_orders_by_utf8_bytes_with_an_exclusive_cursor(self, backend: Backend) -> None:
        for key in SCAN_KEYS:
            self._insert(backend, key, active=False)
        records = backend.view.records(EXECUTIONS)
        everything = records.scan(index="owner", equals={"owner": OWNER})
        assert isinstance(everything, tuple)
        assert tuple(entry.key for entry in everything) == SCAN_ORDER

        first = records.scan(index="owner", equals={"owner": OWNER}, limit=2)
        rest = records.scan(index="owner", equals={"owner": OWNER}, after=first[-1].key)
        assert tuple(entry.key for entry in first) == SCAN_ORDER[:2]
        assert tuple(entry.key for entry in first + rest) == SCAN_ORDER
        # The cursor need not be a stored key.
        after_b = records.scan(index="owner", equals={"owner": OWNER}, after="b", limit=2)
        assert tuple(entry.key for entry in after_b) == ("z", "é")

        active = records.scan(index="owner_active", equals={"owner": OWNER, "active": True})
        assert active == ()
        inactive = records.scan(index="owner_active", equals={"owner": OWNER, "active": False})
        assert len(inactive) == len(SCAN_KEYS)

    def test_scan_keys_are_the_keys_of_the_same_scan(self, backend: Backend) -> None:
        for key in (*SCAN_KEYS, *BEYOND_BMP_KEYS):
            self._insert(backend, key, active=key == "\U0001f600")  # one active per owner
        records = backend.view.records(EXECUTIONS)
        shapes: list[dict[str, Any]] = [
            {"index": "owner", "equals": {"owner": OWNER}},
            {"index": "owner", "equals": {"owner": OWNER}, "limit": 2},
            {"index": "owner", "equals": {"owner": OWNER}, "after": "b", "limit": 2},
            {"index": "owner", "equals": {"owner": OWNER}, "after": "\uff61"},
            {"index": "owner", "equals": {"owner": "nobody"}},
            {"index": "owner_active", "equals": {"owner": OWNER, "active": True}},
            {"index": "owner_active", "equals": {"owner": OWNER, "active": False}, "limit": 1},
        ]
        for shape in shapes:
            keys = records.scan_keys(**shape)
            assert isinstance(keys, tuple)
            assert keys == tuple(entry.key for entry in records.scan(**shape)), shape
        assert len(records.scan_keys(index="owner", equals={"owner": OWNER})) == len(
            SCAN_KEYS
        ) + len(BEYOND_BMP_KEYS)
        with backend.transaction() as view:
            inside = view.records(EXECUTIONS)
            inside.delete(key=SCAN_ORDER[0])
            # a transaction's own writes are what its scans see
            assert inside.scan_keys(index="owner", equals={"owner": OWNER})[0] == SCAN_ORDER[1]
        with pytest.raises(ValueError, match=r"."):
            records.scan_keys(index="no such index", equals={"owner": OWNER})

    def test_a_scan_of_every_row_needs_no_index(self, backend: Backend) -> None:
        for key in SCAN_KEYS:
            self._insert(backend, key, active=False)
        self._insert_for_another_owner(backend, "other-owner-run")
        records = backend.view.records(EXECUTIONS)
        keys = tuple(sorted((*SCAN_KEYS, "other-owner-run"), key=lambda key: key.encode()))
        every = records.scan(index=None, equals={})
        assert tuple(entry.key for entry in every) == keys
        assert records.scan_keys(index=None, equals={}) == keys
        first = records.scan(index=None, equals={}, limit=2)
        rest = records.scan(index=None, equals={}, after=first[-1].key)
        assert tuple(entry.key for entry in first + rest) == keys
        page = records.select(index=None, equals={}, offset=1, limit=2)
        assert tuple(entry.key for entry in page) == keys[1:3]
        (together,) = backend.view.read_together(records.prepared_scan(index=None, equals={}))
        assert tuple(entry.key for entry in together) == keys
        # Only scans take every row: a delete or a condition names an index.
        with pytest.raises(ValueError, match=r"takes no equals"):
            records.scan(index=None, equals={"owner": OWNER})
        with pytest.raises(TypeError, match=r"."):
            records.delete_matching(index=None, equals={})  # type: ignore[arg-type]
        assert len(records.scan(index=None, equals={})) == len(keys)
        with backend.transaction() as view:
            inside = view.records(EXECUTIONS)
            inside.delete(key=keys[0])
            assert inside.scan_keys(index=None, equals={}) == keys[1:]

    def test_a_key_prefix_scan_takes_the_keys_that_start_with_it(self, backend: Backend) -> None:
        # Around each prefix, the keys just outside its range: the prefix's last character
        # raised by one, a shorter key, and the characters that cannot be raised.
        inside = ("a/", "a/1", "a/1/x", "a/\U0010ffff", "a/\ud7ff", "a/%", "a/_")
        outside = ("a", "a0", "a.", "b/", "A/1", "\U0010ffff")
        for key in (*outside, *inside):
            self._insert(backend, key, active=False)
        self._insert_for_another_owner(backend, "a/other")
        records = backend.view.records(EXECUTIONS)
        under = tuple(sorted((*inside, "a/other"), key=lambda key: key.encode()))
        scanned = records.scan(index=None, equals={}, key_prefix="a/")
        assert tuple(entry.key for entry in scanned) == under
        assert records.scan_keys(index=None, equals={}, key_prefix="a/") == under
        owned = records.scan_keys(index="owner", equals={"owner": OWNER}, key_prefix="a/")
        assert owned == tuple(key for key in under if key != "a/other")
        first = records.scan(index=None, equals={}, key_prefix="a/", limit=3)
        rest = records.scan(index=None, equals={}, key_prefix="a/", after=first[-1].key)
        assert tuple(entry.key for entry in first + rest) == under
        page = records.select(index=None, equals={}, key_prefix="a/", offset=1, limit=2)
        assert tuple(entry.key for entry in page) == under[1:3]
        prepared = records.prepared_scan(index=None, equals={}, key_prefix="a/1")
        (together,) = backend.view.read_together(prepared)
        assert tuple(entry.key for entry in together) == ("a/1", "a/1/x")
        # Prefixes whose last characters cannot simply be raised.
        beyond = records.scan_keys(index=None, equals={}, key_prefix="\U0010ffff")
        assert beyond == ("\U0010ffff",)
        assert records.scan_keys(index=None, equals={}, key_prefix="a/\ud7ff") == ("a/\ud7ff",)
        assert records.scan_keys(index=None, equals={}, key_prefix="zz") == ()
        with backend.transaction() as view:
            view.records(EXECUTIONS).delete(key="a/1")
            assert view.records(EXECUTIONS).scan_keys(index=None, equals={}, key_prefix="a/1") == (
                "a/1/x",
            )
        for bad, error in (("", ValueError), ("a\0", ValueError), (b"a/", TypeError)):
            with pytest.raises(error, match=r"key_prefix"):
                records.scan(index=None, equals={}, key_prefix=bad)  # type: ignore[arg-type]
            with pytest.raises(error, match=r"key_prefix"):
                records.select(index=None, equals={}, key_prefix=bad)  # type: ignore[arg-type]

    def test_scan_order_is_utf8_bytes_beyond_the_bmp(self, backend: Backend) -> None:
        for key in BEYOND_BMP_KEYS:
            self._insert(backend, key, active=False)
        records = backend.view.records(EXECUTIONS)
        scanned = records.scan(index="owner", equals={"owner": OWNER})
        assert tuple(entry.key for entry in scanned) == BEYOND_BMP_ORDER
        after = records.scan(index="owner", equals={"owner": OWNER}, after="\uff61")
        assert tuple(entry.key for entry in after) == ("\U0001f600",)

    # 7 ------------------------------------------------------------------
    def test_index_shape_limits_attributes_and_revisions_are_validated_before_writing(
        self, backend: Backend
    ) -> None:
        records = backend.view.records(EXECUTIONS)
        with pytest.raises(ValueError, match=r"."):
            records.scan(index="missing", equals={})
        with pytest.raises(ValueError, match=r"."):
            records.scan(index="owner", equals={"active": True})
        with pytest.raises(ValueError, match=r"."):
            records.scan(index="owner_active", equals={"owner": OWNER})
        with pytest.raises(ValueError, match=r"."):
            records.scan(index="owner", equals={"owner": OWNER}, limit=0)
        with pytest.raises(ValueError, match=r"."):
            records.insert(
                key=RUN,
                revision=-1,
                attributes={"owner": OWNER, "active": True},
                record=opaque_record(),
            )
        with pytest.raises(TypeError):
            records.insert(
                key=RUN,
                revision=0,
                attributes={"owner": OWNER, "active": "true"},
                record=opaque_record(),
            )
        assert records.read(RUN) is None

    # 8 ------------------------------------------------------------------
    def test_parent_anchor_is_required_for_children_streams_and_bulk_deletes(
        self, backend: Backend
    ) -> None:
        streams = backend.view.streams(JOURNAL)
        records = backend.view.records(EXECUTIONS)
        writes: list[Callable[[], object]] = [
            lambda: self._insert(backend, owner=MISSING_OWNER),
            lambda: streams.append(stream=MISSING_OWNER, expected_head=0, entries=[]),
            lambda: streams.append(
                stream=MISSING_OWNER,
                expected_head=0,
                entries=[AppendEntry("first", opaque_record())],
            ),
            lambda: records.delete_matching(index="owner", equals={"owner": MISSING_OWNER}),
            lambda: records.delete_matching(
                index="owner_active", equals={"owner": MISSING_OWNER, "active": False}
            ),
        ]
        for write in writes:
            with pytest.raises(NotFoundError) as missing:
                write()
            assert_names_missing(missing.value, ROOTS.id, MISSING_OWNER)
        assert records.read(RUN) is None
        assert streams.head(stream=MISSING_OWNER) == 0
        assert streams.read(stream=MISSING_OWNER) == ()

    def test_guards_are_checked_on_replace_and_delete_and_never_on_reads(
        self, backend: Backend
    ) -> None:
        # Once the anchor is gone, children can be read but not changed.
        self._insert(backend)
        backend.view.streams(JOURNAL).append(
            stream=OWNER, expected_head=0, entries=[AppendEntry("first", opaque_record())]
        )
        backend.view.records(ROOTS).delete(key=OWNER)
        records = backend.view.records(EXECUTIONS)
        streams = backend.view.streams(JOURNAL)
        assert records.fetch(RUN).revision == 0
        assert len(records.scan(index="owner", equals={"owner": OWNER})) == 1
        assert streams.head(stream=OWNER) == 1
        assert len(streams.read(stream=OWNER)) == 1
        # The error names the anchor the row's owner attribute names, not the row.
        for write in (
            lambda: self._replace(backend, RUN, 0, active=False),
            lambda: records.delete(key=RUN),
            lambda: streams.delete(stream=OWNER),
        ):
            with pytest.raises(NotFoundError) as missing:
                write()
            assert_names_missing(missing.value, ROOTS.id, OWNER)
        assert records.fetch(RUN).revision == 0
        assert streams.head(stream=OWNER) == 1

    # 9 ------------------------------------------------------------------
    def test_optional_reads_required_fetches_and_revision_checked_deletes(
        self, backend: Backend
    ) -> None:
        # Typed Any: the kit asserts the documented None results at run time.
        records: Any = backend.view.records(EXECUTIONS)
        assert records.read(RUN) is None
        with pytest.raises(NotFoundError) as missing:
            records.fetch(RUN)
        assert_names_missing(missing.value, EXECUTIONS.id, RUN)
        with pytest.raises(ConflictError):
            records.delete(key=RUN, expected_revision=0)
        assert records.delete(key=RUN) is None
        self._insert(backend)
        with pytest.raises(ConflictError):
            records.delete(key=RUN, expected_revision=1)
        assert records.fetch(RUN).revision == 0
        assert records.delete(key=RUN, expected_revision=0) is None
        assert records.read(RUN) is None

    def test_unchecked_delete_removes_a_row_at_any_revision(self, backend: Backend) -> None:
        self._insert(backend)
        self._replace(backend, RUN, 0, active=False)
        records: Any = backend.view.records(EXECUTIONS)
        assert records.delete(key=RUN, expected_revision=UNCHECKED) is None
        assert records.read(RUN) is None

    def test_replace_of_a_missing_key_is_not_found(self, backend: Backend) -> None:
        with pytest.raises(NotFoundError) as missing:
            self._replace(backend, RUN, 0, active=True)
        assert_names_missing(missing.value, EXECUTIONS.id, RUN)
        assert backend.view.records(EXECUTIONS).read(RUN) is None

    # 10 -----------------------------------------------------------------
    def test_delete_matching_removes_only_equality_index_matches(self, backend: Backend) -> None:
        self._insert(backend, active=False)
        self._insert(backend, "active")
        records: Any = backend.view.records(EXECUTIONS)
        result = records.delete_matching(
            index="owner_active", equals={"owner": OWNER, "active": False}
        )
        assert result is None
        assert records.read(RUN) is None
        assert records.fetch("active").attributes["active"] is True

    # 11 -----------------------------------------------------------------
    def test_append_assigns_ordered_positions_and_identities_atomically(
        self, backend: Backend
    ) -> None:
        streams = backend.view.streams(JOURNAL)
        entries = [AppendEntry(id_, opaque_record()) for id_ in ("first", "second")]
        appended = streams.append(stream=OWNER, expected_head=0, entries=entries)
        assert tuple(entry.position for entry in appended) == (1, 2)
        assert tuple(entry.id for entry in appended) == ("first", "second")
        assert streams.head(stream=OWNER) == 2
        page = streams.read(stream=OWNER, after=1, limit=1)
        assert tuple(entry.id for entry in page) == ("second",)
        with pytest.raises(ConflictError):
            streams.append(stream=OWNER, expected_head=2, entries=[entries[0]])
        assert streams.head(stream=OWNER) == 2
        stored = streams.read(stream=OWNER)
        assert tuple((entry.position, entry.id) for entry in stored) == (
            (1, "first"),
            (2, "second"),
        )

    def test_append_at_a_stale_head_is_a_conflict(self, backend: Backend) -> None:
        streams = backend.view.streams(JOURNAL)
        streams.append(
            stream=OWNER, expected_head=0, entries=[AppendEntry("first", opaque_record())]
        )
        with pytest.raises(ConflictError):
            streams.append(
                stream=OWNER, expected_head=0, entries=[AppendEntry("second", opaque_record())]
            )
        assert tuple(entry.id for entry in streams.read(stream=OWNER)) == ("first",)

    # 12 -----------------------------------------------------------------
    def test_empty_append_checks_the_head_and_batch_ids_are_validated_first(
        self, backend: Backend
    ) -> None:
        streams = backend.view.streams(JOURNAL)
        assert streams.append(stream=OWNER, expected_head=0, entries=[]) == ()
        with pytest.raises(ConflictError):
            streams.append(stream=OWNER, expected_head=1, entries=[])
        entry = AppendEntry("same", opaque_record())
        with pytest.raises(ConflictError):
            streams.append(stream=OWNER, expected_head=0, entries=[entry, entry])
        assert streams.head(stream=OWNER) == 0
        assert streams.read(stream=OWNER) == ()

    # 13 -----------------------------------------------------------------
    def test_stream_delete_resets_head_so_ids_and_positions_can_be_reused(
        self, backend: Backend
    ) -> None:
        streams: Any = backend.view.streams(JOURNAL)
        entries = [AppendEntry("reusable", opaque_record())]
        streams.append(stream=OWNER, expected_head=0, entries=entries)
        assert streams.delete(stream=OWNER) is None
        assert streams.head(stream=OWNER) == 0
        assert streams.read(stream=OWNER) == ()
        again = streams.append(stream=OWNER, expected_head=0, entries=entries)
        assert tuple((entry.position, entry.id) for entry in again) == ((1, "reusable"),)

    def test_missing_stream_reads_empty_at_head_zero(self, backend: Backend) -> None:
        streams = backend.view.streams(JOURNAL)
        assert streams.head(stream="never-written") == 0
        assert streams.read(stream="never-written") == ()

    # 14 -----------------------------------------------------------------
    def test_blobs_take_any_key_keep_binary_bytes_and_first_metadata(
        self, backend: Backend
    ) -> None:
        blobs = backend.view.blobs(CONTENT_BLOBS)
        key = "any key / not a digest ✓"
        data = b"\x00\xffbinary\x80"
        assert blobs.exists(key) is False
        first = blobs.put_if_absent(key=key, data=data, attributes={"canonicalization_version": 1})
        second = blobs.put_if_absent(
            key=key, data=data, attributes={"canonicalization_version": 99}
        )
        assert dict(first.attributes) == {"canonicalization_version": 1}
        assert dict(second.attributes) == {"canonicalization_version": 1}
        assert second.data == data
        assert blobs.exists(key) is True
        fetched = blobs.fetch(key)
        assert (fetched.key, fetched.data) == (key, data)
        assert isinstance(fetched.data, bytes)

        with pytest.raises(BlobConflictError) as conflict:
            blobs.put_if_absent(key=key, data=b"other", attributes={"canonicalization_version": 1})
        assert isinstance(conflict.value, ConflictError)
        assert blobs.fetch(key).data == data

    def test_missing_blob_fetch_is_not_found(self, backend: Backend) -> None:
        blobs = backend.view.blobs(CONTENT_BLOBS)
        with pytest.raises(NotFoundError) as missing:
            blobs.fetch("sha256:" + "0" * 64)
        assert_names_missing(missing.value, CONTENT_BLOBS.id, "sha256:" + "0" * 64)
        assert blobs.exists("sha256:" + "0" * 64) is False

    # 15 -----------------------------------------------------------------
    def test_check_evaluates_guarded_revision_head_and_no_rows_conditions(
        self, backend: Backend
    ) -> None:
        view = backend.view
        guard = GuardRef(ROOTS, OWNER)
        revision = RevisionIs(ROOTS, OWNER, OWNER_ROOT_REVISION)
        head = StreamHeadIs(JOURNAL, OWNER, 0)
        idle = NoRows(EXECUTIONS, "owner_active", {"owner": OWNER, "active": True})
        assert view.check(guards=[guard], conditions=[revision, head, idle]) is True
        with pytest.raises(ValueError, match=r"."):
            view.check(guards=[], conditions=[head])
        self._insert(backend)
        with pytest.raises(ConditionFailedError) as failed:
            view.check(guards=[guard], conditions=[idle])
        assert failed.value.condition is idle
        assert isinstance(failed.value, ConflictError)

    def test_check_reports_the_first_failing_condition_in_order(self, backend: Backend) -> None:
        guard = GuardRef(ROOTS, OWNER)
        fine = RevisionIs(ROOTS, OWNER, OWNER_ROOT_REVISION)
        stale_head = StreamHeadIs(JOURNAL, OWNER, 3)
        stale_revision = RevisionIs(ROOTS, OWNER, OWNER_ROOT_REVISION + 1)
        with pytest.raises(ConditionFailedError) as failed:
            backend.view.check(guards=[guard, guard], conditions=[fine, stale_head, stale_revision])
        assert failed.value.condition is stale_head

    def test_check_treats_a_missing_row_as_a_failed_revision_condition(
        self, backend: Backend
    ) -> None:
        missing = RevisionIs(WORKFLOW_STATES, "never-written", 0)
        with pytest.raises(ConditionFailedError) as failed:
            backend.view.check(guards=[], conditions=[missing])
        assert failed.value.condition is missing

    def test_check_accepts_resource_ids_and_unguarded_resources(self, backend: Backend) -> None:
        backend.view.records(WORKFLOW_STATES).insert(
            key="wf", revision=1, attributes={}, record=opaque_record()
        )
        assert (
            backend.view.check(
                guards=[GuardRef(ROOTS.id, OWNER)],
                conditions=[
                    RevisionIs(WORKFLOW_STATES.id, "wf", 1),
                    StreamHeadIs(JOURNAL.id, OWNER, 0),
                ],
            )
            is True
        )
        assert backend.view.check(guards=[], conditions=[]) is True

    def test_check_requires_existing_anchors_and_matching_guard_coverage(
        self, backend: Backend
    ) -> None:
        view = backend.view
        with pytest.raises(NotFoundError) as missing:
            view.check(guards=[GuardRef(ROOTS, MISSING_OWNER)], conditions=[])
        assert_names_missing(missing.value, ROOTS.id, MISSING_OWNER)
        # Coverage must name the condition's own anchor key.
        with pytest.raises(ValueError, match=r"."):
            view.check(
                guards=[GuardRef(ROOTS, OWNER)],
                conditions=[StreamHeadIs(JOURNAL, "other-owner", 0)],
            )
        # RevisionIs on executions needs a guard on the anchor resource their owner names.
        with pytest.raises(ValueError, match=r"."):
            view.check(guards=[], conditions=[RevisionIs(EXECUTIONS, RUN, 0)])
        # NoRows coverage is equals[via].
        with pytest.raises(ValueError, match=r"."):
            view.check(
                guards=[GuardRef(ROOTS, "other-owner")],
                conditions=[NoRows(EXECUTIONS, "owner", {"owner": OWNER})],
            )

    def test_check_names_the_first_missing_anchor_before_any_condition(
        self, backend: Backend
    ) -> None:
        """Anchors are locked in a fixed order before any condition is read: with two
        missing, the first in that order is reported, even beside a failing condition."""
        failing = StreamHeadIs(JOURNAL, OWNER, 7)
        guards = [GuardRef(ROOTS, "zz-missing"), GuardRef(ROOTS, OWNER), GuardRef(ROOTS, "a-gone")]
        with pytest.raises(NotFoundError) as missing:
            backend.view.check(guards=guards, conditions=[failing])
        assert_names_missing(missing.value, ROOTS.id, "a-gone")
        with pytest.raises(ConditionFailedError) as failed:
            backend.view.check(guards=[GuardRef(ROOTS, OWNER)], conditions=[failing])
        assert failed.value.condition is failing

    def test_check_reads_no_rows_with_nulls_booleans_and_several_resources(
        self, backend: Backend
    ) -> None:
        items = backend.view.records(INVENTORY_ITEMS)
        attributes = {
            "code": None,
            "label": "bolt",
            "quantity": 3,
            "reserved": None,
            "available": False,
            "flagged": None,
        }
        items.insert(key="uncoded", revision=0, attributes=attributes, record=opaque_record())
        uncoded = NoRows(INVENTORY_ITEMS, "code", {"code": None})
        coded = NoRows(INVENTORY_ITEMS, "code", {"code": "c-1"})
        available = NoRows(INVENTORY_ITEMS, "available", {"available": True})
        unavailable = NoRows(INVENTORY_ITEMS, "available", {"available": False})
        idle = NoRows(EXECUTIONS, "owner_active", {"owner": OWNER, "active": True})
        root = RevisionIs(ROOTS, OWNER, OWNER_ROOT_REVISION)
        guards = [GuardRef(ROOTS, OWNER)]
        assert backend.view.check(guards=guards, conditions=[coded, available, idle, root])
        for held in (uncoded, unavailable):
            with pytest.raises(ConditionFailedError) as failed:
                backend.view.check(guards=guards, conditions=[coded, root, held, idle])
            assert failed.value.condition is held

    def test_check_validates_its_arguments(self, backend: Backend) -> None:
        view = backend.view
        not_a_guard: Any = (ROOTS.id, OWNER)
        with pytest.raises(TypeError):
            view.check(guards=[not_a_guard], conditions=[])
        not_a_condition: Any = lambda: True  # noqa: E731 - callbacks are not conditions
        with pytest.raises(TypeError):
            view.check(guards=[], conditions=[not_a_condition])
        with pytest.raises(UnsupportedBackendError):
            view.check(guards=[GuardRef("unknown.resource", OWNER)], conditions=[])
        with pytest.raises(UnsupportedBackendError):
            view.check(guards=[GuardRef(JOURNAL.id, OWNER)], conditions=[])
        with pytest.raises(UnsupportedBackendError):
            view.check(guards=[], conditions=[StreamHeadIs(ROOTS, OWNER, 0)])
        with pytest.raises(ValueError, match=r"."):
            view.check(
                guards=[GuardRef(ROOTS, OWNER)],
                conditions=[NoRows(EXECUTIONS, "missing", {"owner": OWNER})],
            )

    # 16 -----------------------------------------------------------------
    def test_retained_bound_view_and_handle_expire_after_commit(self, backend: Backend) -> None:
        with backend.transaction() as view:
            handle = view.records(EXECUTIONS)
        with pytest.raises(TransactionError):
            view.records(EXECUTIONS)
        with pytest.raises(TransactionError):
            handle.read(RUN)
        with pytest.raises(TransactionError):
            view.check(guards=[], conditions=[])
        with pytest.raises(TransactionError):
            handle.insert(
                key=RUN,
                revision=0,
                attributes={"owner": OWNER, "active": True},
                record=opaque_record(),
            )
        assert backend.view.records(EXECUTIONS).read(RUN) is None

    # 17 -----------------------------------------------------------------
    def test_retained_bound_handle_expires_after_rollback(self, backend: Backend) -> None:
        abort = RuntimeError("abort")
        kept: dict[str, Any] = {}

        def body() -> None:
            with backend.transaction() as view:
                kept["records"] = view.records(EXECUTIONS)
                kept["streams"] = view.streams(JOURNAL)
                raise abort

        with pytest.raises(RuntimeError) as raised:
            body()
        assert raised.value is abort
        handle, streams = kept["records"], kept["streams"]
        with pytest.raises(TransactionError):
            handle.read(RUN)
        with pytest.raises(TransactionError):
            streams.head(stream=OWNER)

    # 18 -----------------------------------------------------------------
    def test_bound_view_refuses_another_thread_and_keeps_working_on_its_own(
        self, backend: Backend
    ) -> None:
        with backend.transaction() as view:
            handle = view.records(EXECUTIONS)
            through_view = in_thread(lambda: view.records(EXECUTIONS).read(RUN))
            through_handle = in_thread(lambda: handle.read(RUN))
            through_check = in_thread(lambda: view.check(guards=[], conditions=[]))
            assert isinstance(through_view.error, TransactionError)
            assert isinstance(through_handle.error, TransactionError)
            assert isinstance(through_check.error, TransactionError)
            assert view.records(EXECUTIONS).read(RUN) is None
            self._insert(backend)
            assert handle.fetch(RUN).revision == 0
        # Refusing the other thread did not fail the scope: the insert committed.
        assert backend.view.records(EXECUTIONS).fetch(RUN).revision == 0

    def test_root_view_works_from_any_thread(self, backend: Backend) -> None:
        outcome = in_thread(lambda: self._insert(backend))
        assert outcome.error is None
        assert backend.view.records(EXECUTIONS).fetch(RUN).revision == 0
        read = in_thread(lambda: backend.view.records(EXECUTIONS).fetch(RUN))
        assert read.error is None
        assert read.value is not None
        assert read.value.key == RUN

    # 19 -----------------------------------------------------------------
    def test_cached_root_handle_joins_the_current_transaction(self, backend: Backend) -> None:
        handle = backend.view.records(EXECUTIONS)
        rollback = RuntimeError("rollback")

        def body() -> None:
            with backend.transaction() as view:
                handle.insert(
                    key=RUN,
                    revision=0,
                    attributes={"owner": OWNER, "active": True},
                    record=opaque_record(),
                )
                # Written into this transaction: the bound view already sees it.
                assert view.records(EXECUTIONS).fetch(RUN).revision == 0
                raise rollback

        with pytest.raises(RuntimeError) as raised:
            body()
        assert raised.value is rollback
        assert handle.read(RUN) is None

    # 20 -----------------------------------------------------------------
    def test_caught_physical_failure_leaves_the_scope_unusable(self, backend: Backend) -> None:
        reached_end: list[bool] = []

        def body() -> None:
            with backend.transaction() as view:
                handle = view.records(EXECUTIONS)
                handle.insert(
                    key=RUN,
                    revision=0,
                    attributes={"owner": OWNER, "active": True},
                    record=opaque_record(),
                )
                with pytest.raises(UniqueConstraintError):
                    handle.insert(
                        key="collision",
                        revision=0,
                        attributes={"owner": OWNER, "active": True},
                        record=opaque_record(),
                    )
                with pytest.raises(TransactionError):
                    handle.read(RUN)
                with pytest.raises(TransactionError):
                    view.streams(JOURNAL).head(stream=OWNER)
                # A root handle joins the thread's (failed) scope, so it fails too.
                with pytest.raises(TransactionError):
                    backend.view.records(EXECUTIONS).read(RUN)
                reached_end.append(True)

        # The block swallowed the error, yet the scope ends in TransactionError.
        with pytest.raises(TransactionError):
            body()
        assert reached_end == [True]
        assert backend.view.records(EXECUTIONS).read(RUN) is None

    # 21-23: Python has no block-level non-local exit; leaving the body by
    # return or break is an ordinary exit and commits. An exception used as
    # control flow (Ruby's throw) rolls back like any other.
    def test_return_from_the_transaction_body_commits(self, backend: Backend) -> None:
        def returner() -> str:
            with backend.transaction():
                self._insert(backend)
                return "escaped"

        assert returner() == "escaped"
        assert backend.view.records(EXECUTIONS).fetch(RUN).revision == 0

    def test_break_out_of_the_transaction_body_commits(self, backend: Backend) -> None:
        for key in ("first", "second"):
            with backend.transaction():
                self._insert(backend, key, active=False)
                break
        records = backend.view.records(EXECUTIONS)
        assert records.fetch("first").revision == 0
        assert records.read("second") is None

    def test_exception_escaping_to_an_outer_handler_rolls_back(self, backend: Backend) -> None:
        class EscapeError(Exception):
            pass

        escape = EscapeError()
        caught: list[BaseException] = []
        try:
            with backend.transaction():
                self._insert(backend)
                raise escape
        except EscapeError as error:
            caught.append(error)
        assert caught == [escape]
        assert caught[0] is escape
        assert backend.view.records(EXECUTIONS).read(RUN) is None

    # extension ------------------------------------------------------------
    def test_history_lists_every_written_revision_in_order(self, backend: Backend) -> None:
        records = backend.view.records(EXECUTIONS)
        assert records.history(RUN) == ()
        first = opaque_record({"step": 0})
        second = opaque_record({"step": 1})
        records.insert(
            key=RUN, revision=0, attributes={"owner": OWNER, "active": True}, record=first
        )
        records.replace(
            key=RUN,
            expected_revision=0,
            next_revision=1,
            attributes={"owner": OWNER, "active": False},
            record=second,
        )
        history = records.history(RUN)
        assert isinstance(history, tuple)
        assert tuple(entry.revision for entry in history) == (0, 1)
        assert (history[0].record, dict(history[0].attributes)) == (
            first,
            {"owner": OWNER, "active": True},
        )
        assert (history[1].record, dict(history[1].attributes)) == (
            second,
            {"owner": OWNER, "active": False},
        )
        assert all(entry.key == RUN for entry in history)
        times = [entry.recorded_at for entry in history]
        assert all(t.tzinfo is not None for t in times)
        assert times == sorted(times)
        records.delete(key=RUN)
        records.insert(
            key=RUN, revision=5, attributes={"owner": OWNER, "active": False}, record=first
        )
        # The log keeps revisions across a delete and a re-insert of the key.
        assert tuple(entry.revision for entry in records.history(RUN)) == (0, 1, 5)
        assert records.history("never-written") == ()
