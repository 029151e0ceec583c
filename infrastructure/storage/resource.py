"""``Resource``: a declared records, streams or blobs resource, frozen on construction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from infrastructure.storage.scalars import ATTRIBUTE_TYPES, validate_key, validate_value

KINDS = ("records", "streams", "blobs")


class Resource:
    """A storage resource declaration: id, kind, attributes, indexes, unique rules, guard.

    Declarations are validated and deep-copied into read-only structures, so
    later changes to the caller's objects have no effect.
    """

    __slots__ = (
        "attributes",
        "guard",
        "id",
        "immutable_attributes",
        "indexes",
        "kind",
        "unique",
    )
    id: str
    kind: str
    attributes: Mapping[str, str]
    immutable_attributes: tuple[str, ...]
    indexes: Mapping[str, tuple[str, ...]]
    unique: tuple[Mapping[str, Any], ...]
    guard: Mapping[str, str] | None

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
    ) -> None:
        validate_key(id, "resource id")
        if kind not in KINDS:
            raise ValueError(f"resource {id}: kind must be one of {KINDS}, got {kind!r}")
        declared = _attributes(id, kind, attributes or {})
        immutable = _names(id, "immutable_attributes", immutable_attributes, declared)
        if immutable and kind != "records":
            raise ValueError(f"resource {id}: only records have immutable attributes")
        index_map = _indexes(id, kind, indexes or {}, declared)
        constraints = _unique(id, kind, unique, declared)
        guard_map = _guard(id, kind, guard, declared, immutable)
        for name, value in (
            ("id", id),
            ("kind", kind),
            ("attributes", declared),
            ("immutable_attributes", immutable),
            ("indexes", index_map),
            ("unique", constraints),
            ("guard", guard_map),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Resource is immutable")

    def __repr__(self) -> str:
        return f"Resource({self.id!r}, {self.kind!r})"

    @property
    def guard_resource(self) -> str | None:
        """The id of the anchor resource, or ``None``."""
        return None if self.guard is None else self.guard["resource"]

    @property
    def guard_via(self) -> str | None:
        """``"key"``, ``"stream"`` or the attribute naming the anchor, or ``None``."""
        return None if self.guard is None else self.guard["via"]

    @property
    def is_self_anchored(self) -> bool:
        """True for a root that anchors its own rows by key."""
        return self.guard_resource == self.id and self.guard_via == "key"

    def validate_attributes(
        self, values: Any, *, partial: bool = False
    ) -> Mapping[str, str | int | bool | None]:
        """A read-only copy of ``values``; exact key set unless ``partial``."""
        if not isinstance(values, Mapping):
            raise TypeError(f"{self.id}: attributes must be a mapping, got {type(values).__name__}")
        for name in values:
            if not isinstance(name, str):
                raise TypeError(f"{self.id}: attribute names must be str, got {name!r}")
        unknown = set(values) - set(self.attributes)
        if unknown:
            raise ValueError(f"{self.id}: unknown attributes {sorted(unknown)}")
        if not partial and set(values) != set(self.attributes):
            missing = sorted(set(self.attributes) - set(values))
            raise ValueError(f"{self.id}: missing attributes {missing}")
        result = {
            name: validate_value(self.attributes[name], value, f"{self.id}.{name}")
            for name, value in values.items()
        }
        via = self.guard_via
        if via in result and via not in ("key", "stream"):
            validate_key(result[via], f"{self.id}.{via}")
        return MappingProxyType(result)

    def index_values(self, index: Any, equals: Any) -> Mapping[str, str | int | bool | None]:
        """Validated equality values for a scan of ``index``; fields must match exactly."""
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


def _attributes(owner: str, kind: str, attributes: Any) -> Mapping[str, str]:
    if not isinstance(attributes, Mapping):
        raise TypeError(f"resource {owner}: attributes must be a mapping")
    if attributes and kind == "streams":
        raise ValueError(f"resource {owner}: streams declare no attributes")
    result = {}
    for name, kind_name in attributes.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"resource {owner}: attribute names must be non-empty str")
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
        if not isinstance(name, str) or not name:
            raise ValueError(f"resource {owner}: index names must be non-empty str")
        result[name] = _names(owner, f"index {name}", fields, declared, empty=False)
    return MappingProxyType(result)


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
        name = constraint["name"]
        if not isinstance(name, str) or not name or name in names:
            raise ValueError(f"resource {owner}: constraint names must be distinct non-empty str")
        names.add(name)
        fields = _names(owner, f"unique {name}", constraint["fields"], declared, empty=False)
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
