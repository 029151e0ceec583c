"""Field checks shared by the durable value types of Agents, Teams and Workflows.

Wrong types raise ``TypeError`` and bad values ``ValueError``. ``bool`` is
never accepted as an integer. Text fields give back an exact ``str`` (a
``StrEnum`` member becomes its value); no text holds NUL or a lone
surrogate. JSON fields hold only values that Canonical JSON v1 can write:
``str``-keyed objects, arrays, strings, safe integers (at most 2^53-1 in
magnitude), finite floats other than -0.0, booleans and ``None``, with
arrays and objects nested at most :data:`MAX_JSON_DEPTH` deep.

Each durable value declares its fields once, as dataclass fields whose
metadata names their check (``field(metadata=checked(text))``); its
``__post_init__`` (:class:`Checked`'s) calls :func:`check_fields`, which applies every
check in field order under the field's own name. Adding a field is one line, and the
codecs derive a record's payload keys and timestamps from the same fields.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

MAX_SAFE_INTEGER = 2**53 - 1
MAX_JSON_DEPTH = 100
"""The deepest nesting of arrays and objects in a JSON field (the outermost counts 1)."""

_Value = TypeVar("_Value")
_Dataclass = TypeVar("_Dataclass", bound="DataclassInstance")

Check = Callable[[Any, str], Any]
"""A field check: ``check(value, field_name)`` returns the value to store, or raises."""
_CHECK = "durable_fields.check"


def text(value: object, what: str) -> str:
    """A non-empty ``str`` that encodes as UTF-8."""
    result = optional_text(value, what)
    if result is None:
        raise TypeError(f"{what} must be a str, got None")
    if not result:
        raise ValueError(f"{what} must not be empty")
    return result


def identifier(value: object, what: str) -> str:
    """Text usable as a storage key or attribute: non-empty, without NUL."""
    return text(value, what)


def optional_text(value: object, what: str) -> str | None:
    """``None`` or a ``str`` (possibly empty) that encodes as UTF-8."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return utf8_text(value, what)


def utf8_text(value: str, what: str) -> str:
    """An exact ``str`` copy of ``value``, without NUL and valid UTF-8 (no lone surrogates)."""
    if "\0" in value:
        raise ValueError(f"{what} must not contain NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} must be valid UTF-8 (lone surrogate)") from None
    # str.__str__ copies a subclass (e.g. a StrEnum member) into an exact str.
    return str.__str__(value)


def choice(value: object, allowed: frozenset[str], what: str) -> str:
    """Text that is one of ``allowed``."""
    result = text(value, what)
    if result not in allowed:
        raise ValueError(f"{what} must be one of {sorted(allowed)}, got {result!r}")
    return result


def count(value: object, what: str) -> int:
    """An ``int`` (never a ``bool``) that is at least 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return value


def positive(value: object, what: str) -> int:
    """An ``int`` (never a ``bool``) above 0."""
    result = count(value, what)
    if result == 0:
        raise ValueError(f"{what} must be > 0, got 0")
    return result


def optional_positive(value: object, what: str) -> int | None:
    """``None`` or an ``int`` above 0."""
    return None if value is None else positive(value, what)


def flag(value: object, what: str) -> bool:
    """Exactly ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__}")
    return value


def timestamp(value: object, what: str) -> datetime:
    """An aware ``datetime``, converted to UTC."""
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got {value!r}")
    return value.astimezone(UTC)


def optional_timestamp(value: object, what: str) -> datetime | None:
    """``None`` or an aware ``datetime``, converted to UTC."""
    return None if value is None else timestamp(value, what)


def utc_now() -> datetime:
    """The current time as an aware UTC ``datetime``."""
    return datetime.now(UTC)


def tuple_of(value: object, kind: type[_Value], what: str) -> tuple[_Value, ...]:
    """A tuple copy of a list or tuple whose items are all ``kind``."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{what} must be a list or tuple, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, kind):
            raise TypeError(f"{what}[{index}] must be a {kind.__name__}, got {type(item).__name__}")
    return tuple(value)


def json_object(value: object, what: str) -> Mapping[str, Any]:
    """A deep read-only copy of a JSON object: read-only mappings and tuples all the way down."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a mapping, got {type(value).__name__}")
    result: Mapping[str, Any] = frozen_json(value, what)
    return result


def json_array(value: object, what: str) -> tuple[Any, ...]:
    """A deep read-only copy of a JSON array, as a tuple."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{what} must be a list or tuple, got {type(value).__name__}")
    result: tuple[Any, ...] = frozen_json(value, what)
    return result


def frozen_json(value: object, what: str, depth: int = 0) -> Any:
    """A deep read-only copy of a JSON value: objects become read-only mappings, arrays tuples."""
    if isinstance(value, Mapping | list | tuple):
        depth = json_depth(depth + 1, what)
    if isinstance(value, Mapping):
        members = {}
        for key, child in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{what}: object keys must be str, got {type(key).__name__}")
            name = utf8_text(key, what)
            members[name] = frozen_json(child, f"{what}.{name}", depth)
        return MappingProxyType(members)
    if isinstance(value, list | tuple):
        return tuple(
            frozen_json(child, f"{what}[{index}]", depth) for index, child in enumerate(value)
        )
    return json_scalar(value, what)


def json_depth(depth: int, what: str) -> int:
    """``depth``, unless it is past :data:`MAX_JSON_DEPTH` (``ValueError``)."""
    if depth > MAX_JSON_DEPTH:
        where = what if len(what) <= 60 else what[:60] + "..."
        raise ValueError(f"{where}: arrays and objects nest deeper than {MAX_JSON_DEPTH}")
    return depth


def json_scalar(value: object, what: str) -> str | int | float | bool | None:
    """A JSON scalar that Canonical JSON v1 can write."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"{what}: integer {value} exceeds 2^53-1; encode it as a string")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{what}: {value} is not a finite number")
        if value == 0 and math.copysign(1.0, value) < 0:
            raise ValueError(f"{what}: -0.0 has no canonical form")
        return value
    if isinstance(value, str):
        return utf8_text(value, what)
    raise TypeError(f"{what}: {type(value).__name__} is not a JSON value")


class Checked:
    """A durable value whose ``__post_init__`` applies its field checks (:func:`check_fields`)."""

    __slots__ = ()

    def __post_init__(self) -> None:
        check_fields(cast("DataclassInstance", self))


class Revised(Checked):
    """A durable value with a compare-and-swap revision (``_revision``), identity fields
    (``_fixed``) and an ``updated_at`` time, changed through :meth:`evolve`."""

    __slots__ = ()
    _revision: ClassVar[str]
    _fixed: ClassVar[frozenset[str]]

    def evolve(self, **changes: Any) -> Self:
        """A copy with ``changes``, the revision + 1 and ``updated_at`` refreshed (or as
        given); the identity fields and the revision cannot be changed."""
        value = cast("DataclassInstance", self)
        return cast(Self, evolved(value, changes, revision=self._revision, fixed=self._fixed))


def evolved(
    value: _Dataclass, changes: Mapping[str, Any], *, revision: str, fixed: frozenset[str]
) -> _Dataclass:
    """``value`` with ``changes``, ``revision`` advanced by one and ``updated_at`` refreshed.

    ``changes`` may set ``updated_at`` explicitly. Identity fields (``fixed``)
    and the revision are refused: a transition keeps the identity, and the
    revision only ever advances by one.
    """
    refused = sorted(set(changes) & (fixed | {revision}))
    if refused:
        raise ValueError(f"evolve cannot change {', '.join(refused)}")
    updates = dict(changes)
    updates[revision] = getattr(value, revision) + 1
    updates.setdefault("updated_at", utc_now())
    return dataclasses.replace(value, **updates)


# -- declared fields ------------------------------------------------------------------


def checked(check: Check) -> Mapping[str, Check]:
    """Dataclass field metadata: :func:`check_fields` applies ``check`` to the field."""
    return MappingProxyType({_CHECK: check})


def check_fields(value: DataclassInstance) -> None:
    """Apply each declared field check, in field order, and store what it returns."""
    for spec in dataclasses.fields(value):
        check: Check | None = spec.metadata.get(_CHECK)
        if check is not None:
            object.__setattr__(value, spec.name, check(getattr(value, spec.name), spec.name))


def one_of(allowed: frozenset[str]) -> Check:
    """The check of text that is one of ``allowed``."""
    return lambda value, what: choice(value, allowed, what)


def tuple_of_kind(kind: type) -> Check:
    """The check of a list or tuple whose items are all ``kind``, kept as a tuple."""
    return lambda value, what: tuple_of(value, kind, what)


def optional_json_object(value: object, what: str) -> Mapping[str, Any] | None:
    """``None`` or a deep read-only JSON object."""
    return None if value is None else json_object(value, what)


def field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    """The declared fields of a durable value type, in order."""
    return tuple(spec.name for spec in dataclasses.fields(cls))


def timestamp_fields(cls: type[DataclassInstance]) -> frozenset[str]:
    """The fields of a durable value type that hold (optional) timestamps."""
    return frozenset(
        spec.name
        for spec in dataclasses.fields(cls)
        if spec.metadata.get(_CHECK) in (timestamp, optional_timestamp)
    )
