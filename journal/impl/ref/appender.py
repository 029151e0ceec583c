"""Appending revision texts to a durable Journal without a root (``JournalAppender``).

A registry keeps its revisions in a store, not in ten million files: texts
(or files anywhere) are judged against the chains the store holds exactly as
a root's files are judged at a start, and appended in one atomic ingestion.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.errors import JournalError, JournalLayoutError, JournalStoreError
from nenjim.domain.journal.parser import (
    decode_journal_bytes,
    forget_shared_values,
    parse_journal,
)
from nenjim.domain.journal.values import version_reader
from nenjim.infrastructure.log import resolve_store_url
from nenjim.journal.impl.ref.filesystem import REVISION_SUFFIX
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.loader import parse_in_link_order
from nenjim.journal.impl.ref.log import JournalLog, name_identity
from nenjim.journal.impl.ref.store_errors import store_errors
from nenjim.projections.collector import cyclic_collection_paused
from nenjim.projections.journal_chains import JournalChainsProjection

_file_version = version_reader(REVISION_SUFFIX)
# Revisions appended between two write-backs of the persisted chain projection. It is a
# cache of the log (an opener folds what it lacks), and writing it after every single
# append doubled that append's commits.
PERSIST_EVERY = 1_000


class JournalAppender:
    """Appends revisions to the durable Journal of ``store``, without a root.

    ``journal`` names the Journal: a store that holds no Journal yet becomes
    that named Journal's at the first append that succeeds (a named Journal
    needs no root). Without it the store must already hold a Journal (its
    root's or a named one), whose chains the texts extend. An in-memory store
    keeps nothing and is refused. Every store failure raises
    ``JournalStoreError``. Threads may share an appender; close it when done
    (it is a context manager).
    """

    def __init__(self, store: str, *, journal: str | None = None) -> None:
        identity = None if journal is None else name_identity(journal)
        with store_errors("the store URL"):
            location = resolve_store_url(store)
        self._where = location.where
        if not location.is_durable:
            raise JournalStoreError(
                f"{self._where} keeps nothing: revisions are appended to a durable store"
            )
        with store_errors(self._where):
            log = JournalLog(store, create=identity is not None, identity=identity)
            try:
                if log.read_only:
                    raise JournalStoreError(
                        f"{self._where} is read-only (a hot standby, or read-only media): "
                        "revisions are appended to the primary's store"
                    )
                if identity is None and log.recorded_identity() is None:
                    raise JournalStoreError(
                        f"{self._where} holds no Journal yet: name one (--journal NAME) "
                        "or start it from its root first"
                    )
                self._ingestion = JournalIngestion(log, JournalChainsProjection(), persisted=True)
                self._ingestion.catch_up()
            except BaseException:
                log.close()
                raise
        self._unpersisted = 0
        self._closed = False

    def append(self, texts: Iterable[str]) -> tuple[JournalRevision, ...]:
        """Judge ``texts`` (complete Journal texts) against the store's chains and append
        them, all in one transaction or none; the newly accepted revisions.

        See :meth:`append_sources`; a text's errors name no file.
        """
        return self.append_sources(RevisionSource.of_text(text) for text in texts)

    def append_files(self, paths: Iterable[str | os.PathLike[str]]) -> tuple[JournalRevision, ...]:
        """Read the files at ``paths`` (exact bytes) and append their texts as
        :meth:`append_sources` does; errors name the file.

        A file named ``*.journal`` must be named ``<JOURNAL_VERSION>.journal`` after
        its own version, as in a root; any other name says nothing of its text.
        """
        return self.append_sources(RevisionSource.of_file(path) for path in paths)

    def append_sources(self, sources: Iterable[RevisionSource]) -> tuple[JournalRevision, ...]:
        """Append revisions in one atomic ingestion; the newly accepted ones, in the order
        they were judged.

        Every text is parsed first (the first that cannot be is reported), then
        each is judged after the text it cites, as a root's files are; a text
        already accepted byte for byte is skipped; any ``JournalError`` leaves
        the store unchanged. The store's chain projection is written back every
        ``PERSIST_EVERY`` appended revisions and at :meth:`close` (an opener folds
        what it lacks from the log). The chain heads decided on are compare-and-set:
        when another writer moved one first, the texts are judged again against
        the caught-up chain, so of two appenders racing on one head only one
        wins and the other gets the chain rule it now breaks.
        """
        # A bulk append builds objects that outlive it and hold no cycles: the
        # collector's walks of them found nothing, and cost a quarter of the time.
        with cyclic_collection_paused():
            try:
                parsed = [source._parsed() for source in sources]
            finally:  # what was parsed keeps its shared values; the caches need not
                forget_shared_values()
            if not parsed:
                return ()
            where = {id(item.revision): item.source for item in parsed}
            ordered = list(parse_in_link_order(parsed, len(parsed)))
            located = [where[id(revision)] for revision in ordered]
            # No lock of its own: the ingestion decides under its lock and appends a single
            # revision outside it, so concurrent single appends share commits.
            with store_errors(self._where):
                accepted = self._ingestion.ingest_all(ordered, located)
                self._unpersisted += len(accepted)
                if self._unpersisted >= PERSIST_EVERY:
                    self._unpersisted = 0
                    self._ingestion.persist()
            return tuple(accepted)

    def close(self) -> None:
        """Write the persisted chain projection back and release the store; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            with store_errors(self._where):
                self._ingestion.persist()
        finally:
            self._ingestion.close()

    def __enter__(self) -> JournalAppender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def append_revisions(
    store: str, texts: Iterable[str], *, journal: str | None = None
) -> tuple[JournalRevision, ...]:
    """Append ``texts`` to the durable Journal of ``store`` in one atomic ingestion; the
    newly accepted revisions (see :class:`JournalAppender`)."""
    with JournalAppender(store, journal=journal) as appender:
        return appender.append(texts)


@dataclass(frozen=True, slots=True)
class RevisionSource:
    """One text to append, with the file it came from (``None``: given as text)."""

    data: bytes
    source: Path | None = None

    @classmethod
    def of_text(cls, text: str) -> RevisionSource:
        """A text given as such; its digest covers its exact UTF-8 bytes."""
        if not isinstance(text, str):
            raise TypeError(f"a Journal text must be a str, got {type(text).__name__}")
        return cls(text.encode("utf-8"))

    @classmethod
    def of_file(cls, path: str | os.PathLike[str]) -> RevisionSource:
        """The exact bytes of the file at ``path``; ``JournalLayoutError`` naming it if it
        cannot be read."""
        location = Path(path)
        try:
            return cls(location.read_bytes(), location)
        except OSError as error:
            reason = error.strerror or str(error)
            raise JournalLayoutError(f"cannot read file: {reason}", path=location) from None

    def _parsed(self) -> _Parsed:
        """The text parsed and checked against its file's name; errors name the file."""
        try:
            revision = parse_journal(decode_journal_bytes(self.data))
        except JournalError as error:
            error.locate(path=self.source)
            raise
        if self.source is not None:
            named = _file_version(self.source.name)
            if self.source.name.endswith(REVISION_SUFFIX) and named != str(revision.version):
                raise JournalLayoutError(
                    f"JOURNAL_VERSION {revision.version} differs from its file name "
                    f"{self.source.name}",
                    artifact=str(revision.coordinate),
                    path=self.source,
                )
        return _Parsed(self.data, str(revision.version), revision, self.source)


@dataclass(frozen=True, slots=True)
class _Parsed:
    """A parsed text as the link order takes it (see ``loader.UnparsedRevision``)."""

    data: bytes
    version_key: str
    revision: JournalRevision
    source: Path | None

    def parse(self) -> JournalRevision:
        return self.revision
