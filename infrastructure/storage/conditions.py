"""Guards (anchor rows to lock) and the closed set of ``check()`` conditions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.scalars import validate_key, validate_revision


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


@immutable
@dataclass(frozen=True, slots=True)
class GuardRef:
    """Lock the existing anchor row ``key`` of records resource ``resource``."""

    resource: ResourceRef
    key: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource", normalize_reference(self.resource))
        validate_key(self.key)


def no_rows_guard_problem(resource: Resource, equals: Mapping[str, Any]) -> str | None:
    """Why no guard can keep a ``NoRows`` on ``resource`` true, or ``None`` if one can.

    Each row of a resource guarded via its key (a root included) is guarded by
    the anchor its own key names, so no lock covers a row not yet written; a
    resource guarded through an attribute is covered by the anchor ``equals``
    names through it, so ``equals`` must give it.
    """
    guard = resource.guard
    if guard is None:
        return None
    via = resource.guard_attribute
    if via is None:
        return (
            f"NoRows on {resource.id} cannot be guarded: each of its rows is guarded by the "
            f"{guard['resource']} row its own key names, so no guard keeps rows not yet "
            "written out of the scan (scan for them, or check on a resource guarded through "
            "an attribute)"
        )
    if via not in equals:
        return (
            f"NoRows on {resource.id} must give the guard attribute {via!r} in equals: it "
            f"names the {guard['resource']} row to lock"
        )
    return None


@immutable
@dataclass(frozen=True, slots=True, eq=False)
class RevisionIs:
    """A record exists with exactly this revision.

    On a guarded resource ``check()`` needs the record's anchor among its
    guards: the key's own on a resource guarded via its key; on one guarded
    through an attribute, the anchor the stored row names (a row naming an
    anchor the check does not lock fails the condition).
    """

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
    """An equality scan of ``index`` with ``equals`` finds nothing.

    Built with a records ``Resource`` object, the index, ``equals`` and the
    guard are checked at once (a ``ValueError``): a resource guarded via its key
    cannot be scanned under a guard, and one guarded through an attribute needs
    that attribute in ``equals``. Built with an id, ``check()`` does the same.
    """

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
        resource = self.resource
        if isinstance(resource, Resource) and resource.kind == "records":
            resource.index_values(self.index, self.equals)
            problem = no_rows_guard_problem(resource, self.equals)
            if problem is not None:
                raise ValueError(problem)


Condition = RevisionIs | StreamHeadIs | NoRows
