"""Agent and Team executions: admission through the ``one_active_owner`` constraint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nenjim.domain.persistence import repositories as domain
from nenjim.domain.persistence.errors import AgentBusyError
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
from nenjim.infrastructure.persistence.repositories.roots import decoded_or_none

_E = TypeVar("_E")

ONE_ACTIVE_OWNER = "one_active_owner"
DEFAULT_LIMIT = 100


@dataclass(frozen=True, slots=True)
class ExecutionCodec(Generic[_E]):
    """How one kind of execution is keyed, owned, versioned and encoded."""

    resource: storage.Resource
    owner_resource: storage.Resource
    kind: str
    id_of: Callable[[_E], str]
    owner_of: Callable[[_E], str]
    revision_of: Callable[[_E], int]
    is_active: Callable[[_E], bool]
    encode: Callable[[_E], storage.DurableRecord]
    decode: Callable[[Any], _E]
    # Team runs may never be reactivated: a save of an active state requires
    # the stored row to be active.
    active_requires_active: bool = False


class ExecutionRepository(domain.ExecutionRepository[_E]):
    """Executions of one owner kind; at most one active per owner."""

    def __init__(self, view: storage.View, codec: ExecutionCodec[_E]) -> None:
        self._view = view
        self._records = view.records(codec.resource)
        self._codec = codec

    def _attributes(self, execution: _E) -> dict[str, Any]:
        codec = self._codec
        return {"owner": codec.owner_of(execution), "active": codec.is_active(execution)}

    def _is_admission(self, error: storage.UniqueConstraintError) -> bool:
        return error.resource == self._codec.resource.id and error.constraint == ONE_ACTIVE_OWNER

    @at_boundary
    def create_active(self, execution: _E) -> _E:
        """Admit a new active execution at revision 0.

        Another active one for the owner is ``AgentBusyError``; a run at another
        revision is a ``ConflictError``, before anything is written.
        """
        codec = self._codec
        record = codec.encode(execution)  # refuses anything but an execution
        execution_id = arguments.key(codec.id_of(execution), f"{codec.kind} id")
        if not codec.is_active(execution):
            raise SerializationError(f"{codec.kind} {execution_id} is not active")
        revision = codec.revision_of(execution)
        if revision != 0:
            raise ConflictError(
                f"{codec.kind} {execution_id}: a new run starts at revision 0, not {revision}"
            )
        attributes = arguments.attributes(codec.resource, self._attributes(execution))

        def write(_: storage.View) -> _E:
            entry = self._records.insert(
                key=execution_id, revision=revision, attributes=attributes, record=record
            )
            return codec.decode(
                written_row(
                    entry,
                    codec.kind,
                    key=execution_id,
                    revision=revision,
                    attributes=attributes,
                    record=record,
                )
            )

        try:
            return self._view.atomic(write)
        except storage.UniqueConstraintError as error:
            if self._is_admission(error):
                raise AgentBusyError(str(error)) from error
            raise

    @at_boundary
    def load(self, execution_id: str) -> _E:
        """The stored execution; ``NotFoundError`` if there is none."""
        arguments.key(execution_id, f"{self._codec.kind} id")
        execution = self._view.atomic(
            lambda _: decoded_or_none(self._records.read(execution_id), self._codec.decode)
        )
        if execution is None:
            raise NotFoundError(f"{self._codec.kind} not found: {execution_id}")
        return execution

    @at_boundary
    def save(self, execution_id: str, *, expected_revision: int, execution: _E) -> _E:
        """CAS to the next revision; reactivating beside an active run → ``AgentBusyError``."""
        codec = self._codec
        arguments.key(execution_id, f"{codec.kind} id")
        arguments.next_revision(expected_revision, "expected_revision")
        record = codec.encode(execution)  # refuses anything but an execution
        revision = codec.revision_of(execution)
        if revision != expected_revision + 1:
            raise ConflictError(
                f"{codec.kind} {execution_id}: revision {revision} must be "
                f"expected_revision + 1 ({expected_revision + 1})"
            )
        if codec.id_of(execution) != execution_id:
            raise SerializationError(
                f"{codec.kind} id {codec.id_of(execution)!r} does not match {execution_id!r}"
            )
        stored = self._records.read(execution_id)
        if stored is not None and stored.attributes["owner"] != codec.owner_of(execution):
            raise SerializationError(
                f"{codec.kind} {execution_id} belongs to {stored.attributes['owner']!r}, "
                f"not {codec.owner_of(execution)!r}"
            )
        active = codec.is_active(execution)
        expected = {"active": True} if codec.active_requires_active and active else {}
        attributes = arguments.attributes(codec.resource, self._attributes(execution))

        def write(_: storage.View) -> _E:
            entry = self._records.replace(
                key=execution_id,
                expected_revision=expected_revision,
                next_revision=revision,
                attributes=attributes,
                record=record,
                expected_attributes=expected,
            )
            return codec.decode(
                written_row(
                    entry,
                    codec.kind,
                    key=execution_id,
                    revision=revision,
                    attributes=attributes,
                    record=record,
                )
            )

        try:
            return self._view.atomic(write)
        except storage.UniqueConstraintError as error:
            if self._is_admission(error):
                raise AgentBusyError(str(error)) from error
            raise

    @at_boundary
    def list_active(self, owner_id: str) -> tuple[_E, ...]:
        """The owner's active executions (at most one)."""
        equals = self._owner_values(owner_id, active=True)
        return self._view.atomic(
            lambda _: tuple(
                self._codec.decode(row)
                for row in self._records.scan(index="owner_active", equals=equals)
            )
        )

    @at_boundary
    def list(
        self, owner_id: str, *, after: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> tuple[_E, ...]:
        """Active and terminal executions by ascending id bytes, after an exclusive cursor."""
        equals = self._owner_values(owner_id)
        arguments.optional_key(after, "after")
        arguments.page_limit(limit)
        return self._view.atomic(
            lambda _: tuple(
                self._codec.decode(row)
                for row in self._records.scan(
                    index="owner", equals=equals, after=after, limit=limit
                )
            )
        )

    @at_boundary
    def delete(self, execution_id: str) -> None:
        """Delete and purge without a revision check; the owner's root must still exist.

        Every revision of the execution is erased from the log too.
        """
        arguments.key(execution_id, f"{self._codec.kind} id")
        self._records.purge(key=execution_id)

    @at_boundary
    def delete_for_owner(self, owner_id: str) -> None:
        """Delete and purge every execution of the owner; the owner's root must exist."""
        self._records.purge_matching(index="owner", equals=self._owner_values(owner_id))

    @at_boundary
    def assert_idle(self, owner_id: str) -> bool:
        """True if the owner has no active execution, holding the owner's anchor lock."""
        condition = storage.NoRows(
            self._codec.resource, "owner_active", self._owner_values(owner_id, active=True)
        )
        try:
            return self._view.check(
                guards=[storage.GuardRef(self._codec.owner_resource, owner_id)],
                conditions=[condition],
            )
        except storage.ConditionFailedError as error:
            if error.condition is condition:
                raise AgentBusyError(str(error)) from error
            raise

    @at_boundary
    def history(self, execution_id: str) -> tuple[Revision[_E], ...]:
        """Every revision stored and not purged, oldest first, with the time the log recorded it."""
        arguments.key(execution_id, f"{self._codec.kind} id")
        return self._view.atomic(
            lambda _: tuple(
                Revision(entry.revision, self._codec.decode(entry), entry.recorded_at)
                for entry in self._records.history(execution_id)
            )
        )

    def _owner_values(self, owner_id: str, **more: bool) -> dict[str, Any]:
        arguments.key(owner_id, "owner id")
        return {"owner": owner_id, **more}
