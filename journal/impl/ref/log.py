"""The Journal's event log: chains as streams, digest ownership as unique claims.

A store belongs to one Journal: ``name:<NAME>`` for a Journal named on
purpose (so that several roots, e.g. checkouts on different machines, may
share it), else ``root:<resolved root path>``. Opening the store only checks
that it holds no other Journal (refused with ``JournalStoreError``); the
identity is recorded by :meth:`JournalLog.claim`, which a start calls once it
accepted everything it read: before its first append, or at its end when it
appends nothing. A start that fails before then leaves the store unclaimed.
``nenjim.journal.impl.ref.move_root`` gives a root's store to the path it moved to.
On PostgreSQL a named Journal's log lives in the schema ``journal_<NAME>``
(created on demand) unless the URL's ``?schema=`` names one, so several
Journals share a database under distinct names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol

from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.errors import InvalidValueError, JournalIntegrityError, JournalStoreError
from nenjim.domain.journal.values import ArtifactCoordinate, Sha256Digest
from nenjim.infrastructure.log import (
    Claim,
    LogApplication,
    LogBatch,
    StoreIdentityError,
    TiledLogDamagedError,
)
from nenjim.infrastructure.store.urls import resolve_store_url
from nenjim.journal.impl.ref.transparency import JournalTiler, RevisionEvent, revision_leaf

DIGEST_NAMESPACE = "journal-digest"
JOURNAL_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
NAMED_SCHEMA_PREFIX = "journal_"
_ROOT, _NAME = "root:", "name:"
# Events encoded and written at a time by an append: large enough that a batch costs
# little more than its rows, small enough that its stored form is a sliver of a start.
APPEND_BATCH = 250
Event = DomainEventProtocol[UUID]


def check_journal_name(name: str) -> str:
    """``name`` if it is a Journal name: a lowercase letter, then up to 47 of ``a-z 0-9 _``."""
    if not isinstance(name, str) or not JOURNAL_NAME.fullmatch(name):
        raise InvalidValueError(
            f"invalid Journal name {name!r}: expected a lowercase letter followed by "
            "at most 47 lowercase letters, digits or underscores"
        )
    return name


def root_identity(resolved_root: str) -> str:
    """The identity of an unnamed Journal: its resolved root path."""
    return _ROOT + resolved_root


def name_identity(name: str) -> str:
    """The identity of a Journal named on purpose."""
    return _NAME + check_journal_name(name)


def named_schema(identity: str | None) -> str | None:
    """The PostgreSQL schema of a Journal's log when the store URL names none.

    ``journal_<NAME>`` for a named Journal; ``None`` (the URL's, else
    ``public``) otherwise.
    """
    if identity is not None and identity.startswith(_NAME):
        return NAMED_SCHEMA_PREFIX + identity.removeprefix(_NAME)
    return None


def describe_identity(identity: str) -> str:
    """An identity as messages show it."""
    if identity.startswith(_NAME):
        return f"the Journal named {identity.removeprefix(_NAME)!r}"
    return f"the Journal of root {identity.removeprefix(_ROOT)}"


def identity_root(identity: str) -> str | None:
    """The root path of an unnamed Journal's identity; ``None`` for a named Journal."""
    return identity.removeprefix(_ROOT) if identity.startswith(_ROOT) else None


def refusal(where: str, recorded: str, wanted: str) -> JournalStoreError:
    """The error of a store that holds another Journal than ``wanted``."""
    if identity_root(recorded) is not None and identity_root(wanted) is not None:
        advice = (
            "use another store; a root that moved gets its store back with nenjim journal move-root"
        )
    else:
        advice = "use another store, or give every root that shares it the same Journal name"
    return JournalStoreError(
        f"{where} holds {describe_identity(recorded)}, not {describe_identity(wanted)}: "
        f"a store holds one Journal ({advice})"
    )


class JournalLog(LogApplication):
    """Chains of revisions, one stream per artifact, on one append-only log.

    ``identity`` (from :func:`root_identity` or :func:`name_identity`) is
    checked on open and recorded by :meth:`claim` (or by the first append);
    ``None`` opens any Journal's log (audits and rebuilds). ``read_only`` opens
    the log as it is, writing nothing (see ``LogApplication``).
    """

    name = "journal"

    def __init__(
        self,
        store: str | None = None,
        *,
        create: bool = True,
        identity: str | None = None,
        read_only: bool = False,
    ) -> None:
        try:
            super().__init__(
                store,
                create=create,
                identity=identity,
                claim=False,
                schema=named_schema(identity),
                tiler=JournalTiler(),
                read_only=read_only,
            )
        except StoreIdentityError as error:
            raise refusal(error.where, error.recorded, error.wanted) from None
        except TiledLogDamagedError as error:  # the catch-up of leaves missing from the tree
            raise tree_damage(self.location.display, identity, error) from error
        self._identity = identity
        # The identity to record at the first append or claim(); None once recorded.
        self._unclaimed = identity if create and not self.read_only else None

    def claim(self) -> None:
        """Record this log's Journal as the store's owner, once; ``JournalStoreError`` if
        another Journal claimed the store since it was opened."""
        identity = self._unclaimed
        if identity is None:
            return
        try:
            self.claim_identity(identity)
        except StoreIdentityError as error:
            raise refusal(error.where, error.recorded, error.wanted) from None
        self._unclaimed = None

    def digest_owner(self, digest: Sha256Digest) -> ArtifactCoordinate | None:
        """The artifact owning a revision digest, or ``None`` if no revision has it."""
        owner = self.claim_owner(DIGEST_NAMESPACE, str(digest))
        return None if owner is None else ArtifactCoordinate(owner)

    def digest_claims(self) -> dict[str, str]:
        """Every digest claim: revision digest to the artifact that owns it."""
        return self.claim_owners(DIGEST_NAMESPACE)

    def digest_claim_pages(self) -> Iterator[list[tuple[str, str]]]:
        """Every digest claim as ``(digest, artifact)``, a page at a time (see
        :meth:`claim_pages`)."""
        return self.claim_pages(DIGEST_NAMESPACE)

    def append_chains(self, chains: Sequence[JournalChain]) -> list[int]:
        """Append every pending revision of ``chains`` (see :meth:`append_events`)."""
        return self.append_events([event for chain in chains for event in chain.collect_events()])

    def append_events(
        self, events: Sequence[Event], *, batch_size: int = APPEND_BATCH
    ) -> list[int]:
        """Append chains' events, in order, claim each revision's digest and add its leaf to
        the transparency tree, all in one transaction; the events' positions.

        The store is claimed first (:meth:`claim`): events are only ever written
        into a store that the appending Journal owns. ``batch_size`` events are
        encoded and written at a time, so a large append (a cold start) never
        holds the stored form of all its events.
        """
        claiming = self._unclaimed
        self.claim()
        try:
            return self.append_batches(_batches(events, batch_size))
        except BaseException as error:
            if claiming is not None:  # a store is owned from the first start that succeeds
                self._unclaim(claiming, error)
            if isinstance(error, TiledLogDamagedError):
                raise tree_damage(self.location.display, self._identity, error) from error
            raise

    def _unclaim(self, identity: str, error: BaseException) -> None:
        """Give back the claim of a first append that failed with ``error``."""
        try:
            self.release_identity(identity)
        except Exception as failure:  # the append's own error is the one to raise
            error.add_note(f"the store could not be given back unowned: {failure}")
            return
        self._unclaimed = identity


def tree_damage(
    store: str, identity: str | None, error: TiledLogDamagedError
) -> JournalIntegrityError:
    """The Journal's error for a write that found the transparency tree damaged (it wrote
    nothing): the tree derives from the log, and the repair rebuilds it."""
    named = (
        f" --journal {identity.removeprefix(_NAME)}"
        if identity and identity.startswith(_NAME)
        else ""
    )
    return JournalIntegrityError(
        f"the transparency tree in {store} is damaged, nothing was appended: {error} "
        f"(derived from the log: nenjim journal repair --store {store}{named} rebuilds it)"
    )


def _batches(events: Sequence[Event], size: int) -> Iterator[LogBatch]:
    """``events`` in batches of ``size``, each with its digest claims and leaves."""
    for start in range(0, len(events), size):
        batch = events[start : start + size]
        revisions = [event for event in batch if isinstance(event, RevisionEvent)]
        yield LogBatch(
            batch,
            [Claim(DIGEST_NAMESPACE, event.digest, event.coordinate) for event in revisions],
            [revision_leaf(e) if isinstance(e, RevisionEvent) else None for e in batch],
        )


def journal_store_url(url: str, identity: str | None) -> str:
    """``url`` with the schema of the Journal ``identity`` when its stores have schemas
    (PostgreSQL's) and it names none (a named Journal lives in ``journal_NAME``); else
    ``url``."""
    schema = named_schema(identity)
    if schema is None:
        return url
    location = resolve_store_url(url)
    setting = location.store_kind.schema_setting
    if setting is None or setting in location.env:
        return url
    parts = urlsplit(url)
    query = f"{parts.query}&schema={schema}" if parts.query else f"schema={schema}"
    return urlunsplit(parts._replace(query=query))
