"""The report of any exception that reaches the command line: its message, kind and exit code.

Known failures get their own code and message; anything else is an internal
error, still one line (see :mod:`nenjim.cli.exit`).
"""

from __future__ import annotations

from nenjim.admin.errors import (
    DraftError,
    IncompatibleStoreError,
    LogDamagedError,
    MapperDeserialisationError,
    MissingExtraError,
    PersistenceError,
    ProjectionDamagedError,
    ProjectionIntegrityError,
    RebuildLostError,
    RebuildTimeoutError,
    StoreIdentityError,
    StoreUnavailableError,
    TopicError,
    UnsupportedStoreError,
    is_read_only_error,
)
from nenjim.cli.exit import (
    EXIT_FAILURE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_STORE,
    EXIT_USAGE,
    CommandError,
    Failure,
)
from nenjim.journal.exception import JournalError, JournalIntegrityError, JournalStoreError

_STORE_FAILURES = (
    UnsupportedStoreError,
    StoreUnavailableError,
    StoreIdentityError,
    IncompatibleStoreError,
    PersistenceError,
)


def classify(error: BaseException, store: str | None) -> Failure:
    """The report of ``error``; ``store`` is the URL in use (named by raw store errors)."""
    match error:
        case KeyboardInterrupt():
            return Failure("interrupted", "interrupted", EXIT_INTERRUPTED)
        case CommandError():
            return Failure(str(error), error.kind, error.exit_code)
        case MissingExtraError():
            return Failure(str(error), "extra", EXIT_STORE)
        case DraftError():
            return Failure(str(error), "failure", EXIT_FAILURE)
        case JournalStoreError() if isinstance(error.__cause__, _STORE_FAILURES):
            # The Journal API's form of a store failure: reported as the failure itself.
            return classify(error.__cause__, store)
        case JournalStoreError():
            return Failure(str(error), "store", EXIT_STORE)
        case JournalIntegrityError() if isinstance(error.__cause__, LogDamagedError):
            # The Journal API's form of damage to the store's tables: as damage is reported.
            return Failure(str(error), "integrity", EXIT_FAILURE)
        case JournalError():
            return Failure(str(error), "journal", EXIT_FAILURE)
        case (
            ProjectionIntegrityError()
            | MapperDeserialisationError()
            | TopicError()
            | LogDamagedError()
            | ProjectionDamagedError()
        ):
            return Failure(
                f"the log in the store is inconsistent: {error} (see nenjim journal audit)",
                "integrity",
                EXIT_FAILURE,
            )
        case RebuildLostError() | RebuildTimeoutError():
            return Failure(str(error), "failure", EXIT_FAILURE)
        case UnsupportedStoreError():
            return Failure(f"argument --store: {error}", "usage", EXIT_USAGE)
        case StoreUnavailableError() | StoreIdentityError() | IncompatibleStoreError():
            return Failure(str(error), "store", EXIT_STORE)
        case _ if is_read_only_error(error):  # a write the driver refused, deep in a command
            message = f"store {store or 'memory:'} is read-only: this command must write to it"
            return Failure(message, "store", EXIT_STORE)
        case PersistenceError():
            return Failure(f"store {store or 'memory:'}: {error}", "store", EXIT_STORE)
    return Failure(
        f"internal error: {type(error).__name__}: {error} (please report this with the command)",
        "internal",
        EXIT_INTERNAL,
    )
