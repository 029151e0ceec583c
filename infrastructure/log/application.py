"""``LogApplication``: an ``eventsourcing`` Application on a store chosen by URL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import MutableOrImmutableAggregate
from eventsourcing.persistence import ApplicationRecorder, Recording
from eventsourcing.postgres import PostgresFactory
from eventsourcing.sqlite import SQLiteFactory

from infrastructure.log.claims import Claim
from infrastructure.log.popo import ClaimingPOPOApplicationRecorder
from infrastructure.log.postgres import ClaimingPostgresApplicationRecorder
from infrastructure.log.sqlite import ClaimingSQLiteApplicationRecorder
from infrastructure.log.sqlite_files import prepare_database_file
from infrastructure.log.urls import StoreLocation, resolve_store_url


class _ClaimLedger(Protocol):
    def claim_owner(self, namespace: str, key: str) -> str | None: ...

    def claims(self, namespace: str) -> list[Claim]: ...


class LogApplication(Application[UUID]):
    """An Application whose recorder keeps the unique-claims table beside the events.

    ``store`` is a store URL (see :func:`resolve_store_url`); tables are
    created on first open and the schema version is checked on every open.
    """

    def __init__(self, store: str | None = None) -> None:
        self.location: StoreLocation = resolve_store_url(store)
        if self.location.kind == "sqlite":
            prepare_database_file(
                self.location.env["SQLITE_DBNAME"], float(self.location.env["SQLITE_LOCK_TIMEOUT"])
            )
        super().__init__(env=self.location.env)

    def construct_recorder(self) -> ApplicationRecorder:
        factory = self.factory
        name = self.name.lower()
        recorder: ApplicationRecorder
        if isinstance(factory, SQLiteFactory):
            recorder = ClaimingSQLiteApplicationRecorder(factory.datastore, name=name)
        elif isinstance(factory, PostgresFactory):
            recorder = ClaimingPostgresApplicationRecorder(factory.datastore, name=name)
        else:
            return ClaimingPOPOApplicationRecorder()
        recorder.create_table()
        return recorder

    def append(
        self, aggregates: Sequence[MutableOrImmutableAggregate[UUID]], claims: Sequence[Claim] = ()
    ) -> list[Recording[UUID]]:
        """Save the aggregates' pending events and the claims in one transaction."""
        return self.save(*aggregates, claims=list(claims))

    def claim_owner(self, namespace: str, key: str) -> str | None:
        """Who holds ``key`` in ``namespace``, or ``None``."""
        return cast(_ClaimLedger, self.recorder).claim_owner(namespace, key)

    def claims(self, namespace: str) -> list[Claim]:
        """Every claim in ``namespace``, ordered by key (for audits)."""
        return cast(_ClaimLedger, self.recorder).claims(namespace)
