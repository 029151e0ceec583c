"""Scalar and attribute validation: every bad argument refused before any write.

Argument errors are Python's: a value of the wrong type raises ``TypeError``
(``bool`` is never an ``int``), a well-typed but bad value raises
``ValueError``. Where either is reasonable (an attribute set with a ``None``
for a non-nullable type) either is accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConflictError,
    Resource,
    SerializationError,
)
from nenjim.infrastructure.storage.testing.inputs import (
    BAD_KEYS,
    BAD_LIMITS,
    BAD_REVISIONS,
    inventory_item,
    loose,
)
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import (
    INVALID_ARGUMENT,
    StorageContract,
)


class StorageValidationContract(StorageContract):
    """Scalar and attribute validation: refused before any write, nothing stored."""

    @staticmethod
    def _assert_nothing_written(backend: Backend) -> None:
        view = backend.view
        assert view.records(EXECUTIONS).scan(index="owner", equals={"owner": OWNER}) == ()
        assert view.streams(JOURNAL).head(stream=OWNER) == 0
        assert (
            view.records(INVENTORY_ITEMS).scan(index="available", equals={"available": True}) == ()
        )

    @pytest.mark.parametrize(
        "operation",
        [
            "records.read",
            "records.fetch",
            "records.insert",
            "records.replace",
            "records.delete",
            "streams.append",
            "streams.read",
            "streams.head",
            "streams.delete",
            "blobs.put_if_absent",
            "blobs.fetch",
            "blobs.exists",
            "append entry id",
            "resource id",
        ],
    )
    def test_every_key_argument_is_validated(self, backend: Backend, operation: str) -> None:
        view = backend.view
        runs = view.records(EXECUTIONS)
        streams = view.streams(JOURNAL)
        blobs = view.blobs(CONTENT_BLOBS)
        record = opaque_record()
        active = {"owner": OWNER, "active": True}
        operations: dict[str, Callable[[Any], object]] = {
            "records.read": runs.read,
            "records.fetch": runs.fetch,
            "records.insert": lambda key: runs.insert(
                key=key, revision=0, attributes=active, record=record
            ),
            "records.replace": lambda key: runs.replace(
                key=key, expected_revision=0, next_revision=1, attributes=active, record=record
            ),
            "records.delete": lambda key: runs.delete(key=key),
            "streams.append": lambda key: streams.append(
                stream=key, expected_head=0, entries=[AppendEntry("first", record)]
            ),
            "streams.read": lambda key: streams.read(stream=key),
            "streams.head": lambda key: streams.head(stream=key),
            "streams.delete": lambda key: streams.delete(stream=key),
            "blobs.put_if_absent": lambda key: blobs.put_if_absent(
                key=key, data=b"x", attributes={"canonicalization_version": 1}
            ),
            "blobs.fetch": blobs.fetch,
            "blobs.exists": blobs.exists,
            "append entry id": lambda key: AppendEntry(key, record),
            "resource id": lambda key: Resource(key, "records"),
        }
        for bad, error in BAD_KEYS:
            with pytest.raises(error):
                operations[operation](bad)
        self._assert_nothing_written(backend)

    @pytest.mark.parametrize(
        "operation", ["records.insert", "records.delete", "streams.append", "streams.read after"]
    )
    def test_every_revision_argument_is_validated(self, backend: Backend, operation: str) -> None:
        view = backend.view
        runs = view.records(EXECUTIONS)
        streams = view.streams(JOURNAL)
        record = opaque_record()
        runs.insert(
            key="run-1", revision=0, attributes={"owner": OWNER, "active": False}, record=record
        )
        operations: dict[str, Callable[[Any], object]] = {
            "records.insert": lambda bad: runs.insert(
                key="run-2",
                revision=bad,
                attributes={"owner": OWNER, "active": False},
                record=record,
            ),
            "records.delete": lambda bad: runs.delete(key="run-1", expected_revision=bad),
            "streams.append": lambda bad: streams.append(
                stream=OWNER, expected_head=bad, entries=[AppendEntry("first", record)]
            ),
            "streams.read after": lambda bad: streams.read(stream=OWNER, after=bad),
        }
        for bad, error in BAD_REVISIONS:
            if operation == "streams.read after" and bad is None:
                continue  # no default of None is documented for after; skip the ambiguity
            with pytest.raises(error):
                operations[operation](bad)
        assert runs.fetch("run-1").revision == 0
        assert runs.read("run-2") is None
        assert streams.head(stream=OWNER) == 0

    def test_replace_revisions_are_validated_and_must_advance_by_one(
        self, backend: Backend
    ) -> None:
        runs = backend.view.records(EXECUTIONS)
        record = opaque_record()
        attributes = {"owner": OWNER, "active": False}
        runs.insert(key="run-1", revision=0, attributes=attributes, record=record)

        def replace(expected: Any, following: Any) -> object:
            return runs.replace(
                key="run-1",
                expected_revision=expected,
                next_revision=following,
                attributes=attributes,
                record=record,
            )

        with pytest.raises(ValueError, match=r"."):
            replace(-1, 0)
        # True == 0 + 1 in Python; a bool is still not a revision.
        with pytest.raises(TypeError):
            replace(0, True)
        with pytest.raises(TypeError):
            replace(False, 1)
        with pytest.raises(ConflictError):
            replace(0, 2)
        with pytest.raises(ConflictError):
            replace(0, 0)
        assert runs.fetch("run-1").revision == 0
        # Any start revision >= 0 is allowed on insert.
        assert (
            runs.insert(key="run-2", revision=41, attributes=attributes, record=record).revision
            == 41
        )

    @pytest.mark.parametrize("operation", ["records.scan", "streams.read"])
    def test_limits_are_none_or_positive_ints(self, backend: Backend, operation: str) -> None:
        runs = backend.view.records(EXECUTIONS)
        streams = backend.view.streams(JOURNAL)
        operations: dict[str, Callable[[Any], object]] = {
            "records.scan": lambda limit: runs.scan(
                index="owner", equals={"owner": OWNER}, limit=limit
            ),
            "streams.read": lambda limit: streams.read(stream=OWNER, limit=limit),
        }
        for bad, error in BAD_LIMITS:
            with pytest.raises(error):
                operations[operation](bad)
        assert operations[operation](None) == ()
        assert operations[operation](1) == ()

    def test_record_attributes_must_match_the_declared_set_and_types(
        self, backend: Backend
    ) -> None:
        runs = backend.view.records(EXECUTIONS)
        items = backend.view.records(INVENTORY_ITEMS)
        record = opaque_record()
        cases: list[tuple[Any, Any, Any]] = [
            (runs, {"owner": OWNER}, ValueError),  # missing attribute
            (runs, {"owner": OWNER, "active": True, "extra": 1}, ValueError),
            (runs, [("owner", OWNER), ("active", True)], TypeError),
            (runs, None, TypeError),
            (runs, {"owner": OWNER, "active": 1}, TypeError),
            (runs, {"owner": OWNER, "active": "true"}, TypeError),
            (runs, {"owner": OWNER, "active": None}, INVALID_ARGUMENT),
            (runs, {"owner": 1, "active": True}, TypeError),
            (runs, {"owner": b"owner", "active": True}, TypeError),
            # The guard attribute must itself be a valid key.
            (runs, {"owner": "", "active": True}, ValueError),
            (runs, {"owner": "a\0b", "active": True}, ValueError),
            (runs, {"owner": "\ud800", "active": True}, ValueError),
            (items, inventory_item("A", quantity=True), TypeError),
            (items, inventory_item("A", quantity=1.0), TypeError),
            (items, inventory_item("A", quantity="1"), TypeError),
            (items, inventory_item("A", quantity=None), INVALID_ARGUMENT),
            (items, inventory_item("A", reserved=False), TypeError),
            (items, inventory_item("A", flagged=0), TypeError),
            (items, inventory_item("A", label="a\0b"), ValueError),
            (items, inventory_item("A", label="\udfff"), ValueError),
            (items, inventory_item(loose(1)), TypeError),
        ]
        for handle, attributes, error in cases:
            with pytest.raises(error):
                handle.insert(key="k", revision=0, attributes=attributes, record=record)
        name_not_str: Any = {1: "x", "owner": OWNER, "active": True}
        with pytest.raises(INVALID_ARGUMENT):
            runs.insert(key="k", revision=0, attributes=name_not_str, record=record)
        self._assert_nothing_written(backend)
        assert items.read("k") is None

    def test_expected_attributes_and_scan_values_are_validated_as_partial_sets(
        self, backend: Backend
    ) -> None:
        runs = backend.view.records(EXECUTIONS)
        record = opaque_record()
        attributes = {"owner": OWNER, "active": False}
        runs.insert(key="run-1", revision=0, attributes=attributes, record=record)
        expected_cases: tuple[tuple[Any, type[Exception]], ...] = (
            ({"unknown": 1}, ValueError),
            ({"active": "yes"}, TypeError),
            ({"owner": 5}, TypeError),
            ([("active", False)], TypeError),
        )
        for expected, error in expected_cases:
            with pytest.raises(error):
                runs.replace(
                    key="run-1",
                    expected_revision=0,
                    next_revision=1,
                    attributes=attributes,
                    record=record,
                    expected_attributes=expected,
                )
        equals_cases: tuple[tuple[Any, type[Exception]], ...] = (
            ({"owner": OWNER, "active": "yes"}, TypeError),
            ({"owner": 5, "active": True}, TypeError),
            ([("owner", OWNER)], TypeError),
        )
        for equals, error in equals_cases:
            with pytest.raises(error):
                runs.scan(index="owner_active", equals=equals)
        with pytest.raises(ValueError, match=r"."):
            runs.delete_matching(index="owner_active", equals={"owner": OWNER})
        with pytest.raises(ValueError, match=r"."):
            runs.delete_matching(index="missing", equals={"owner": OWNER})
        assert runs.fetch("run-1").revision == 0

    def test_records_must_be_durable_records(self, backend: Backend) -> None:
        runs = backend.view.records(EXECUTIONS)
        streams = backend.view.streams(JOURNAL)
        attributes = {"owner": OWNER, "active": False}
        runs.insert(key="run-1", revision=0, attributes=attributes, record=opaque_record())
        for not_a_record in ({"status": "ignored"}, None, "record"):
            bad: Any = not_a_record
            with pytest.raises(SerializationError):
                runs.insert(key="run-2", revision=0, attributes=attributes, record=bad)
            with pytest.raises(SerializationError):
                runs.replace(
                    key="run-1",
                    expected_revision=0,
                    next_revision=1,
                    attributes=attributes,
                    record=bad,
                )
            with pytest.raises(SerializationError):
                AppendEntry("first", bad)
            with pytest.raises(SerializationError):
                streams.append(stream=OWNER, expected_head=0, entries=[bad])
        assert runs.read("run-2") is None
        assert runs.fetch("run-1").revision == 0
        assert streams.head(stream=OWNER) == 0

    def test_append_entries_must_be_a_sequence(self, backend: Backend) -> None:
        streams = backend.view.streams(JOURNAL)
        single: Any = AppendEntry("first", opaque_record())
        nothing: Any = None
        with pytest.raises(TypeError):
            streams.append(stream=OWNER, expected_head=0, entries=single)
        with pytest.raises(TypeError):
            streams.append(stream=OWNER, expected_head=0, entries=nothing)
        assert streams.head(stream=OWNER) == 0

    def test_blob_data_and_attributes_are_validated(self, backend: Backend) -> None:
        blobs = backend.view.blobs(CONTENT_BLOBS)
        for data in ("text", None, 5):
            bad: Any = data
            with pytest.raises(TypeError):
                blobs.put_if_absent(key="b", data=bad, attributes={"canonicalization_version": 1})
        for attributes, error in (
            ({}, ValueError),
            ({"canonicalization_version": True}, TypeError),
            ({"canonicalization_version": "1"}, TypeError),
            ({"canonicalization_version": 1, "extra": 1}, ValueError),
        ):
            with pytest.raises(error):
                blobs.put_if_absent(key="b", data=b"x", attributes=attributes)
        assert blobs.exists("b") is False
