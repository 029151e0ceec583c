"""Unique claims: an inline table of ``(namespace, key) -> owner`` rows.

A claim is written in the same transaction as the events it accompanies, so
either both are stored or neither; a key already owned by another owner
refuses the whole append. Re-claiming a key for its own owner is a no-op.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError

from nenjim.infrastructure.store.errors import StoreError
from nenjim.infrastructure.store.versions import IDENTITY_TABLE


@dataclass(frozen=True, slots=True)
class Claim:
    """``key`` in ``namespace`` belongs to ``owner``; a second owner is refused."""

    namespace: str
    key: str
    owner: str


class ClaimConflictError(IntegrityError, StoreError):
    """A claim names a key that another owner already holds."""

    def __init__(self, claim: Claim, holder: str) -> None:
        super().__init__(
            f"{claim.namespace} {claim.key!r} is owned by {holder!r}; refused for {claim.owner!r}"
        )
        self.claim = claim
        self.holder = holder


class SqlClaims(ABC):
    """The claims and owner's identity of a log in an SQL store, written once: a recorder
    gives its placeholder and table names (:meth:`_claims_statements`), whether a table
    exists, and the cursor (fetching plain tuples) of a read or of a committed write."""

    events_table_name: str

    def _claims_statements(self, mark: str, events: str, claims: str, identity: str) -> None:
        """Spell the statements with placeholder ``mark`` and the tables as statements
        name them (``events``, ``claims``, ``identity``)."""
        self._claims_sql = {
            "claim": f"INSERT INTO {identity} VALUES ({mark}, {mark}) "
            "ON CONFLICT (component) DO NOTHING",
            "identity": f"SELECT identity FROM {identity} WHERE component = {mark}",
            "release": f"DELETE FROM {identity} WHERE component = {mark} AND identity = {mark} "
            f"AND NOT EXISTS (SELECT 1 FROM {events})",
            "replace": f"UPDATE {identity} SET identity = {mark} "
            f"WHERE component = {mark} AND identity = {mark}",
            "claims": f"SELECT key, owner FROM {claims} WHERE namespace = {mark} ORDER BY key",
            "page": f"SELECT key, owner FROM {claims} WHERE namespace = {mark} AND key > {mark} "
            f"ORDER BY key LIMIT {mark}",
            "owner": f"SELECT owner FROM {claims} WHERE namespace = {mark} AND key = {mark}",
        }

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]:
        """A cursor fetching tuples, in a transaction that writes nothing."""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]:
        """A cursor fetching tuples, in a transaction committed at the end."""

    @abstractmethod
    def _has_table(self, table: str) -> bool:
        """Whether the store holds ``table`` (beside the log's events)."""

    def claim_identity(self, identity: str) -> str:
        """Record ``identity`` unless one is recorded already; return the recorded one."""
        with self._writing() as c:
            # The primary key settles a race: the first writer's row stays.
            c.execute(self._claims_sql["claim"], (self.events_table_name, identity))
            return self._identity(c) or identity

    def recorded_identity(self) -> str | None:
        """The identity recorded for this log, or ``None`` (none yet, or an older store)."""
        if not self._has_table(IDENTITY_TABLE):
            return None
        with self._reading() as c:
            return self._identity(c)

    def release_identity(self, identity: str) -> None:
        """Forget ``identity`` as the log's owner while the log holds no event."""
        with self._writing() as c:
            c.execute(self._claims_sql["release"], (self.events_table_name, identity))

    def replace_identity(self, old: str, new: str) -> str | None:
        """Record ``new`` in place of ``old`` if ``old`` is the one recorded; return the
        recorded one afterwards."""
        with self._writing() as c:
            c.execute(self._claims_sql["replace"], (new, self.events_table_name, old))
            return self._identity(c)

    def claims(self, namespace: str) -> list[Claim]:
        """Every claim in ``namespace``, ordered by key."""
        with self._reading() as c:
            c.execute(self._claims_sql["claims"], (namespace,))
            return [Claim(namespace, key, owner) for key, owner in c.fetchall()]

    def claim_owners(self, namespace: str) -> dict[str, str]:
        """Every claim in ``namespace``: key to owner."""
        with self._reading() as c:
            c.execute(self._claims_sql["claims"], (namespace,))
            return dict(c.fetchall())

    def claim_page(self, namespace: str, after: str, limit: int) -> list[tuple[str, str]]:
        """``(key, owner)`` of the first ``limit`` claims in ``namespace`` whose key sorts
        after ``after``, ordered by key."""
        with self._reading() as c:
            c.execute(self._claims_sql["page"], (namespace, after, limit))
            return [(str(key), str(owner)) for key, owner in c.fetchall()]

    def claim_owner(self, namespace: str, key: str) -> str | None:
        """The owner of ``key`` in ``namespace``, or ``None``."""
        with self._reading() as c:
            return self._owner(c, namespace, key)

    def _owner(self, c: Any, namespace: str, key: str) -> str | None:
        c.execute(self._claims_sql["owner"], (namespace, key))
        row = c.fetchone()
        return None if row is None else str(row[0])

    def _identity(self, c: Any) -> str | None:
        c.execute(self._claims_sql["identity"], (self.events_table_name,))
        row = c.fetchone()
        return None if row is None else str(row[0])
