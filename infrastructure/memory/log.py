"""The in-memory recorder with the claims table, under the recorder's own lock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent
from eventsourcing.popo import POPOApplicationRecorder, POPOFactory

from nenjim.infrastructure.log.claims import Claim, ClaimConflictError
from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.log.commits import StoredBatch
from nenjim.infrastructure.log.tiles import Tiling, new_entries
from nenjim.infrastructure.memory.tiles import MemoryTiles
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.urls import StoreLocation


def prepare_log(location: StoreLocation, env: dict[str, str], create: bool) -> bool:
    """A log in memory starts empty: one not to be created has nothing to read."""
    if not create:
        raise StoreUnavailableError(f"{location.where} is empty: there is no log to read")
    return False


class ClaimingMemoryFactory(POPOFactory):
    """``eventsourcing``'s in-memory factory, making the claiming recorder."""

    def claiming_recorder(
        self, name: str, tiling: Tiling | None = None
    ) -> ClaimingMemoryApplicationRecorder:
        """A new in-memory recorder (``name`` only matters to the SQL recorders)."""
        return ClaimingMemoryApplicationRecorder(tiling)


class ClaimingMemoryApplicationRecorder(ClosableRecorder, POPOApplicationRecorder):
    """``POPOApplicationRecorder`` that also records :class:`Claim` rows atomically."""

    def __init__(self, tiling: Tiling | None = None) -> None:
        super().__init__()
        self._claims: dict[tuple[str, str], str] = {}
        self._identity: str | None = None
        self.tiles = (
            None
            if tiling is None
            else MemoryTiles(tiling, self._database_lock, lambda: self._stored_events)
        )

    def _assert_uniqueness(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> None:
        super()._assert_uniqueness(stored_events, **kwargs)
        batch: dict[tuple[str, str], str] = {}
        for claim in kwargs.get("claims", ()):
            slot = (claim.namespace, claim.key)
            holder = batch.get(slot, self._claims.get(slot))
            if holder is not None and holder != claim.owner:
                raise ClaimConflictError(claim, holder)
            batch[slot] = claim.owner

    def _update_table(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        first = len(self._stored_events) + 1
        ids = list(range(first, first + len(stored_events)))
        if self.tiles is None:
            ids = list(super()._update_table(stored_events, **kwargs) or ())
        else:
            with self.tiles.committed_edge.transaction():
                staged = self.tiles.prepare(ids, new_entries(ids, kwargs))
                ids = list(super()._update_table(stored_events, **kwargs) or ())
                staged.apply()
        claims: Sequence[Claim] = kwargs.get("claims", ())
        for claim in claims:
            self._claims[(claim.namespace, claim.key)] = claim.owner
        return ids

    def insert_batches(self, batches: Iterable[StoredBatch]) -> list[int]:
        """Insert every batch in one step, once all are taken; the notification ids.

        Memory holds the stored events anyway, so the batches are gathered and
        inserted together: a failure anywhere leaves the log as it was.
        """
        with self.while_open():
            stored_events: list[StoredEvent] = []
            claims: list[Claim] = []
            entries: list[bytes | None] = []
            for batch_events, kwargs in batches:
                stored_events.extend(batch_events)
                claims.extend(kwargs.get("claims", ()))
                entries.extend(kwargs.get("entries", ()))
            return list(self.insert_events(stored_events, claims=claims, entries=entries) or ())

    def claims(self, namespace: str) -> list[Claim]:
        """Every claim in ``namespace``, ordered by key."""
        with self._database_lock:
            return sorted(
                (
                    Claim(ns, key, owner)
                    for (ns, key), owner in self._claims.items()
                    if ns == namespace
                ),
                key=lambda c: c.key,
            )

    def claim_owners(self, namespace: str) -> dict[str, str]:
        """Every claim in ``namespace``: key to owner."""
        with self._database_lock:
            return {key: owner for (ns, key), owner in self._claims.items() if ns == namespace}

    def claim_page(self, namespace: str, after: str, limit: int) -> list[tuple[str, str]]:
        """``(key, owner)`` of the first ``limit`` claims in ``namespace`` whose key sorts
        after ``after``, ordered by key."""
        with self._database_lock:
            found = [(k, o) for (ns, k), o in self._claims.items() if ns == namespace and k > after]
        return sorted(found)[:limit]

    def claim_owner(self, namespace: str, key: str) -> str | None:
        """The owner of ``key`` in ``namespace``, or ``None``."""
        with self._database_lock:
            return self._claims.get((namespace, key))

    def claim_identity(self, identity: str) -> str:
        """Record ``identity`` unless one is recorded already; return the recorded one."""
        with self._database_lock:
            if self._identity is None:
                self._identity = identity
            return self._identity

    def recorded_identity(self) -> str | None:
        """The identity recorded for this log, or ``None``."""
        with self._database_lock:
            return self._identity

    def release_identity(self, identity: str) -> None:
        """Forget ``identity`` as the log's owner while the log holds no event."""
        with self._database_lock:
            if self._identity == identity and not self._stored_events:
                self._identity = None

    def replace_identity(self, old: str, new: str) -> str | None:
        """Record ``new`` in place of ``old`` if ``old`` is the one recorded; return the
        recorded one afterwards."""
        with self._database_lock:
            if self._identity == old:
                self._identity = new
            return self._identity
