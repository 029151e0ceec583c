"""The errors Persistence raises: each is a domain error and the storage error of its category.

The domain's hierarchy (:mod:`nenjim.domain.persistence.errors`) and the Storage
SPI's (``nenjim.infrastructure.storage``) stay apart: neither imports the other.
Persistence, which serves the one over the other, raises the classes below,
so a caller may catch a failure by either name:
``except nenjim.domain.persistence.errors.NotFoundError`` and
``except nenjim.infrastructure.storage.NotFoundError`` both catch a missing
content id, and the same holds for every category here. A failure
translated from storage keeps the storage error as ``__cause__``.

``AgentBusyError`` and ``IntegrityError`` are the domain's own and have no
storage counterpart.
"""

from __future__ import annotations

from nenjim.domain.persistence import errors as domain
from nenjim.infrastructure import storage


class ConflictError(domain.ConflictError, storage.ConflictError):
    """A revision, position or identity conflict."""


class StateConflictError(domain.StateConflictError, ConflictError):
    """A domain state conflict (a Handoff chain that names another anchor)."""


class NotFoundError(domain.NotFoundError, storage.NotFoundError):
    """The addressed state (a root, a run, content, a guard anchor) does not exist."""


class SerializationError(domain.SerializationError, storage.SerializationError):
    """A value that cannot be encoded, or stored data that does not decode."""


class TransactionError(domain.TransactionError, storage.TransactionError):
    """A transaction scope used out of order (closed, failed, other thread)."""


class BackendClosedError(domain.BackendClosedError, storage.BackendClosedError):
    """The Persistence (its storage backend) was used after ``close()``."""


class UnsupportedBackendError(domain.UnsupportedBackendError, storage.UnsupportedBackendError):
    """A backend without the required type, capabilities or resource catalog."""
