"""``Persistence``: the domain's durable state over a Storage SPI backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, TypeVar

from nenjim.domain.persistence import repositories as domain
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments, catalog
from nenjim.infrastructure.persistence.boundary import at_boundary, storage_boundary
from nenjim.infrastructure.persistence.compatibility import checked_backend
from nenjim.infrastructure.persistence.errors import (
    NotFoundError,
    SerializationError,
    StateConflictError,
)
from nenjim.infrastructure.persistence.repository_set import Repositories
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.store.urls import MEMORY_URL

_T = TypeVar("_T")

# The three capabilities the domain facade reports; every supported backend has all three.
CAPABILITIES: Mapping[str, bool] = MappingProxyType(
    {"atomic_all": True, "atomic_admission": True, "optimistic_revision": True}
)


class Persistence(Repositories, domain.DurableState):
    """The eight repositories, transactions across them, and read-only result queries."""

    def __init__(self, backend: storage.Backend) -> None:
        """Serve over ``backend``, checked whole first (``UnsupportedBackendError`` naming
        what is wrong, ``BackendClosedError`` once closed)."""
        with storage_boundary():
            self.backend = checked_backend(backend)
            super().__init__(self.backend.view)

    @classmethod
    def in_memory(cls) -> Persistence:
        """Persistence over a fresh in-memory backend."""
        return cls.open(MEMORY_URL)

    @classmethod
    def open(cls, url: str) -> Persistence:
        """Persistence over the backend a store URL names (``memory:``, ``sqlite:``, ...)."""
        with storage_boundary():
            return cls(open_backend(url, catalog.CATALOG))

    @property
    def capabilities(self) -> Mapping[str, bool]:
        """The domain-level capability flags."""
        return CAPABILITIES

    def close(self) -> None:
        """Release the backend's connections."""
        self.backend.close()

    @contextmanager
    def transaction(self) -> Iterator[Repositories]:
        """All eight repositories in one transaction; nested calls are savepoints."""
        with storage_boundary(), self.backend.transaction() as view:
            yield Repositories(view)

    def run_in_transaction(self, function: Callable[[Repositories], _T]) -> _T:
        """``function(tx)`` in one transaction; returns its value."""
        if not callable(function):
            raise TypeError(f"function must be callable, got {type(function).__name__}")
        with self.transaction() as tx:
            return function(tx)

    # read-only result queries
    @at_boundary
    def execution_result(self, execution_id: str) -> Mapping[str, Any]:
        """Status and outcome of an Agent execution; ``result`` is text, ``error`` JSON."""
        execution = self.executions.load(execution_id)
        result_ref = _stored_ref(f"execution {execution_id}", "result_ref", execution.result_ref)
        error_ref = _stored_ref(f"execution {execution_id}", "error_ref", execution.error_ref)
        return _result(
            {"execution_id": execution.execution_id, "agent_id": execution.agent_id},
            execution,
            None if result_ref is None else self.contents.fetch_text(result_ref),
            None if error_ref is None else self.contents.fetch_json(error_ref),
        )

    def list_executions(
        self, agent_id: str, *, after: str | None = None, limit: int = 100
    ) -> tuple[Any, ...]:
        """The Agent's executions by id, active and terminal."""
        return self.executions.list(agent_id, after=after, limit=limit)

    @at_boundary
    def team_execution_result(self, team_execution_id: str) -> Mapping[str, Any]:
        """Status and outcome of a Team run; ``result`` and ``error`` are JSON."""
        run = self.team_executions.load(team_execution_id)
        result_ref = _stored_ref(
            f"Team execution {team_execution_id}", "result_ref", run.result_ref
        )
        error_ref = _stored_ref(f"Team execution {team_execution_id}", "error_ref", run.error_ref)
        return _result(
            {"team_execution_id": run.team_execution_id, "team_id": run.team_id},
            run,
            None if result_ref is None else self.contents.fetch_json(result_ref),
            None if error_ref is None else self.contents.fetch_json(error_ref),
        )

    def list_team_executions(
        self, team_id: str, *, after: str | None = None, limit: int = 100
    ) -> tuple[Any, ...]:
        """The Team's runs by id, active and terminal."""
        return self.team_executions.list(team_id, after=after, limit=limit)

    @at_boundary
    def handoff_result(
        self, execution_id: str, *, main_agent_id: str | None = None
    ) -> Mapping[str, Any]:
        """The outcome at the end of a chain of handed-off executions.

        An execution hands off by naming its target in
        ``metadata["handoff_target_execution_id"]`` (and its anchor in
        ``metadata["main_agent_id"]``); the chain is followed only from a
        source that is no longer active (a live run has not handed off yet,
        so its own result is the answer). A target not stored yet is reported
        as reserved and pending, or cancelled when the source says
        ``metadata["handoff_reservation"] == "cancelled"``. Metadata that
        names a target or an anchor with anything but an id is a
        ``SerializationError``.
        """
        arguments.key(execution_id, "execution_id")
        arguments.optional_key(main_agent_id, "main_agent_id")
        current = self.executions.load(execution_id)
        visited = {execution_id}
        while True:
            anchor = _metadata_id(current, "main_agent_id")
            if main_agent_id is not None and anchor is not None and anchor != main_agent_id:
                raise StateConflictError(
                    f"execution {current.execution_id} belongs to the handoff of {anchor}, "
                    f"not {main_agent_id}"
                )
            target = _metadata_id(current, "handoff_target_execution_id")
            if target is None or current.is_active:
                return self.execution_result(current.execution_id)
            if target in visited:
                raise SerializationError(f"handoff chain loops back to {target}")
            visited.add(target)
            try:
                current = self.executions.load(target)
            except NotFoundError:
                cancelled = current.metadata.get("handoff_reservation") == "cancelled"
                return MappingProxyType(
                    {
                        "execution_id": target,
                        "agent_id": None,
                        "status": "cancelled" if cancelled else "active",
                        "phase": "cancelled" if cancelled else "target_pending",
                        "reserved": True,
                        "result_ref": None,
                        "error_ref": None,
                        "result": None,
                        "error": None,
                    }
                )


def _stored_ref(owner: str, name: str, value: str | None) -> str | None:
    """A stored content ref, or ``None``; anything but a content id is a ``SerializationError``."""
    if value is None:
        return None
    try:
        return arguments.content_id(value)
    except ValueError as error:
        raise SerializationError(f"{owner}: stored {name} {value!r} is not a content id") from error


def _metadata_id(execution: Any, name: str) -> str | None:
    """An execution id or Agent id an execution's metadata names, or ``None``."""
    value = execution.metadata.get(name)
    if value is None:
        return None
    try:
        return arguments.key(value, name)
    except (TypeError, ValueError) as error:
        raise SerializationError(
            f"execution {execution.execution_id}: metadata {name} is not an id: {error}"
        ) from error


def _result(ids: dict[str, Any], run: Any, result: Any, error: Any) -> Mapping[str, Any]:
    return MappingProxyType(
        {
            **ids,
            "status": run.status,
            "phase": run.phase,
            "result_ref": run.result_ref,
            "error_ref": run.error_ref,
            "result": result,
            "error": error,
        }
    )
