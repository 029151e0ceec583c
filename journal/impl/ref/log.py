"""The Journal's event log: chains as streams, digest ownership as unique claims."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from eventsourcing.persistence import Recording

from domain.journal.chain import JournalChain
from domain.journal.values import ArtifactCoordinate, Sha256Digest
from infrastructure.log import Claim, LogApplication

DIGEST_NAMESPACE = "journal-digest"


class JournalLog(LogApplication):
    """Chains of revisions, one stream per artifact, on one append-only log."""

    name = "journal"

    def digest_owner(self, digest: Sha256Digest) -> ArtifactCoordinate | None:
        """The artifact owning a revision digest, or ``None`` if no revision has it."""
        owner = self.claim_owner(DIGEST_NAMESPACE, str(digest))
        return None if owner is None else ArtifactCoordinate(owner)

    def digest_claims(self) -> dict[str, str]:
        """Every digest claim: revision digest to the artifact that owns it."""
        return {claim.key: claim.owner for claim in self.claims(DIGEST_NAMESPACE)}

    def append_chains(self, chains: Sequence[JournalChain]) -> list[Recording[UUID]]:
        """Append every pending revision and claim its digest, all in one transaction."""
        claims = [
            Claim(DIGEST_NAMESPACE, event.digest, chain.coordinate)
            for chain in chains
            for event in chain.pending_events
            if isinstance(event, JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted)
        ]
        return self.append(chains, claims)
