"""Why a store could not be used: unavailable, or holding another owner's log."""

from __future__ import annotations


class StoreUnavailableError(RuntimeError):
    """The store cannot be opened or used as asked.

    It does not exist (and was to be read, not created), cannot be reached
    (the message carries the driver's reason: refused, unknown database,
    authentication), cannot be written (read-only file system, missing
    directory, permissions), or its driver is not installed.
    """


class StoreIdentityError(RuntimeError):
    """The log in the store belongs to another owner than the one opening it."""

    def __init__(self, where: str, recorded: str, wanted: str) -> None:
        super().__init__(f"{where} belongs to {recorded!r}, not {wanted!r}")
        self.where = where
        self.recorded = recorded
        self.wanted = wanted


class LogClosedError(StoreUnavailableError):
    """A read or write of a log after its ``close()``: the log takes no more work."""


class RebuildLostError(RuntimeError):
    """A projection rebuild lost to another rebuild of the same projection.

    The other one started later and swapped its generation in first (or dropped
    the one this rebuild was filling); the served generation is that one, whole.
    """


class ProjectionDamagedError(RuntimeError):
    """A persisted projection that was edited behind the engine's back: its tracking row
    holds a value of the wrong type, its table is missing, or its table holds rows past
    its tracked position. Rebuilding the projection replaces it."""


class LogDamagedError(RuntimeError):
    """The log's own tables were edited behind the engine's back so that they cannot be
    read as a log: a table of the log is missing beside the others, its schema version row
    is gone, or a stored event's columns hold what no event can (a NULL, another type)."""
