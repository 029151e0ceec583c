"""The SPI's values: ``DurableRecord``, entries, errors and capabilities."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    REQUIRED_CAPABILITIES,
    UNCHECKED,
    AppendEntry,
    Backend,
    BackendClosedError,
    BlobConflictError,
    BlobEntry,
    ConditionFailedError,
    ConflictError,
    DurableRecord,
    GuardRef,
    NoRows,
    NotFoundError,
    RecordEntry,
    RevisionIs,
    SerializationError,
    StorageError,
    StreamEntry,
    StreamHeadIs,
    TransactionError,
    UniqueConstraintError,
    UnsupportedBackendError,
    validate_capabilities,
)
from nenjim.infrastructure.storage.testing.inputs import (
    loose,
)
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import (
    StorageContract,
    assign,
    remove,
    set_item,
)


class StorageValuesContract(StorageContract):
    """DurableRecord, entries, errors and capabilities."""

    def test_backend_reports_exactly_the_required_capabilities(self, backend: Backend) -> None:
        expected = {
            "spi_version": 2,
            "atomic_resources": True,
            "record_cas": True,
            "stream_cas": True,
            "conditional_unique": True,
            "guarded_checks": True,
            "nested_savepoints": True,
        }
        assert dict(REQUIRED_CAPABILITIES) == expected
        capabilities = backend.capabilities
        for key, value in expected.items():
            assert capabilities[key] == value
            assert type(capabilities[key]) is type(value)
        assert callable(backend.transaction)
        assert backend.view is not None
        validate_capabilities(backend)

    def test_capability_validation_refuses_legacy_and_partial_backends(self) -> None:
        class Candidate:
            """Answers ``view`` and ``transaction`` with the given capabilities."""

            view = None

            def __init__(self, capabilities: Mapping[str, object]) -> None:
                self.capabilities = capabilities

            def transaction(self) -> None:
                return None

        legacy = {"atomic_all": True, "atomic_admission": True, "optimistic_revision": True}
        candidates = (
            Candidate(legacy),
            Candidate({**REQUIRED_CAPABILITIES, "nested_savepoints": False}),
            Candidate({**REQUIRED_CAPABILITIES, "record_cas": 1}),  # 1 == True, yet not True
            object(),
        )
        for candidate in candidates:
            with pytest.raises(UnsupportedBackendError):
                validate_capabilities(candidate)

    def test_error_taxonomy(self) -> None:
        for conflict in (UniqueConstraintError, ConditionFailedError, BlobConflictError):
            assert issubclass(conflict, ConflictError)
        for error in (
            ConflictError,
            NotFoundError,
            SerializationError,
            TransactionError,
            BackendClosedError,
            UnsupportedBackendError,
        ):
            assert issubclass(error, StorageError)
            assert issubclass(error, Exception)
        for unrelated in (NotFoundError, SerializationError, TransactionError, BackendClosedError):
            assert not issubclass(unrelated, ConflictError)
        assert not issubclass(BackendClosedError, TransactionError | UnsupportedBackendError)
        assert not issubclass(StorageError, (ValueError, TypeError))

    @pytest.mark.parametrize(
        ("record_type", "format_version", "payload"),
        [
            ("", "0.1", {}),
            (None, "0.1", {}),
            (1, "0.1", {}),
            ("t", "1", {}),
            ("t", "01.1", {}),
            ("t", "1.01", {}),
            ("t", "a.b", {}),
            ("t", "1.1.1", {}),
            ("t", " 0.1", {}),
            ("t", "0.1\n", {}),
            ("t", "-1.0", {}),
            ("t", 0.1, {}),
            ("t", None, {}),
            ("t", "0.1", None),
            ("t", "0.1", []),
            ("t", "0.1", "{}"),
            ("t", "0.1", {1: "x"}),
            ("t", "0.1", {"n": 2**53}),
            ("t", "0.1", {"n": -(2**53)}),
            ("t", "0.1", {"n": math.nan}),
            ("t", "0.1", {"n": math.inf}),
            ("t", "0.1", {"n": -0.0}),
            ("t", "0.1", {"n": {1, 2}}),
            ("t", "0.1", {"n": b"bytes"}),
            ("t", "0.1", {"n": object()}),
            ("t", "0.1", {"n": [{"deep": math.nan}]}),
            ("t", "0.1", {"n": "\ud800"}),
        ],
    )
    def test_invalid_durable_record_is_a_serialization_error(
        self, record_type: Any, format_version: Any, payload: Any
    ) -> None:
        with pytest.raises(SerializationError):
            DurableRecord(record_type, format_version, payload)

    def test_durable_record_is_an_immutable_copy_of_its_payload(self) -> None:
        nested = [1, "two", None, True, 1.5]
        payload: dict[str, Any] = {
            "z": nested,
            "a": {"inner": "é"},
            "max": 2**53 - 1,
            "min": -(2**53 - 1),
        }
        record = DurableRecord("some.type", "10.3", payload)
        nested.append("later")
        payload["a"] = "changed"
        assert record.record_type == "some.type"
        assert record.format_version == "10.3"
        assert record.payload == {
            "z": [1, "two", None, True, 1.5],
            "a": {"inner": "é"},
            "max": 2**53 - 1,
            "min": -(2**53 - 1),
        }
        # A read-only payload is as good as a private copy.
        with contextlib.suppress(TypeError):
            set_item(record.payload, "z", "mutated")
        assert record.payload["z"] == [1, "two", None, True, 1.5]
        with pytest.raises(AttributeError):
            assign(record, "payload", {})
        assert record == DurableRecord("some.type", "10.3", record.payload)
        assert record != DurableRecord("some.type", "10.4", record.payload)
        assert DurableRecord("t", "0.0", {}).payload == {}

    def test_entries_validate_their_fields_and_are_immutable(self) -> None:
        record = opaque_record()
        entry = RecordEntry("k", 0, {"a": 1}, record)
        with pytest.raises(AttributeError):
            assign(entry, "key", "other")
        with pytest.raises(ValueError, match=r"."):
            RecordEntry("", 0, {}, record)
        with pytest.raises(ValueError, match=r"."):
            RecordEntry("k", -1, {}, record)
        with pytest.raises(TypeError):
            RecordEntry("k", True, {}, record)
        with pytest.raises(ValueError, match=r"."):
            StreamEntry(-1, "id", record)
        with pytest.raises(ValueError, match=r"."):
            AppendEntry("", record)
        with pytest.raises(TypeError):
            BlobEntry("k", loose("text"), {})
        blob = BlobEntry("k", b"\x00\xff", {"v": 1})
        assert (blob.data, dict(blob.attributes)) == (b"\x00\xff", {"v": 1})
        with pytest.raises(AttributeError):
            assign(AppendEntry("id", record), "id", "other")

    def test_every_value_refuses_assignment_and_deletion(self, backend: Backend) -> None:
        """Declarations, envelopes, entries (built or returned), guards, conditions, the
        ``UNCHECKED`` sentinel and a view's handles (bound to their resource): no field can
        be set or deleted, and no attribute added."""
        record = opaque_record()
        stored = backend.view.records(WORKFLOW_STATES).insert(
            key="wf", revision=0, attributes={}, record=record
        )
        appended = backend.view.streams(JOURNAL).append(
            stream=OWNER, expected_head=0, entries=[AppendEntry("first", record)]
        )
        blob = backend.view.blobs(CONTENT_BLOBS).put_if_absent(
            key="b", data=b"x", attributes={"canonicalization_version": 1}
        )
        (recorded,) = backend.view.records(WORKFLOW_STATES).history("wf")
        values: dict[str, tuple[object, tuple[str, ...]]] = {
            "Resource": (EXECUTIONS, ("id", "kind", "attributes", "guard", "unique", "indexes")),
            "DurableRecord": (record, ("record_type", "format_version", "payload")),
            "RecordEntry": (stored, ("key", "revision", "attributes", "record")),
            "RecordedEntry": (recorded, ("key", "revision", "recorded_at")),
            "AppendEntry": (AppendEntry("id", record), ("id", "record")),
            "StreamEntry": (appended[0], ("position", "id", "record")),
            "BlobEntry": (blob, ("key", "data", "attributes")),
            "GuardRef": (GuardRef(ROOTS, OWNER), ("resource", "key")),
            "RevisionIs": (RevisionIs(ROOTS, OWNER, 0), ("resource", "key", "expected")),
            "StreamHeadIs": (StreamHeadIs(JOURNAL, OWNER, 0), ("resource", "stream", "expected")),
            "NoRows": (
                NoRows(INVENTORY_ITEMS, "code", {"code": None}),
                ("resource", "index", "equals"),
            ),
            "UNCHECKED": (UNCHECKED, ()),
            "Records": (backend.view.records(ROOTS), ("resource",)),
            "Streams": (backend.view.streams(JOURNAL), ("resource",)),
            "Blobs": (backend.view.blobs(CONTENT_BLOBS), ("resource",)),
        }
        for name, (value, fields) in values.items():
            for field in (*fields, "added"):
                before = getattr(value, field, None)
                with pytest.raises(AttributeError):
                    assign(value, field, None)
                with pytest.raises(AttributeError):
                    remove(value, field)
                assert getattr(value, field, None) == before, f"{name}.{field} changed"
