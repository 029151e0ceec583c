"""The neutral storage errors. Invalid arguments raise ``ValueError``/``TypeError`` instead."""

from __future__ import annotations

from typing import Any

from nenjim.infrastructure.store.errors import StoreError


class StorageError(StoreError):
    """Base of every Storage SPI error."""


class ConflictError(StorageError):
    """A compare-and-swap, identity or precondition conflict."""


class UniqueConstraintError(ConflictError):
    """A named unique constraint refused a row; ``resource`` and ``constraint`` say which."""

    def __init__(self, resource: str, constraint: str) -> None:
        super().__init__(f"unique constraint {resource}.{constraint} failed")
        self.resource = resource
        self.constraint = constraint


class ConditionFailedError(ConflictError):
    """A ``check()`` condition was false; ``condition`` is the very object passed in."""

    def __init__(self, condition: Any, message: str) -> None:
        super().__init__(message)
        self.condition = condition


class BlobConflictError(ConflictError):
    """``put_if_absent`` with different bytes under an existing key."""


class NotFoundError(StorageError):
    """A record, blob or guard anchor that must exist does not.

    ``resource`` and ``key`` name the missing row: the record or blob itself, or the
    anchor a guard needed (``None`` only where whoever raised it could not say).
    """

    def __init__(self, message: str, *, resource: str | None = None, key: str | None = None):
        super().__init__(message)
        self.resource = resource
        self.key = key


class SerializationError(StorageError):
    """A record envelope or stored value that cannot be encoded or decoded."""


class TransactionError(StorageError):
    """A view used out of its scope: closed, failed, or on another thread."""


class BackendClosedError(StorageError):
    """An operation on a backend after ``close()``: the backend takes no more work."""


class UnsupportedBackendError(StorageError):
    """A backend or resource set that does not satisfy the SPI."""
