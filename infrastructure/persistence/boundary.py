"""The error boundary: storage errors become Persistence errors.

Each known storage category is re-raised as the class of
:mod:`nenjim.infrastructure.persistence.errors` for it (a domain error that is
still the storage category) with the same message and the storage error as
``__cause__``. Anything else — driver and I/O errors, ``AgentBusyError``,
errors already translated by an inner boundary, application exceptions —
passes through by identity, because its outcome is not known to be a
conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

from nenjim.domain.persistence.errors import PersistenceError
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import errors

_P = ParamSpec("_P")
_T = TypeVar("_T")

# Most specific first: the storage conflict family all map to ConflictError.
_TRANSLATIONS: tuple[tuple[type[storage.StorageError], type[PersistenceError]], ...] = (
    (storage.ConflictError, errors.ConflictError),
    (storage.NotFoundError, errors.NotFoundError),
    (storage.SerializationError, errors.SerializationError),
    (storage.TransactionError, errors.TransactionError),
    (storage.BackendClosedError, errors.BackendClosedError),
    (storage.UnsupportedBackendError, errors.UnsupportedBackendError),
)


def translated(error: BaseException) -> BaseException:
    """The Persistence error for a storage error, or ``error`` itself."""
    if isinstance(error, PersistenceError):
        return error  # already ours: it is a storage error too, and must keep its identity
    for source, target in _TRANSLATIONS:
        if isinstance(error, source):
            domain_error = target(str(error))
            domain_error.__cause__ = error
            domain_error.__traceback__ = error.__traceback__
            return domain_error
    return error


@contextmanager
def storage_boundary() -> Iterator[None]:
    """Translate storage errors raised inside the block."""
    try:
        yield
    except storage.StorageError as error:
        ours = translated(error)
        if ours is error:
            raise
        raise ours from error


def at_boundary(function: Callable[_P, _T]) -> Callable[_P, _T]:
    """Decorate a repository entry point with :func:`storage_boundary`."""

    @wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with storage_boundary():
            return function(*args, **kwargs)

    return wrapper
