"""Resource declarations: what a backend accepts, refuses and resolves.

An invalid declaration is refused with an argument error (``TypeError`` or
``ValueError``: either is reasonable for a declaration).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    Backend,
    ConditionFailedError,
    GuardRef,
    NoRows,
    NotFoundError,
    Resource,
    RevisionIs,
    StreamHeadIs,
    UniqueConstraintError,
    UnsupportedBackendError,
)
from nenjim.infrastructure.storage.testing.inputs import (
    BAD_KEYS,
    BAD_REVISIONS,
    inventory_item,
    loose,
)
from nenjim.infrastructure.storage.testing.resources import (
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
from nenjim.infrastructure.storage.testing.support import (
    INVALID_ARGUMENT,
    OWNER_ROOT_REVISION,
    BackendFactory,
    StorageContract,
    assign,
    set_item,
)


def _invalid_declarations() -> dict[str, Callable[[], Resource]]:
    """Each builds an invalid declaration, rejected with an argument error."""
    owner = {"owner": "string"}
    return {
        "unknown kind": lambda: Resource("x", "tables"),
        "kind not a str": lambda: Resource("x", loose(1)),
        "unknown type": lambda: Resource("x", "records", attributes={"a": "float"}),
        "attribute name not a str": lambda: Resource(
            "x", "records", attributes=loose({1: "string"})
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
            "x", "records", attributes=owner, unique=(loose(lambda row: True),)
        ),
        "a lambda as via": lambda: Resource(
            "x", "records", guard={"resource": ROOTS_ID, "via": loose(lambda row: row)}
        ),
        "sparse index not declared": lambda: Resource(
            "x", "records", attributes={"run": "nullable_string"}, sparse_indexes=("run",)
        ),
        "sparse index on a field never null": lambda: Resource(
            "x", "records", attributes=owner, indexes={"i": ("owner",)}, sparse_indexes=("i",)
        ),
        "sparse_indexes a str": lambda: Resource(
            "x",
            "records",
            attributes={"run": "nullable_string"},
            indexes={"i": ("run",)},
            sparse_indexes=loose("i"),
        ),
        "sparse_indexes repeats a name": lambda: Resource(
            "x",
            "records",
            attributes={"run": "nullable_string"},
            indexes={"i": ("run",)},
            sparse_indexes=("i", "i"),
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
        "id not a str": lambda: Resource(loose(1), "records"),
    }


INVALID_DECLARATIONS = _invalid_declarations()

SECOND_OWNER = "owner-2"


class StorageDeclarationContract(StorageContract):
    """Resource declarations, resolution of resources by a backend and its views."""

    # An independent resource (no guard) with nullable typed attributes.
    def test_independent_resource_with_nullable_typed_attributes(self, backend: Backend) -> None:
        items = backend.view.records(INVENTORY_ITEMS)
        first = items.insert(
            key="item-1", revision=0, attributes=inventory_item(None), record=opaque_record()
        )
        items.insert(
            key="item-2", revision=0, attributes=inventory_item(None), record=opaque_record()
        )
        typed = inventory_item("A-1", quantity=0, reserved=-5, available=False, flagged=True)
        items.insert(key="item-3", revision=0, attributes=typed, record=opaque_record())
        assert dict(first.attributes) == inventory_item(None)

        # Typed attributes round-trip with their Python types.
        stored = items.fetch("item-3").attributes
        assert dict(stored) == typed
        assert type(stored["quantity"]) is int
        assert type(stored["reserved"]) is int
        assert stored["available"] is False
        assert stored["flagged"] is True
        assert items.fetch("item-1").attributes["code"] is None

        with pytest.raises(UniqueConstraintError) as unique:
            items.insert(
                key="item-4", revision=0, attributes=inventory_item("A-1"), record=opaque_record()
            )
        assert unique.value.resource == INVENTORY_ITEMS_ID
        assert unique.value.constraint == "unique_code"
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
                attributes=inventory_item("A-1"),
                record=opaque_record(),
            )
        assert items.fetch("item-1").revision == 0

        items.delete_matching(index="code", equals={"code": None})
        assert items.read("item-1") is None
        assert items.read("item-2") is None
        assert items.fetch("item-3").attributes["quantity"] == 7

    def test_a_sparse_index_answers_every_scan_as_a_full_one(
        self, make_backend: BackendFactory
    ) -> None:
        """A sparse index leaves the rows whose first field is null out of the index, not out
        of any answer: scans, key scans, selections, deletes, purges and ``NoRows`` for the
        null find them in key order, as they find the rows with a value."""
        resource = Resource(
            "sparse.runs",
            "records",
            attributes={"run": "nullable_string", "step": "nullable_integer"},
            indexes={"run": ("run",), "run_step": ("run", "step")},
            sparse_indexes=("run", "run_step"),
        )
        assert resource.sparse_indexes == {"run", "run_step"}
        backend = make_backend((resource,))
        rows = backend.view.records(resource)
        runs = {"a": None, "b": "r1", "c": None, "d": "r2", "e": "r1", "f": None}
        for key, run in runs.items():
            rows.insert(
                key=key, revision=0, attributes={"run": run, "step": 1}, record=opaque_record()
            )

        def keys(run: str | None, **paging: Any) -> tuple[str, ...]:
            return tuple(e.key for e in rows.scan(index="run", equals={"run": run}, **paging))

        assert keys(None) == ("a", "c", "f")
        assert keys("r1") == ("b", "e")
        assert keys(None, after="a", limit=1) == ("c",)
        assert rows.scan_keys(index="run", equals={"run": None}) == ("a", "c", "f")
        pairs = rows.scan(index="run_step", equals={"run": None, "step": 1})
        assert tuple(e.key for e in pairs) == ("a", "c", "f")
        selected = rows.select(index="run", equals={"run": None}, offset=1, limit=5)
        assert tuple(e.key for e in selected) == ("c", "f")
        with pytest.raises(ConditionFailedError):
            backend.view.check(guards=[], conditions=[NoRows(resource, "run", {"run": None})])
        assert backend.view.check(guards=[], conditions=[NoRows(resource, "run", {"run": "r3"})])

        # A row moving into and out of the index is found where it now is.
        rows.replace(
            key="a",
            expected_revision=0,
            next_revision=1,
            attributes={"run": "r3", "step": 1},
            record=opaque_record(),
        )
        rows.replace(
            key="b",
            expected_revision=0,
            next_revision=1,
            attributes={"run": None, "step": 1},
            record=opaque_record(),
        )
        assert keys(None) == ("b", "c", "f")
        assert keys("r3") == ("a",)
        assert keys("r1") == ("e",)

        purged = rows.purge_matching(index="run", equals={"run": None})
        assert sorted(purge.key for purge in purged) == ["b", "c", "f"]
        assert tuple(e.key for e in rows.scan(index=None, equals={})) == ("a", "d", "e")
        assert backend.view.check(guards=[], conditions=[NoRows(resource, "run", {"run": None})])
        rows.delete_matching(index="run", equals={"run": "r1"})
        assert tuple(e.key for e in rows.scan(index=None, equals={})) == ("a", "d")

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
