"""The append-only log: ``eventsourcing`` recorders plus inline tables written
in the same transaction as the events, opened by URL."""

from infrastructure.log.application import LogApplication, UnsupportedStoreError
from infrastructure.log.claims import Claim, ClaimConflictError

__all__ = ["Claim", "ClaimConflictError", "LogApplication", "UnsupportedStoreError"]
