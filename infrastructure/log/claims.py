"""Unique claims: an inline table of ``(namespace, key) -> owner`` rows.

A claim is written in the same transaction as the events it accompanies, so
either both are stored or neither; a key already owned by another owner
refuses the whole append. Re-claiming a key for its own owner is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass

from eventsourcing.persistence import IntegrityError

from nenjim.infrastructure.store.errors import StoreError


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
