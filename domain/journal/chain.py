"""The per-artifact chain: one event-sourced aggregate (one stream) per coordinate.

Accepting a revision is an event on the artifact's stream; the stream's
version is the expected head, so two writers deciding on the same head
cannot both append. The chain and history rules live here.

Stored names. The log keeps each event under a topic, and a topic made of a
module path would break every store the day a class moves. So the aggregate
and its events carry fixed names (``TOPIC``, ``nenjim.journal:...``): they
are names, not import paths, and are written whatever module the classes
live in. Logs written before the names were fixed hold the module paths of
the day (``domain.journal.chain:JournalChain.GenesisAccepted``); those are
registered as aliases (:data:`LEGACY_TOPICS`) and stay readable for good.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from eventsourcing.domain import Aggregate
from eventsourcing.domain import Snapshot as AggregateSnapshot
from eventsourcing.utils import get_topic, register_topic

from nenjim.domain.journal.document import JournalDocument, JournalRevision
from nenjim.domain.journal.errors import (
    ChainViolation,
    JournalChainError,
    JournalConflictError,
)
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.values import ArtifactCoordinate, Sha256Digest

CHAIN_NAMESPACE = uuid.UUID("6f1c2f7e-6a4b-5f0e-9a55-1d3c9a0c7e21")

DigestOwners = Callable[[Sha256Digest], ArtifactCoordinate | None]
"""Looks up which artifact a revision digest belongs to (``None``: unknown)."""


def chain_id(coordinate: ArtifactCoordinate | str) -> uuid.UUID:
    """The stable stream id of an artifact's chain."""
    return _chain_id(str(coordinate))


@functools.lru_cache(maxsize=4096)
def _chain_id(coordinate: str) -> uuid.UUID:
    # Cached: every ingest and every fold of an event asks for its artifact's id.
    return uuid.uuid5(CHAIN_NAMESPACE, coordinate)


class _StampedInUTC:
    """Events stamped in UTC: the library takes its time zone from the environment
    (``TZINFO_TOPIC``), and what a store holds must not depend on it."""

    @staticmethod
    def create_timestamp() -> datetime:
        """Now, in UTC."""
        return datetime.now(UTC)


class JournalChain(Aggregate):
    """One artifact's linear chain of accepted revisions."""

    TOPIC = "nenjim.journal:JournalChain"

    class Created(_StampedInUTC, Aggregate.Created):
        """Unused (a chain starts with :class:`GenesisAccepted`); named as the library requires."""

        TOPIC = "nenjim.journal:JournalChain.Created"

    class Snapshot(_StampedInUTC, AggregateSnapshot):
        """A chain restored from a projection (see :meth:`restore`); never stored."""

        TOPIC = "nenjim.journal:JournalChain.Snapshot"

    class GenesisAccepted(_StampedInUTC, Aggregate.Created):
        """The first revision of an artifact was accepted."""

        TOPIC = "nenjim.journal:JournalChain.GenesisAccepted"

        coordinate: str
        journal_version: str
        digest: str
        text: str

    class SuccessorAccepted(_StampedInUTC, Aggregate.Event):
        """A revision was accepted as the new head."""

        TOPIC = "nenjim.journal:JournalChain.SuccessorAccepted"

        coordinate: str
        journal_version: str
        digest: str
        predecessor: str
        text: str

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, JournalChain)
            aggregate._advance(self.journal_version, self.digest, self.text)

    def __init__(self, coordinate: str, journal_version: str, digest: str, text: str) -> None:
        self.coordinate = coordinate
        self._digest_by_version: dict[str, str] = {}
        self._version_by_digest: dict[str, str] = {}
        self._advance(journal_version, digest, text)

    @classmethod
    def start(cls, revision: JournalRevision) -> JournalChain:
        """A new chain from its genesis revision (the caller checked it is one)."""
        chain = cls._create(
            cls.GenesisAccepted,
            id=chain_id(revision.coordinate),
            coordinate=str(revision.coordinate),
            journal_version=str(revision.version),
            digest=str(revision.digest),
            text=revision.text,
        )
        chain._head_document = revision.document
        return chain

    @classmethod
    def restore(cls, head: JournalRevision, accepted: Sequence[tuple[str, str]]) -> JournalChain:
        """The chain whose ``accepted`` (version, digest) pairs end at ``head``, without replay.

        Built as an ``eventsourcing`` aggregate snapshot from what a
        projection already holds; appending to it still targets the next
        stream version, so a stale restore loses the append race safely.
        """
        state = {
            "_created_on": None,
            "_modified_on": None,
            "coordinate": str(head.coordinate),
            "_digest_by_version": dict(accepted),
            "_version_by_digest": {digest: version for version, digest in accepted},
            "head_version": str(head.version),
            "head_digest": str(head.digest),
            "_head_text": head.text,
            "_head_document": head.document,
        }
        snapshot = cls.Snapshot(
            originator_id=chain_id(head.coordinate),
            originator_version=len(accepted),
            timestamp=cls.Snapshot.create_timestamp(),
            topic=get_topic(cls),
            state=state,
        )
        chain = snapshot.mutate(None)
        assert isinstance(chain, JournalChain)
        return chain

    def _advance(self, journal_version: str, digest: str, text: str) -> None:
        self._digest_by_version[journal_version] = digest
        self._version_by_digest[digest] = journal_version
        self.head_version = journal_version
        self.head_digest = digest
        self._head_text = text
        self._head_document: JournalDocument | None = None

    @property
    def head_document(self) -> JournalDocument:
        """The parsed head (parsed lazily after a replay, which carries only text)."""
        if self._head_document is None:
            self._head_document = parse_journal(self._head_text).document
        return self._head_document

    def owns(self, digest: Sha256Digest) -> bool:
        """Whether a revision with this digest is in this chain."""
        return str(digest) in self._version_by_digest

    def digest_at(self, version: str) -> str | None:
        """The digest accepted at a Journal version, if any."""
        return self._digest_by_version.get(version)

    def accept(self, revision: JournalRevision, owners: DigestOwners) -> bool:
        """Append ``revision`` as the new head; ``False`` if it is already accepted.

        Raises :class:`JournalConflictError` for a different text at an
        accepted version and :class:`JournalChainError` for a broken rule.
        """
        assert str(revision.coordinate) == self.coordinate
        if _is_repeat(self, revision):
            return False
        artifact = self.coordinate
        predecessor = revision.predecessor
        if predecessor is None:
            raise JournalChainError(
                ChainViolation.DUPLICATE_GENESIS,
                f"the chain already has a genesis (head {self.head_digest} at {self.head_version})",
                artifact=artifact,
            )
        if str(predecessor) != self.head_digest:
            if self.owns(predecessor):
                raise JournalChainError(
                    ChainViolation.FORK,
                    f"PREDECESSOR {predecessor} is the revision at "
                    f"{self._version_by_digest[str(predecessor)]}; expected the head "
                    f"{self.head_digest} at {self.head_version}",
                    artifact=artifact,
                )
            raise _foreign_predecessor(revision, owners)
        # Versions are fixed-width text: text order is time order.
        if str(revision.version) <= self.head_version:
            raise JournalChainError(
                ChainViolation.NON_INCREASING_VERSION,
                f"JOURNAL_VERSION {revision.version} is not later than the "
                f"predecessor's {self.head_version}",
                artifact=artifact,
            )
        check_history(self.head_document, revision.document)
        self.trigger_event(
            self.SuccessorAccepted,
            coordinate=artifact,
            journal_version=str(revision.version),
            digest=str(revision.digest),
            predecessor=str(predecessor),
            text=revision.text,
        )
        self._head_document = revision.document
        return True


LEGACY_TOPICS: Mapping[str, type] = {
    "domain.journal.chain:JournalChain": JournalChain,
    "domain.journal.chain:JournalChain.GenesisAccepted": JournalChain.GenesisAccepted,
    "domain.journal.chain:JournalChain.SuccessorAccepted": JournalChain.SuccessorAccepted,
}
"""Topics written before the stored names were fixed, and the classes they name now."""
for _legacy, _named in LEGACY_TOPICS.items():
    register_topic(_legacy, _named)

CHAIN_TOPICS = frozenset({JournalChain.TOPIC, "domain.journal.chain:JournalChain"})
"""Every name a genesis event may give its aggregate (``originator_topic``)."""
EVENT_TOPICS: Mapping[str, type[JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted]] = {
    JournalChain.GenesisAccepted.TOPIC: JournalChain.GenesisAccepted,
    JournalChain.SuccessorAccepted.TOPIC: JournalChain.SuccessorAccepted,
    "domain.journal.chain:JournalChain.GenesisAccepted": JournalChain.GenesisAccepted,
    "domain.journal.chain:JournalChain.SuccessorAccepted": JournalChain.SuccessorAccepted,
}
"""Every topic a chain event is stored under (the fixed names and the legacy ones)."""


def _is_repeat(chain: JournalChain, revision: JournalRevision) -> bool:
    """Same version and text again is idempotent; another text there is a conflict."""
    known = chain.digest_at(str(revision.version))
    if known is None:
        return False
    if known == str(revision.digest):
        return True
    raise JournalConflictError(
        f"JOURNAL_VERSION {revision.version} is already accepted with digest {known}; "
        f"this text has digest {revision.digest}",
        artifact=chain.coordinate,
    )


def _foreign_predecessor(revision: JournalRevision, owners: DigestOwners) -> JournalChainError:
    predecessor = revision.predecessor
    assert predecessor is not None
    owner = owners(predecessor)
    if owner is not None and owner != revision.coordinate:
        return JournalChainError(
            ChainViolation.CROSS_ARTIFACT_PREDECESSOR,
            f"PREDECESSOR {predecessor} is a revision of {owner}",
            artifact=str(revision.coordinate),
        )
    return JournalChainError(
        ChainViolation.UNKNOWN_PREDECESSOR,
        f"PREDECESSOR {predecessor} is not an accepted revision",
        artifact=str(revision.coordinate),
    )


def check_history(head: JournalDocument, successor: JournalDocument) -> None:
    """Releases never disappear and their CONTENT never changes (checked against the head)."""
    releases = {release.version: release for release in successor.releases}
    for old in head.releases:
        new = releases.get(old.version)
        if new is old:  # a block the parser reused: the same release
            continue
        if new is None:
            raise JournalChainError(
                ChainViolation.RELEASE_REMOVED,
                f"RELEASE {old.version} of the predecessor is missing; mark it yanked or "
                "revoked instead",
                artifact=str(successor.coordinate),
            )
        if new.content != old.content:
            raise JournalChainError(
                ChainViolation.CONTENT_CHANGED,
                f"RELEASE {old.version} CONTENT changed from {old.content} to {new.content}",
                artifact=str(successor.coordinate),
            )


def accept_revision(
    chain: JournalChain | None, revision: JournalRevision, owners: DigestOwners
) -> tuple[JournalChain, bool]:
    """Accept ``revision`` into ``chain`` (``None``: the artifact has no chain yet).

    Returns the chain and whether a new event is pending on it.
    """
    if chain is not None:
        return chain, chain.accept(revision, owners)
    if revision.predecessor is not None:
        raise _foreign_predecessor(revision, owners)
    return JournalChain.start(revision), True
