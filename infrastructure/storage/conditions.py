"""Guards (anchor rows to lock) and the closed set of ``check()`` conditions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from infrastructure.storage.immutable import immutable
from infrastructure.storage.resource import Resource
from infrastructure.storage.scalars import validate_key, validate_revision


@immutable
class _Unchecked:
    """The sentinel for "do not check the revision": one object, with no state to change."""

    __slots__ = ()
    _instance: _Unchecked | None = None

    def __new__(cls) -> _Unchecked:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = _Unchecked()

ResourceRef = Resource | str


def normalize_reference(value: Any) -> ResourceRef:
    """A Resource object is kept by identity; anything else must be a valid id string."""
    return value if isinstance(value, Resource) else validate_key(value, "resource")


def reference_id(value: ResourceRef) -> str:
    """The id a reference names."""
    return value.id if isinstance(value, Resource) else value


@immutable
@dataclass(frozen=True, slots=True)
class GuardRef:
    """Lock the existing anchor row ``key`` of records resource ``resource``."""

    resource: ResourceRef
    key: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource", normalize_reference(self.resource))
        validate_key(self.key)


@immutable
@dataclass(frozen=True, slots=True, eq=False)
class RevisionIs:
    """A record exists with exactly this revision."""

    resource: ResourceRef
    key: str
    expected: int
    _plan: tuple[object, Any] | None = field(default=None, init=False, repr=False, compare=False)
    """How ``View.check`` runs this condition, and the catalog it resolved in (its own)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource", normalize_reference(self.resource))
        validate_key(self.key)
        validate_revision(self.expected, "expected")


@immutable
@dataclass(frozen=True, slots=True, eq=False)
class StreamHeadIs:
    """A stream's head is exactly this position (0 when empty)."""

    resource: ResourceRef
    stream: str
    expected: int
    _plan: tuple[object, Any] | None = field(default=None, init=False, repr=False, compare=False)
    """How ``View.check`` runs this condition, and the catalog it resolved in (its own)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource", normalize_reference(self.resource))
        validate_key(self.stream, "stream")
        validate_revision(self.expected, "expected")


@immutable
@dataclass(frozen=True, slots=True, eq=False)
class NoRows:
    """An equality scan of ``index`` with ``equals`` finds nothing."""

    resource: ResourceRef
    index: str
    equals: Mapping[str, Any]
    _plan: tuple[object, Any] | None = field(default=None, init=False, repr=False, compare=False)
    """How ``View.check`` runs this condition, and the catalog it resolved in (its own)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource", normalize_reference(self.resource))
        if not isinstance(self.index, str):
            raise TypeError(f"index must be a str, got {type(self.index).__name__}")
        if not isinstance(self.equals, Mapping):
            raise TypeError(f"equals must be a mapping, got {type(self.equals).__name__}")
        object.__setattr__(self, "equals", MappingProxyType(dict(self.equals)))


Condition = RevisionIs | StreamHeadIs | NoRows
