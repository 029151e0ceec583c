"""Public exceptions of the Journal API; all derive from :class:`JournalError`."""

from domain.journal.errors import (
    ChainViolation,
    InvalidValueError,
    JournalChainError,
    JournalConflictError,
    JournalError,
    JournalFormatError,
    JournalIntegrityError,
    JournalLayoutError,
    JournalRootError,
    JournalStoreError,
    JournalValidationError,
    LifecycleError,
)

__all__ = [
    "ChainViolation",
    "InvalidValueError",
    "JournalChainError",
    "JournalConflictError",
    "JournalError",
    "JournalFormatError",
    "JournalIntegrityError",
    "JournalLayoutError",
    "JournalRootError",
    "JournalStoreError",
    "JournalValidationError",
    "LifecycleError",
]
