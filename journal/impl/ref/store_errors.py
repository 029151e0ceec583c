"""Store failures as the public API reports them: ``nenjim.journal.exception.JournalStoreError``.

The log reports a store it cannot use with its own errors (and the
``eventsourcing`` recorders with theirs); a caller of the public API gets one
Journal error type for all of them, carrying the same message, the
original as its ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from eventsourcing.persistence import PersistenceError

from nenjim.domain.journal.errors import JournalStoreError
from nenjim.infrastructure.log import (
    IncompatibleStoreError,
    StoreIdentityError,
    StoreUnavailableError,
    UnsupportedStoreError,
)

STORE_FAILURES = (
    StoreUnavailableError,
    StoreIdentityError,
    IncompatibleStoreError,
    UnsupportedStoreError,
    PersistenceError,
)


@contextmanager
def store_errors(where: str) -> Iterator[None]:
    """Raise every store failure inside as a ``JournalStoreError``; ``where`` names the store
    for a driver's error, whose message does not."""
    try:
        yield
    except STORE_FAILURES as error:
        message = f"{where}: {error}" if isinstance(error, PersistenceError) else str(error)
        raise JournalStoreError(message) from error
