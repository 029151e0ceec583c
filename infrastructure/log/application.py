"""``LogApplication``: an ``eventsourcing`` Application on a store chosen by URL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import MutableOrImmutableAggregate
from eventsourcing.persistence import ApplicationRecorder, Recording

from infrastructure.log.claims import Claim
from infrastructure.log.popo import ClaimingPOPOApplicationRecorder

MEMORY_URL = "memory:"


class UnsupportedStoreError(ValueError):
    """A store URL names a scheme this build cannot open."""


class _ClaimLedger(Protocol):
    def claim_owner(self, namespace: str, key: str) -> str | None: ...


def store_env(url: str | None) -> dict[str, str]:
    """The ``eventsourcing`` environment for a store URL (``None`` or ``memory:``: in memory)."""
    if url is None or url == MEMORY_URL:
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    raise UnsupportedStoreError(f"unsupported store URL {url!r}: expected {MEMORY_URL!r}")


class LogApplication(Application[UUID]):
    """An Application whose recorder keeps the unique-claims table beside the events."""

    def __init__(self, store: str | None = None) -> None:
        self.store_url = store or MEMORY_URL
        super().__init__(env=store_env(store))

    def construct_recorder(self) -> ApplicationRecorder:
        return ClaimingPOPOApplicationRecorder()

    def append(
        self, aggregates: Sequence[MutableOrImmutableAggregate[UUID]], claims: Sequence[Claim] = ()
    ) -> list[Recording[UUID]]:
        """Save the aggregates' pending events and the claims in one transaction."""
        return self.save(*aggregates, claims=list(claims))

    def claim_owner(self, namespace: str, key: str) -> str | None:
        """Who holds ``key`` in ``namespace``, or ``None``."""
        return cast(_ClaimLedger, self.recorder).claim_owner(namespace, key)
