"""Resource declarations, scalar validation and capabilities.

Argument errors are Python's: a value of the wrong type raises ``TypeError``
(``bool`` is never an ``int``), a well-typed but bad value raises
``ValueError``. Where either is reasonable (declarations, an
attribute set with a ``None`` for a non-nullable type) either is accepted.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from infrastructure.storage import (
    REQUIRED_CAPABILITIES,
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
    Resource,
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
from infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    CONTENT_BLOBS_ID,
    EXECUTIONS,
    INVENTORY_ITEMS,
    INVENTORY_ITEMS_ID,
    JOURNAL,
    OWNER,
    ROOTS,
    ROOTS_ID,
    content_blobs_resource,
    executions_resource,
    journal_resource,
    opaque_record,
    roots_resource,
)
from infrastructure.storage.testing.support import (
    INVALID_ARGUMENT,
    OWNER_ROOT_REVISION,
    BackendFactory,
    StorageContract,
    assign,
    set_item,
)

BAD_KEYS: tuple[tuple[Any, type[Exception]], ...] = (
    ("", ValueError),
    ("\0", ValueError),
    ("a\0b", ValueError),
    ("\ud800", ValueError),  # a lone surrogate is not valid UTF-8
    (b"key", TypeError),
    (1, TypeError),
    (None, TypeError),
)
"""Keys every handle refuses (Ruby also refused symbols: any non-str here)."""

BAD_REVISIONS: tuple[tuple[Any, type[Exception]], ...] = (
    (-1, ValueError),
    (True, TypeError),
    (False, TypeError),
    (1.0, TypeError),
    ("1", TypeError),
    (None, TypeError),
)

BAD_LIMITS: tuple[tuple[Any, type[Exception]], ...] = (
    (0, ValueError),
    (-1, ValueError),
    (True, TypeError),
    (1.5, TypeError),
    ("1", TypeError),
)


def _item(code: str | None, **overrides: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "code": code,
        "label": f"item {code}",
        "quantity": 3,
        "reserved": None,
        "available": True,
        "flagged": None,
    }
    attributes.update(overrides)
    return attributes


def _loose(value: object) -> Any:
    """``value`` typed ``Any``: the declarations below are wrong on purpose."""
    return value


def _invalid_declarations() -> dict[str, Callable[[], Resource]]:
    """Each builds an invalid declaration, rejected with an argument error."""
    owner = {"owner": "string"}
    return {
        "unknown kind": lambda: Resource("x", "tables"),
        "kind not a str": lambda: Resource("x", _loose(1)),
        "unknown type": lambda: Resource("x", "records", attributes={"a": "float"}),
        "attribute name not a str": lambda: Resource(
            "x", "records", attributes=_loose({1: "string"})
        ),
        "empty attribute name": lambda: Resource("x", "records", attributes={"": "string"}),
        "index on a missing field": lambda: Resource(
            "x", "records", attributes=owner, indexes={"i": ("missing",)}
        ),
        "empty index": lambda: Resource("x", "records", attributes=owner, indexes={"i": ()}),
        "index repeats a field": lambda: Resource(
            "x", "records", attributes=owner, indexes={"i": ("owner", "owner")}
        ),
        "unique on a missing field": lambda: Resource(
            "x",
            "records",
            attributes=owner,
            unique=({"name": "u", "fields": ("missing",), "where": {}},),
        ),
        "unique with no fields": lambda: Resource(
            "x", "records", attributes=owner, unique=({"name": "u", "fields": (), "where": {}},)
        ),
        "unique where on a missing field": lambda: Resource(
            "x",
            "records",
            attributes=owner,
            unique=({"name": "u", "fields": ("owner",), "where": {"active": True}},),
        ),
        "unique where of the wrong type": lambda: Resource(
            "x",
            "records",
            attributes={"owner": "string", "active": "boolean"},
            unique=({"name": "u", "fields": ("owner",), "where": {"active": "yes"}},),
        ),
        "unique with an extra key": lambda: Resource(
            "x",
            "records",
            attributes=owner,
            unique=({"name": "u", "fields": ("owner",), "where": {}, "deferred": True},),
        ),
        "unique without where": lambda: Resource(
            "x", "records", attributes=owner, unique=({"name": "u", "fields": ("owner",)},)
        ),
        "duplicate constraint names": lambda: Resource(
            "x",
            "records",
            attributes=owner,
            unique=(
                {"name": "u", "fields": ("owner",), "where": {}},
                {"name": "u", "fields": ("owner",), "where": {}},
            ),
        ),
        "a lambda as a constraint": lambda: Resource(
            "x", "records", attributes=owner, unique=(_loose(lambda row: True),)
        ),
        "a lambda as via": lambda: Resource(
            "x", "records", guard={"resource": ROOTS_ID, "via": _loose(lambda row: row)}
        ),
        "streams with attributes": lambda: Resource("x", "streams", attributes=owner),
        "streams with indexes": lambda: Resource("x", "streams", indexes={"i": ("owner",)}),
        "blobs with a guard": lambda: Resource(
            "x", "blobs", guard={"resource": ROOTS_ID, "via": "key"}
        ),
        "blobs with unique": lambda: Resource(
            "x",
            "blobs",
            attributes=owner,
            unique=({"name": "u", "fields": ("owner",), "where": {}},),
        ),
        "blobs with immutable attributes": lambda: Resource(
            "x", "blobs", attributes=owner, immutable_attributes=("owner",)
        ),
        "immutable attribute not declared": lambda: Resource(
            "x", "records", attributes=owner, immutable_attributes=("missing",)
        ),
        "guard through a non-immutable attribute": lambda: Resource(
            "x", "records", attributes=owner, guard={"resource": ROOTS_ID, "via": "owner"}
        ),
        "guard through a nullable attribute": lambda: Resource(
            "x",
            "records",
            attributes={"owner": "nullable_string"},
            immutable_attributes=("owner",),
            guard={"resource": ROOTS_ID, "via": "owner"},
        ),
        "guard through an integer attribute": lambda: Resource(
            "x",
            "records",
            attributes={"owner": "integer"},
            immutable_attributes=("owner",),
            guard={"resource": ROOTS_ID, "via": "owner"},
        ),
        "guard through an undeclared attribute": lambda: Resource(
            "x", "records", guard={"resource": ROOTS_ID, "via": "owner"}
        ),
        "records guarded via stream": lambda: Resource(
            "x", "records", guard={"resource": ROOTS_ID, "via": "stream"}
        ),
        "streams guarded via key": lambda: Resource(
            "x", "streams", guard={"resource": ROOTS_ID, "via": "key"}
        ),
        "guard with an extra key": lambda: Resource(
            "x", "records", guard={"resource": ROOTS_ID, "via": "key", "lock": "share"}
        ),
        "guard resource not a key": lambda: Resource(
            "x", "records", guard={"resource": "", "via": "key"}
        ),
        "empty id": lambda: Resource("", "records"),
        "id with NUL": lambda: Resource("a\0b", "records"),
        "id not a str": lambda: Resource(_loose(1), "records"),
    }


INVALID_DECLARATIONS = _invalid_declarations()

SECOND_OWNER = "owner-2"


class StorageDeclarationContract(StorageContract):
    """Resource declarations, resolution of resources by a backend and its views."""

    # An independent resource (no guard) with nullable typed attributes.
    def test_independent_resource_with_nullable_typed_attributes(self, backend: Backend) -> None:
        items = backend.view.records(INVENTORY_ITEMS)
        first = items.insert(
            key="item-1", revision=0, attributes=_item(None), record=opaque_record()
        )
        items.insert(key="item-2", revision=0, attributes=_item(None), record=opaque_record())
        typed = _item("A-1", quantity=0, reserved=-5, available=False, flagged=True)
        items.insert(key="item-3", revision=0, attributes=typed, record=opaque_record())
        assert dict(first.attributes) == _item(None)

        # Typed attributes round-trip with their Python types.
        stored = items.fetch("item-3").attributes
        assert dict(stored) == typed
        assert type(stored["quantity"]) is int
        assert type(stored["reserved"]) is int
        assert stored["available"] is False
        assert stored["flagged"] is True
        assert items.fetch("item-1").attributes["code"] is None

        with pytest.raises(UniqueConstraintError) as unique:
            items.insert(key="item-4", revision=0, attributes=_item("A-1"), record=opaque_record())
        assert unique.value.resource == INVENTORY_ITEMS_ID
        assert unique.value.constraint == "unique_code"
        assert "inventory.items.unique_code" in str(unique.value)
        assert items.read("item-4") is None

        # A nil equality matches NULL (SQL: IS NULL), in key order.
        nulls = items.scan(index="code", equals={"code": None})
        assert tuple(entry.key for entry in nulls) == ("item-1", "item-2")
        assert tuple(e.key for e in items.scan(index="code", equals={"code": "A-1"})) == ("item-3",)
        unavailable = items.scan(index="available", equals={"available": False})
        assert tuple(entry.key for entry in unavailable) == ("item-3",)

        # Replace: the row's own key is excluded, another row's code is not.
        kept = items.replace(
            key="item-3",
            expected_revision=0,
            next_revision=1,
            attributes={**typed, "quantity": 7},
            record=opaque_record(),
        )
        assert kept.revision == 1
        with pytest.raises(UniqueConstraintError):
            items.replace(
                key="item-1",
                expected_revision=0,
                next_revision=1,
                attributes=_item("A-1"),
                record=opaque_record(),
            )
        assert items.fetch("item-1").revision == 0

        items.delete_matching(index="code", equals={"code": None})
        assert items.read("item-1") is None
        assert items.read("item-2") is None
        assert items.fetch("item-3").attributes["quantity"] == 7

    def test_declarations_are_frozen_copies_isolated_from_their_inputs(
        self, make_backend: BackendFactory
    ) -> None:
        attributes = {"owner": "string", "active": "boolean"}
        immutable = ["owner"]
        index_fields = ["owner"]
        indexes = {"owner": index_fields}
        fields = ["owner"]
        where = {"active": True}
        unique = [{"name": "one_active_owner", "fields": fields, "where": where}]
        guard = {"resource": ROOTS_ID, "via": "owner"}
        resource = Resource(
            "agent.executions",
            "records",
            attributes=attributes,
            immutable_attributes=immutable,
            indexes=indexes,
            unique=unique,
            guard=guard,
        )
        attributes["extra"] = "string"
        attributes["active"] = "string"
        immutable.clear()
        index_fields.append("active")
        indexes["extra"] = ["active"]
        fields.append("active")
        where["active"] = False
        unique.append({"name": "other", "fields": ["owner"], "where": {}})
        guard["via"] = "key"

        assert resource.id == "agent.executions"
        assert resource.kind == "records"
        assert dict(resource.attributes) == {"owner": "string", "active": "boolean"}
        assert tuple(resource.immutable_attributes) == ("owner",)
        assert {name: tuple(f) for name, f in resource.indexes.items()} == {"owner": ("owner",)}
        assert len(resource.unique) == 1
        constraint = resource.unique[0]
        assert constraint["name"] == "one_active_owner"
        assert tuple(constraint["fields"]) == ("owner",)
        assert dict(constraint["where"]) == {"active": True}
        assert resource.guard is not None
        assert dict(resource.guard) == {"resource": ROOTS_ID, "via": "owner"}

        with pytest.raises(AttributeError):
            assign(resource, "kind", "streams")
        with pytest.raises(TypeError):
            set_item(resource.attributes, "extra", "string")
        with pytest.raises((TypeError, AttributeError)):
            set_item(resource.indexes, "extra", ("active",))

        # The backend enforces the declaration as it was made.
        roots = roots_resource()
        backend = make_backend([roots, resource])
        backend.view.records(roots).insert(
            key=OWNER, revision=0, attributes={}, record=opaque_record()
        )
        runs = backend.view.records(resource)
        runs.insert(
            key="run-1",
            revision=0,
            attributes={"owner": OWNER, "active": True},
            record=opaque_record(),
        )
        runs.insert(
            key="run-2",
            revision=0,
            attributes={"owner": OWNER, "active": False},
            record=opaque_record(),
        )
        with pytest.raises(UniqueConstraintError):
            runs.insert(
                key="run-3",
                revision=0,
                attributes={"owner": OWNER, "active": True},
                record=opaque_record(),
            )
        with pytest.raises(NotFoundError):
            runs.insert(
                key="run-4",
                revision=0,
                attributes={"owner": "missing-parent", "active": False},
                record=opaque_record(),
            )

    def test_valid_declarations_of_every_shape_are_accepted(self) -> None:
        every_type = {
            "s": "string",
            "i": "integer",
            "b": "boolean",
            "ns": "nullable_string",
            "ni": "nullable_integer",
            "nb": "nullable_boolean",
        }
        resource = Resource("x.any-id/with spaces ✓", "records", attributes=every_type)
        assert dict(resource.attributes) == every_type
        assert Resource("x", "streams").kind == "streams"
        assert Resource("x", "blobs", attributes={"v": "integer"}).kind == "blobs"
        assert roots_resource().guard is not None
        assert journal_resource().guard is not None

    @pytest.mark.parametrize("case", sorted(INVALID_DECLARATIONS))
    def test_invalid_declaration_is_rejected(self, case: str) -> None:
        with pytest.raises(INVALID_ARGUMENT):
            INVALID_DECLARATIONS[case]()

    @pytest.mark.parametrize(
        "case",
        [
            "duplicate id",
            "guard to an unknown resource",
            "guard to a non-records resource",
            "element not a Resource",
            "not a sequence",
        ],
    )
    def test_bad_resource_set_is_refused_by_the_backend(
        self, make_backend: BackendFactory, case: str
    ) -> None:
        orphan_stream = Resource(
            "x.stream", "streams", guard={"resource": CONTENT_BLOBS_ID, "via": "stream"}
        )
        resource_sets: dict[str, Any] = {
            "duplicate id": [roots_resource(), roots_resource()],
            "guard to an unknown resource": [executions_resource()],
            "guard to a non-records resource": [content_blobs_resource(), orphan_stream],
            "element not a Resource": [roots_resource(), ROOTS_ID],
            "not a sequence": roots_resource(),
        }
        with pytest.raises(UnsupportedBackendError):
            make_backend(resource_sets[case])

    def test_backend_exposes_its_resources_by_id(self, backend: Backend) -> None:
        assert backend.resources[ROOTS_ID] is ROOTS
        assert backend.resources[INVENTORY_ITEMS_ID] is INVENTORY_ITEMS
        with pytest.raises(TypeError):
            set_item(backend.resources, "other", ROOTS)

    def test_view_refuses_unregistered_kind_mismatched_or_copied_resources(
        self, backend: Backend
    ) -> None:
        def refusals(view: Any) -> None:
            with pytest.raises(UnsupportedBackendError):
                view.records("unknown.resource")
            with pytest.raises(UnsupportedBackendError):
                view.streams(ROOTS)
            with pytest.raises(UnsupportedBackendError):
                view.records(JOURNAL)
            with pytest.raises(UnsupportedBackendError):
                view.blobs(EXECUTIONS.id)
            with pytest.raises(UnsupportedBackendError):
                view.records(CONTENT_BLOBS)
            # An equal-looking copy is not the registered object.
            with pytest.raises(UnsupportedBackendError):
                view.records(roots_resource())
            with pytest.raises(UnsupportedBackendError):
                view.streams(journal_resource())
            with pytest.raises(UnsupportedBackendError):
                view.blobs(content_blobs_resource())

        refusals(backend.view)
        with backend.transaction() as view:
            refusals(view)
            # Resolution errors are argument errors: they did not fail the scope.
            view.records(ROOTS_ID).insert(
                key=SECOND_OWNER, revision=0, attributes={}, record=opaque_record()
            )
        assert backend.view.records(ROOTS).fetch(SECOND_OWNER).revision == 0

    def test_handles_are_reachable_by_id_and_by_the_registered_object(
        self, backend: Backend
    ) -> None:
        backend.view.records(ROOTS_ID).insert(
            key=SECOND_OWNER, revision=0, attributes={}, record=opaque_record()
        )
        assert backend.view.records(ROOTS).fetch(SECOND_OWNER).key == SECOND_OWNER
        assert backend.view.records(ROOTS_ID).fetch(OWNER).revision == OWNER_ROOT_REVISION
        assert backend.view.streams(JOURNAL.id).head(stream=OWNER) == 0
        assert backend.view.blobs(CONTENT_BLOBS.id).exists("missing") is False

    @pytest.mark.parametrize(
        "build",
        [
            "guard resource",
            "guard key",
            "revision key",
            "revision resource",
            "stream head stream",
            "no-rows resource",
        ],
    )
    def test_guard_refs_and_conditions_validate_their_keys(self, build: str) -> None:
        builders: dict[str, Callable[[Any], object]] = {
            "guard resource": lambda bad: GuardRef(bad, OWNER),
            "guard key": lambda bad: GuardRef(ROOTS, bad),
            "revision key": lambda bad: RevisionIs(ROOTS, bad, 0),
            "revision resource": lambda bad: RevisionIs(bad, OWNER, 0),
            "stream head stream": lambda bad: StreamHeadIs(JOURNAL, bad, 0),
            "no-rows resource": lambda bad: NoRows(bad, "owner", {"owner": OWNER}),
        }
        for bad, error in BAD_KEYS:
            with pytest.raises(error):
                builders[build](bad)

    def test_guard_refs_and_conditions_keep_ids_and_validate_expectations(self) -> None:
        guard = GuardRef(ROOTS_ID, OWNER)
        assert (guard.resource, guard.key) == (ROOTS_ID, OWNER)
        by_object = GuardRef(ROOTS, OWNER)
        assert by_object.resource is ROOTS
        with pytest.raises(AttributeError):
            assign(guard, "key", "other")
        for bad, error in BAD_REVISIONS:
            with pytest.raises(error):
                RevisionIs(ROOTS, OWNER, bad)
            with pytest.raises(error):
                StreamHeadIs(JOURNAL, OWNER, bad)
        condition = StreamHeadIs(JOURNAL.id, OWNER, 0)
        assert (condition.resource, condition.stream, condition.expected) == (
            JOURNAL.id,
            OWNER,
            0,
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
            (items, _item("A", quantity=True), TypeError),
            (items, _item("A", quantity=1.0), TypeError),
            (items, _item("A", quantity="1"), TypeError),
            (items, _item("A", quantity=None), INVALID_ARGUMENT),
            (items, _item("A", reserved=False), TypeError),
            (items, _item("A", flagged=0), TypeError),
            (items, _item("A", label="a\0b"), ValueError),
            (items, _item("A", label="\udfff"), ValueError),
            (items, _item(_loose(1)), TypeError),
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
            BlobEntry("k", _loose("text"), {})
        blob = BlobEntry("k", b"\x00\xff", {"v": 1})
        assert (blob.data, dict(blob.attributes)) == (b"\x00\xff", {"v": 1})
        with pytest.raises(AttributeError):
            assign(AppendEntry("id", record), "id", "other")
