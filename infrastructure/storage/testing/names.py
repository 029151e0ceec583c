"""Names in declarations: one rule for every backend, applied when a resource is declared.

A resource id, index name or constraint name is any text without NUL or a
lone surrogate (a resource id at most 512 bytes of UTF-8, as every key). An
attribute name is such text without ``"``, ``\\`` or a control character
(U+0000 to U+001F), so that it is written in the stored JSON as itself. A
declaration that breaks the rule is a ``ValueError`` from ``Resource(...)``,
before any backend sees it; every declaration it accepts, every backend
accepts, and every name works wherever a name goes: indexed, constrained,
immutable, expected, a guard's attribute, a constraint's ``where``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    ConditionFailedError,
    ConflictError,
    GuardRef,
    NoRows,
    NotFoundError,
    Resource,
    RevisionIs,
    StreamHeadIs,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.testing.resources import opaque_record
from nenjim.infrastructure.storage.testing.support import BackendFactory, StorageContract

ODD_ATTRIBUTE_NAMES = (
    "owner-id",
    "ö",
    "a b",
    "a.b",
    "a[0]",
    "$.x",
    "*",
    "#1",
    "it's",
    "?",
    "?1",
    "%s",
    "%",
    "{x}",
    "}{",
    "名前🙂",
    "\u2028",
    "\x7f",
    "e\u0301",
    "key",
    "stream",
    "resource",
    "Owner-ID",
    "1st",
    " ",
    "n" * 300,
)
"""Attribute names that are not SQL identifiers, each one the rule accepts."""

REFUSED_ATTRIBUTE_NAMES = ('a"b', '"', "a\\b", "\\", "a\nb", "\t", "\x1f", "\x01", "\r")
"""Attribute names the rule refuses: each would be written escaped in the stored JSON."""

ANCHORS_ID = "odd anchors: it's {ö} ?1 %s"
ROWS_ID = 'odd rows/"quoted" \\ {x} ?%s'
JOURNAL_ID = "odd journal ✓ {?}"
BLOBS_ID = "odd blobs % \\"

OWNER = "owner-id"
ACTIVE = "is active?"
COUNT = "count {n}"
NOTE = "it's a note %s"
NOTE_VALUE = "it's {?} %s \\ \" ö"
"""A string in a constraint's ``where``: quotes, braces, placeholders and backslashes."""

BY_OWNER = "by owner-id ö"
BY_OWNER_ACTIVE = "by owner & active {}"
ONE_ACTIVE = "one active per owner-id {?}"
ONE_COUNT = 'count "where" note %s'


def _odd_resources() -> tuple[Resource, Resource, Resource, Resource]:
    anchors = Resource(ANCHORS_ID, "records", guard={"resource": ANCHORS_ID, "via": "key"})
    rows = Resource(
        ROWS_ID,
        "records",
        attributes={OWNER: "string", ACTIVE: "boolean", COUNT: "nullable_integer", NOTE: "string"},
        immutable_attributes=(OWNER,),
        indexes={BY_OWNER: (OWNER,), BY_OWNER_ACTIVE: (OWNER, ACTIVE)},
        unique=(
            {"name": ONE_ACTIVE, "fields": (OWNER,), "where": {ACTIVE: True}},
            {"name": ONE_COUNT, "fields": (COUNT,), "where": {NOTE: NOTE_VALUE}},
        ),
        guard={"resource": ANCHORS_ID, "via": OWNER},
    )
    journal = Resource(JOURNAL_ID, "streams", guard={"resource": ANCHORS_ID, "via": "stream"})
    blobs = Resource(BLOBS_ID, "blobs", attributes={"size-bytes ö": "integer"})
    return anchors, rows, journal, blobs


def _every_name_resource() -> Resource:
    """Every odd attribute name, each indexed on its own and unique where ``flag`` holds;
    index and constraint names that differ only in punctuation."""
    attributes = dict.fromkeys(ODD_ATTRIBUTE_NAMES, "string")
    return Resource(
        "every odd name",
        "records",
        attributes={**attributes, "flag": "boolean"},
        immutable_attributes=ODD_ATTRIBUTE_NAMES,
        indexes={f"i {name}": (name,) for name in ODD_ATTRIBUTE_NAMES}
        | {"a-b": ("a b",), "a_b": ("a b",)},
        unique=tuple(
            {"name": f"u {name}", "fields": (name,), "where": {"flag": True}}
            for name in ODD_ATTRIBUTE_NAMES
        ),
    )


def _values(resource: Resource, row: int, *, flag: bool) -> dict[str, Any]:
    return {
        **{name: f"{row} {name}" for name in resource.attributes if name != "flag"},
        "flag": flag,
    }


class StorageNamesContract(StorageContract):
    """Declarations: the same accepted and refused on every backend, at declaration time."""

    @pytest.mark.parametrize("name", REFUSED_ATTRIBUTE_NAMES, ids=repr)
    def test_an_attribute_name_written_escaped_in_json_is_refused_when_declared(
        self, name: str
    ) -> None:
        with pytest.raises(ValueError, match=r"."):
            Resource("x", "records", attributes={name: "string"})
        with pytest.raises(ValueError, match=r"."):
            Resource("x", "blobs", attributes={name: "integer"})

    def test_odd_names_work_wherever_a_name_goes(self, make_backend: BackendFactory) -> None:
        anchors, rows, journal, blobs = _odd_resources()
        backend = make_backend([anchors, rows, journal, blobs])
        record = opaque_record()
        backend.view.records(anchors).insert(key="o-1", revision=0, attributes={}, record=record)
        records = backend.view.records(rows)

        def row(active: bool, count: int | None, note: str = NOTE_VALUE) -> Mapping[str, Any]:
            return {OWNER: "o-1", ACTIVE: active, COUNT: count, NOTE: note}

        records.insert(key="r1", revision=0, attributes=row(True, 1), record=record)
        with pytest.raises(UniqueConstraintError) as active:
            records.insert(key="r2", revision=0, attributes=row(True, 2), record=record)
        assert (active.value.resource, active.value.constraint) == (ROWS_ID, ONE_ACTIVE)
        with pytest.raises(UniqueConstraintError) as counted:
            records.insert(key="r2", revision=0, attributes=row(False, 1), record=record)
        assert (counted.value.resource, counted.value.constraint) == (ROWS_ID, ONE_COUNT)
        records.insert(key="r2", revision=0, attributes=row(False, 1, "other"), record=record)
        records.insert(key="r3", revision=0, attributes=row(False, None), record=record)
        with pytest.raises(NotFoundError) as missing:
            records.insert(
                key="r4", revision=0, attributes={**row(False, 4), OWNER: "o-2"}, record=record
            )
        assert (missing.value.resource, missing.value.key) == (ANCHORS_ID, "o-2")

        assert [e.key for e in records.scan(index=BY_OWNER, equals={OWNER: "o-1"})] == [
            "r1",
            "r2",
            "r3",
        ]
        idle = {OWNER: "o-1", ACTIVE: False}
        assert [e.key for e in records.scan(index=BY_OWNER_ACTIVE, equals=idle)] == ["r2", "r3"]

        # Immutable and expected attributes are compared under their odd names.
        with pytest.raises(ConflictError):
            records.replace(
                key="r3",
                expected_revision=0,
                next_revision=1,
                attributes=row(False, None),
                record=record,
                expected_attributes={NOTE: "other"},
            )
        with pytest.raises(ConflictError):
            records.replace(
                key="r3",
                expected_revision=0,
                next_revision=1,
                attributes={**row(False, None), OWNER: "o-2"},
                record=record,
            )
        records.replace(
            key="r3",
            expected_revision=0,
            next_revision=1,
            attributes=row(False, 3),
            record=record,
            expected_attributes={NOTE: NOTE_VALUE, COUNT: None},
        )

        guards = [GuardRef(anchors, "o-1")]
        busy = NoRows(rows, BY_OWNER_ACTIVE, {OWNER: "o-1", ACTIVE: True})
        with pytest.raises(ConditionFailedError):
            backend.view.check(guards=guards, conditions=[busy])
        records.delete_matching(index=BY_OWNER_ACTIVE, equals=idle)
        assert [e.key for e in records.scan(index=BY_OWNER, equals={OWNER: "o-1"})] == ["r1"]
        assert backend.view.check(
            guards=guards,
            conditions=[NoRows(rows, BY_OWNER_ACTIVE, idle), RevisionIs(anchors, "o-1", 0)],
        )

        streams = backend.view.streams(journal)
        streams.append(stream="o-1", expected_head=0, entries=[AppendEntry("e", record)])
        assert backend.view.check(guards=guards, conditions=[StreamHeadIs(journal, "o-1", 1)])
        stored = backend.view.blobs(blobs).put_if_absent(
            key="b", data=b"x", attributes={"size-bytes ö": 1}
        )
        assert dict(stored.attributes) == {"size-bytes ö": 1}

    def test_every_odd_attribute_name_is_indexed_constrained_and_compared(
        self, make_backend: BackendFactory
    ) -> None:
        resource = _every_name_resource()
        backend = make_backend([resource])
        records = backend.view.records(resource)
        record = opaque_record()
        for number in (1, 2):
            values = _values(resource, number, flag=True)
            records.insert(key=f"r{number}", revision=0, attributes=values, record=record)
        for name in ODD_ATTRIBUTE_NAMES:
            found = records.scan(index=f"i {name}", equals={name: f"2 {name}"})
            assert [entry.key for entry in found] == ["r2"], name
            assert dict(found[0].attributes) == _values(resource, 2, flag=True)
            clash = {**_values(resource, 3, flag=True), name: f"1 {name}"}
            with pytest.raises(UniqueConstraintError) as unique:
                records.insert(key="r3", revision=0, attributes=clash, record=record)
            assert unique.value.constraint == f"u {name}", name
            changed = {**_values(resource, 2, flag=True), name: "changed"}
            with pytest.raises(ConflictError):  # every name is immutable
                records.replace(
                    key="r2",
                    expected_revision=0,
                    next_revision=1,
                    attributes=changed,
                    record=record,
                )
        for index in ("a-b", "a_b"):
            assert [e.key for e in records.scan(index=index, equals={"a b": "1 a b"})] == ["r1"]
