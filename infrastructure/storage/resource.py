"""``Resource``: a declared records, streams or blobs resource, frozen on construction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.retention import Retention, checked_retention
from nenjim.infrastructure.storage.scalars import (
    ATTRIBUTE_TYPES,
    MAX_INDEXED_TEXT_BYTES,
    validate_attribute_name,
    validate_key,
    validate_name,
    validate_value,
)

KINDS = ("records", "streams", "blobs")

MAX_INDEX_WIDTH = 3 * MAX_INDEXED_TEXT_BYTES
"""The widest the fields of one index or unique constraint may be, in bytes.

A field counts its widest value as text: a string :data:`MAX_INDEXED_TEXT_BYTES`,
an integer 20, a boolean 5. With the resource id and the key (at most 512
bytes each) every index entry then fits PostgreSQL's B-tree limit.
"""

_FIELD_WIDTH = {"string": MAX_INDEXED_TEXT_BYTES, "integer": 20, "boolean": 5}


@immutable
class Resource:
    """A storage resource declaration: records, streams or blobs, with their rules.

    Declarations are validated and deep-copied into read-only structures, so
    later changes to the caller's objects have no effect. What a declaration
    accepts every backend accepts: names are any text without NUL or a lone
    surrogate, and an attribute name holds no ``"``, ``\\`` or control
    character either (JSON would write it escaped). A refused declaration is a
    ``ValueError`` or ``TypeError`` from here, never an error of a backend.
    """

    __slots__ = (
        "_labels",
        "attributes",
        "guard",
        "guard_attribute",
        "guard_resource",
        "guard_via",
        "id",
        "immutable_attributes",
        "indexed_attributes",
        "indexes",
        "is_self_anchored",
        "kind",
        "retention",
        "sparse_indexes",
        "unique",
    )
    id: str
    kind: str
    attributes: Mapping[str, str]
    immutable_attributes: tuple[str, ...]
    indexes: Mapping[str, tuple[str, ...]]
    sparse_indexes: frozenset[str]
    """The indexes that leave out the rows whose first field is null (see the
    constructor)."""
    unique: tuple[Mapping[str, Any], ...]
    guard: Mapping[str, str] | None
    indexed_attributes: frozenset[str]
    guard_resource: str | None
    """The id of the anchor resource, or ``None``."""
    guard_via: str | None
    """``"key"``, ``"stream"`` or the attribute naming the anchor, or ``None``."""
    guard_attribute: str | None
    """The attribute whose value names a record's anchor (a records guard not via its
    key), or ``None``."""
    is_self_anchored: bool
    """True for a root that anchors its own rows by key."""
    retention: Retention | None
    """What the resource keeps when retention is applied, or ``None`` (everything)."""
    _labels: Mapping[str, str]
    """Each attribute's name in errors (``<resource>.<attribute>``), made once: every write
    validates its attributes."""

    def __init__(
        self,
        id: str,
        kind: str,
        *,
        attributes: Mapping[str, str] | None = None,
        immutable_attributes: Sequence[str] = (),
        indexes: Mapping[str, Sequence[str]] | None = None,
        unique: Sequence[Mapping[str, Any]] = (),
        guard: Mapping[str, str] | None = None,
        retention: Retention | None = None,
        sparse_indexes: Sequence[str] = (),
    ) -> None:
        """Declare a resource; ``ValueError`` or ``TypeError`` for a declaration no backend
        takes.

        ``sparse_indexes`` names indexes whose first field is nullable and
        mostly null: such an index holds only the rows where that field is not
        null, so a write of a null there touches no index page. A scan of it
        with that field ``None`` answers the same rows, in the same order, from
        the resource's rows (every one is read) instead of from the index.
        """
        validate_key(id, "resource id")
        if kind not in KINDS:
            raise ValueError(f"resource {id}: kind must be one of {KINDS}, got {kind!r}")
        declared = _attributes(id, kind, attributes or {})
        immutable = _names(id, "immutable_attributes", immutable_attributes, declared)
        if immutable and kind != "records":
            raise ValueError(f"resource {id}: only records have immutable attributes")
        index_map = _indexes(id, kind, indexes or {}, declared)
        sparse = _sparse(id, sparse_indexes, index_map, declared)
        constraints = _unique(id, kind, unique, declared)
        guard_map = _guard(id, kind, guard, declared, immutable)
        indexed = frozenset(
            [name for fields in index_map.values() for name in fields]
            + [name for c in constraints for name in (*c["fields"], *c["where"])]
        )
        # What every guarded write asks of its guard, answered once.
        anchor = None if guard_map is None else guard_map["resource"]
        via = None if guard_map is None else guard_map["via"]
        for name, value in (
            ("guard_resource", anchor),
            ("guard_via", via),
            ("guard_attribute", via if kind == "records" and via not in (None, "key") else None),
            ("is_self_anchored", anchor == id and via == "key"),
            ("id", id),
            ("kind", kind),
            ("attributes", declared),
            ("immutable_attributes", immutable),
            ("indexes", index_map),
            ("sparse_indexes", sparse),
            ("unique", constraints),
            ("guard", guard_map),
            ("retention", checked_retention(id, kind, retention)),
            ("indexed_attributes", indexed),
            ("_labels", MappingProxyType({name: f"{id}.{name}" for name in declared})),
        ):
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"Resource({self.id!r}, {self.kind!r})"

    def retained(self, retention: Retention | None) -> Resource:
        """This declaration with ``retention`` as its policy (checked as the constructor
        checks it)."""
        return Resource(
            self.id,
            self.kind,
            attributes=self.attributes,
            immutable_attributes=self.immutable_attributes,
            indexes=self.indexes,
            unique=self.unique,
            guard=self.guard,
            retention=retention,
            sparse_indexes=tuple(self.sparse_indexes),
        )

    def validate_attributes(
        self, values: Any, *, partial: bool = False
    ) -> Mapping[str, str | int | bool | None]:
        """A read-only copy of ``values``; exact key set unless ``partial``, and then in the
        declared order, whatever the caller's: a row's attributes are stored as one text,
        the same for the same values."""
        if values.__class__ is not dict and not isinstance(values, Mapping):
            raise TypeError(f"{self.id}: attributes must be a mapping, got {type(values).__name__}")
        if not partial and values.__class__ is dict:
            # The usual write names plain values, the same again and again (a thread's rows,
            # a blob's type): checked once, the read-only result shared. Keyed by each
            # value's class too, so a True is never taken for a 1.
            shape = []
            for name, value in values.items():
                if value.__class__ not in _PLAIN:
                    break
                shape.append((name, value.__class__, value))
            else:
                return _attributes_of(self, tuple(shape))
        return self._validate_attributes(values, partial)

    def _validate_attributes(
        self, values: Any, partial: bool
    ) -> Mapping[str, str | int | bool | None]:
        declared, labels, indexed = self.attributes, self._labels, self.indexed_attributes
        # The usual write names exactly the declared attributes, all str: one test.
        if partial or values.keys() != declared.keys():
            for name in values:
                if not isinstance(name, str):
                    raise TypeError(f"{self.id}: attribute names must be str, got {name!r}")
            unknown = set(values).difference(declared)
            if unknown:
                raise ValueError(f"{self.id}: unknown attributes {sorted(unknown)}")
            if not partial:
                missing = sorted(set(declared).difference(values))
                raise ValueError(f"{self.id}: missing attributes {missing}")
        result = {
            name: validate_value(declared[name], values[name], labels[name])
            for name in (values if partial else declared)
        }
        for name, value in result.items():
            # An ASCII text is as many bytes of UTF-8 as it has characters: no encoding.
            if (
                isinstance(value, str)
                and name in indexed
                and not (value.isascii() and len(value) <= MAX_INDEXED_TEXT_BYTES)
            ):
                size = len(value.encode("utf-8"))
                if size > MAX_INDEXED_TEXT_BYTES:
                    raise ValueError(
                        f"{self.id}.{name} is indexed and takes {size} bytes of UTF-8; "
                        f"the limit is {MAX_INDEXED_TEXT_BYTES}"
                    )
        via = self.guard_attribute
        if via is not None and via in result:
            validate_key(result[via], f"{self.id}.{via}")
        return MappingProxyType(result)

    def index_values(self, index: Any, equals: Any) -> Mapping[str, str | int | bool | None]:
        """Validated equality values for a scan of ``index``; fields must match exactly."""
        # The usual scan names plain values: the same ones (a thread's, a checkpoint's) are
        # checked once, the read-only result shared. Keyed by each value's class too, so a
        # True is never taken for a 1 (nor an int subclass for an int).
        if equals.__class__ is dict and index.__class__ is str:
            shape = []
            for name, value in equals.items():
                if value.__class__ not in _PLAIN:
                    break
                shape.append((name, value.__class__, value))
            else:
                return _index_values(self, index, tuple(shape))
        return self._index_values(index, equals)

    def scan_values(self, index: Any, equals: Any) -> Mapping[str, str | int | bool | None]:
        """:meth:`index_values` of a scan, which may also take every row of the resource:
        ``index`` ``None`` with no ``equals`` (the rows in key order need no index)."""
        if index is None:
            if not isinstance(equals, Mapping):
                raise TypeError(f"{self.id}: equals must be a mapping")
            if equals:
                raise ValueError(
                    f"{self.id}: a scan of every row (index None) takes no equals, got "
                    f"{sorted(map(str, equals))}"
                )
            return _NO_VALUES
        return self.index_values(index, equals)

    def _index_values(self, index: Any, equals: Any) -> Mapping[str, str | int | bool | None]:
        if not isinstance(index, str):
            raise TypeError(f"{self.id}: index name must be a str, got {type(index).__name__}")
        if index not in self.indexes:
            raise ValueError(f"{self.id}: unknown index {index!r}")
        values = self.validate_attributes(equals, partial=True)
        if set(values) != set(self.indexes[index]):
            raise ValueError(
                f"{self.id}: index {index} needs exactly {list(self.indexes[index])}, "
                f"got {sorted(values)}"
            )
        return values


_PLAIN = frozenset({str, int, bool, type(None)})
_NO_VALUES: Mapping[str, str | int | bool | None] = MappingProxyType({})


@lru_cache(maxsize=4096)
def _index_values(
    resource: Resource, index: str, shape: tuple[tuple[str, type, Any], ...]
) -> Mapping[str, str | int | bool | None]:
    """:meth:`Resource.index_values` of plain values, checked once per resource, index and
    values (a refusal is not kept: it raises every time)."""
    return resource._index_values(index, {name: value for name, _, value in shape})


@lru_cache(maxsize=4096)
def _attributes_of(
    resource: Resource, shape: tuple[tuple[str, type, Any], ...]
) -> Mapping[str, str | int | bool | None]:
    """:meth:`Resource.validate_attributes` of plain values, checked once per resource and
    values (a refusal is not kept: it raises every time)."""
    return resource._validate_attributes({name: value for name, _, value in shape}, False)


def _attributes(owner: str, kind: str, attributes: Any) -> Mapping[str, str]:
    if not isinstance(attributes, Mapping):
        raise TypeError(f"resource {owner}: attributes must be a mapping")
    if attributes and kind == "streams":
        raise ValueError(f"resource {owner}: streams declare no attributes")
    result = {}
    for name, kind_name in attributes.items():
        validate_attribute_name(name, f"resource {owner}: attribute name")
        if kind_name not in ATTRIBUTE_TYPES:
            raise ValueError(f"resource {owner}: unknown attribute type {kind_name!r}")
        result[name] = kind_name
    return MappingProxyType(result)


def _names(
    owner: str, what: str, names: Any, declared: Mapping[str, str], *, empty: bool = True
) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"resource {owner}: {what} must be a sequence of attribute names")
    result = tuple(names)
    if not empty and not result:
        raise ValueError(f"resource {owner}: {what} must not be empty")
    if len(set(result)) != len(result):
        raise ValueError(f"resource {owner}: {what} repeats a name")
    for name in result:
        if not isinstance(name, str) or name not in declared:
            raise ValueError(f"resource {owner}: {what} names undeclared attribute {name!r}")
    return result


def _indexes(
    owner: str, kind: str, indexes: Any, declared: Mapping[str, str]
) -> Mapping[str, tuple[str, ...]]:
    if not isinstance(indexes, Mapping):
        raise TypeError(f"resource {owner}: indexes must be a mapping")
    if indexes and kind != "records":
        raise ValueError(f"resource {owner}: only records have indexes")
    result = {}
    for name, fields in indexes.items():
        validate_name(name, f"resource {owner}: index name")
        result[name] = _names(owner, f"index {name}", fields, declared, empty=False)
        _check_width(owner, f"index {name}", result[name], declared)
    return MappingProxyType(result)


def _sparse(
    owner: str, names: Any, indexes: Mapping[str, tuple[str, ...]], declared: Mapping[str, str]
) -> frozenset[str]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"resource {owner}: sparse_indexes must be a sequence of index names")
    result = tuple(names)
    if len(set(result)) != len(result):
        raise ValueError(f"resource {owner}: sparse_indexes repeats a name")
    for name in result:
        if not isinstance(name, str) or name not in indexes:
            raise ValueError(f"resource {owner}: sparse_indexes names undeclared index {name!r}")
        first = indexes[name][0]
        if not declared[first].startswith("nullable_"):
            raise ValueError(
                f"resource {owner}: sparse index {name} starts with {first}, which is never "
                "null: a sparse index leaves out the rows whose first field is null"
            )
    return frozenset(result)


def _check_width(
    owner: str, what: str, fields: tuple[str, ...], declared: Mapping[str, str]
) -> None:
    width = sum(_FIELD_WIDTH[declared[name].removeprefix("nullable_")] for name in fields)
    if width > MAX_INDEX_WIDTH:
        raise ValueError(
            f"resource {owner}: {what} may take {width} bytes at its widest; the limit is "
            f"{MAX_INDEX_WIDTH} (a string counts {MAX_INDEXED_TEXT_BYTES}, an integer 20, "
            "a boolean 5)"
        )


def _unique(
    owner: str, kind: str, unique: Any, declared: Mapping[str, str]
) -> tuple[Mapping[str, Any], ...]:
    if isinstance(unique, Mapping) or not isinstance(unique, Sequence):
        raise TypeError(f"resource {owner}: unique must be a sequence of constraints")
    if unique and kind != "records":
        raise ValueError(f"resource {owner}: only records have unique constraints")
    constraints = []
    names = set()
    for constraint in unique:
        if not isinstance(constraint, Mapping) or set(constraint) != {"name", "fields", "where"}:
            raise ValueError(
                f"resource {owner}: a unique constraint is a mapping with exactly "
                "name, fields and where"
            )
        name = validate_name(constraint["name"], f"resource {owner}: constraint name")
        if name in names:
            raise ValueError(f"resource {owner}: constraint name {name!r} is declared twice")
        names.add(name)
        fields = _names(owner, f"unique {name}", constraint["fields"], declared, empty=False)
        _check_width(owner, f"unique {name}", fields, declared)
        where = constraint["where"]
        if not isinstance(where, Mapping):
            raise ValueError(f"resource {owner}: unique {name}: where must be a mapping")
        where_values = {}
        for field_name, value in where.items():
            if not isinstance(field_name, str) or field_name not in declared:
                raise ValueError(f"resource {owner}: unique {name}: where names {field_name!r}")
            where_values[field_name] = validate_value(
                declared[field_name], value, f"{owner}.{field_name}"
            )
        constraints.append(
            MappingProxyType(
                {"name": name, "fields": fields, "where": MappingProxyType(where_values)}
            )
        )
    return tuple(constraints)


def _guard(
    owner: str,
    kind: str,
    guard: Any,
    declared: Mapping[str, str],
    immutable: tuple[str, ...],
) -> Mapping[str, str] | None:
    if guard is None:
        return None
    if not isinstance(guard, Mapping) or set(guard) != {"resource", "via"}:
        raise ValueError(f"resource {owner}: guard is a mapping with exactly resource and via")
    anchor, via = guard["resource"], guard["via"]
    if not isinstance(anchor, str) or not isinstance(via, str):
        raise ValueError(f"resource {owner}: guard resource and via must be str")
    validate_key(anchor, "guard resource")
    validate_name(via, f"resource {owner}: guard via")
    if kind == "blobs":
        raise ValueError(f"resource {owner}: blobs cannot have a guard")
    if kind == "streams" and via != "stream":
        raise ValueError(f"resource {owner}: a stream guard goes via 'stream'")
    if kind == "records" and via != "key":
        if declared.get(via) != "string":
            raise ValueError(
                f"resource {owner}: guard via {via!r} must be 'key' or a string attribute"
            )
        if via not in immutable:
            raise ValueError(f"resource {owner}: guard attribute {via!r} must be immutable")
    return MappingProxyType({"resource": anchor, "via": via})
