"""Agent and Team roots: records keyed by id, revision = the root's own revision."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nenjim.domain.persistence import repositories as domain
from nenjim.domain.persistence.repositories import Revision
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.boundary import at_boundary
from nenjim.infrastructure.persistence.codec_support import written_row
from nenjim.infrastructure.persistence.errors import (
    ConflictError,
    NotFoundError,
    SerializationError,
)

_R = TypeVar("_R")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RootCodec(Generic[_R]):
    """How one kind of root is keyed, versioned and encoded."""

    resource: storage.Resource
    kind: str
    id_of: Callable[[_R], str]
    revision_of: Callable[[_R], int]
    encode: Callable[[_R], storage.DurableRecord]
    decode: Callable[[Any], _R]


class RootRepository(domain.RootRepository[_R]):
    """``create``/``load``/``save``/``delete``/``history`` of Agent or Team roots."""

    def __init__(self, view: storage.View, codec: RootCodec[_R]) -> None:
        self._view = view
        self._records = view.records(codec.resource)
        self._codec = codec

    @at_boundary
    def create(self, root: _R) -> _R:
        """Insert a new root at revision 0; a duplicate id is a ``ConflictError``.

        A root at another revision continues a history this store does not
        have: ``ConflictError``, before anything is written.
        """
        codec = self._codec
        record = codec.encode(root)  # refuses anything but a root (SerializationError)
        root_id = arguments.key(codec.id_of(root), f"{codec.kind} id")
        revision = codec.revision_of(root)
        if revision != 0:
            raise ConflictError(
                f"{codec.kind} {root_id}: a new root starts at revision 0, not {revision}"
            )

        def write(_: storage.View) -> _R:
            entry = self._records.insert(
                key=root_id, revision=revision, attributes={}, record=record
            )
            return codec.decode(
                written_row(
                    entry, codec.kind, key=root_id, revision=revision, attributes={}, record=record
                )
            )

        return self._view.atomic(write)

    @at_boundary
    def load(self, root_id: str) -> _R:
        """The stored root; ``NotFoundError`` if there is none."""
        arguments.key(root_id, f"{self._codec.kind} id")
        root = self._view.atomic(
            lambda _: decoded_or_none(self._records.read(root_id), self._codec.decode)
        )
        if root is None:
            raise NotFoundError(f"{self._codec.kind} not found: {root_id}")
        return root

    @at_boundary
    def save(self, root_id: str, *, expected_revision: int, root: _R) -> _R:
        """Replace ``expected_revision`` with ``root``, whose revision must be the next one."""
        codec = self._codec
        arguments.key(root_id, f"{codec.kind} id")
        arguments.next_revision(expected_revision, "expected_revision")
        record = codec.encode(root)  # refuses anything but a root (SerializationError)
        revision = codec.revision_of(root)
        if revision != expected_revision + 1:
            raise ConflictError(
                f"{codec.kind} {root_id}: revision {revision} must be "
                f"expected_revision + 1 ({expected_revision + 1})"
            )
        if codec.id_of(root) != root_id:
            raise SerializationError(
                f"{codec.kind} id {codec.id_of(root)!r} does not match {root_id!r}"
            )

        def write(_: storage.View) -> _R:
            entry = self._records.replace(
                key=root_id,
                expected_revision=expected_revision,
                next_revision=revision,
                attributes={},
                record=record,
            )
            return codec.decode(
                written_row(
                    entry, codec.kind, key=root_id, revision=revision, attributes={}, record=record
                )
            )

        return self._view.atomic(write)

    @at_boundary
    def delete(self, root_id: str) -> None:
        """Delete and purge without a revision check (idempotent); children are not cascaded.

        Every revision of the root is erased from the log too: ``history`` is
        empty afterwards.
        """
        arguments.key(root_id, f"{self._codec.kind} id")
        self._records.purge(key=root_id)

    @at_boundary
    def history(self, root_id: str) -> tuple[Revision[_R], ...]:
        """Every revision stored and not purged, oldest first, with the time the log recorded it."""
        arguments.key(root_id, f"{self._codec.kind} id")
        return self._view.atomic(
            lambda _: tuple(
                Revision(entry.revision, self._codec.decode(entry), entry.recorded_at)
                for entry in self._records.history(root_id)
            )
        )


def decoded_or_none(entry: storage.RecordEntry | None, decode: Callable[[Any], _T]) -> _T | None:
    """``decode(entry)``, or ``None`` for a missing row (a missing row is no failure)."""
    return None if entry is None else decode(entry)
