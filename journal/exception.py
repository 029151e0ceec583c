"""Public exceptions of the Journal API; all derive from :class:`JournalError`."""

from nenjim.domain.journal.errors import (
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


def __dir__() -> list[str]:
    # The API only: names imported for the definitions are attributes too, not API.
    return sorted(__all__)
