"""Domain persistence errors: a hierarchy separate from the storage errors.

Repositories translate storage errors into these, keeping the storage error as
``__cause__``; unknown errors pass through unchanged. An implementation may
raise subclasses that are its storage layer's errors as well:
``nenjim.infrastructure.persistence`` does, so its callers may catch either name.
"""

from __future__ import annotations


class PersistenceError(Exception):
    """Base of the domain persistence errors."""


class ConflictError(PersistenceError):
    """A revision, position or identity conflict."""


class StateConflictError(ConflictError):
    """A domain state conflict found by domain code (e.g. a Handoff anchor mismatch)."""


class NotFoundError(PersistenceError):
    """The addressed state does not exist."""


class SerializationError(PersistenceError):
    """A value that cannot be encoded, or stored data that does not decode."""


class TransactionError(PersistenceError):
    """A transaction scope used out of order (closed, failed, other thread)."""


class BackendClosedError(PersistenceError):
    """The Persistence (its storage backend) was used after ``close()``."""


class UnsupportedBackendError(PersistenceError):
    """A backend without the required capabilities or resource catalog."""


class AgentBusyError(Exception):
    """An owner already has an active execution (admission refused).

    Deliberately not a :class:`PersistenceError`: the error boundary passes
    it through unchanged.
    """


class IntegrityError(Exception):
    """Stored content does not match its content id."""
