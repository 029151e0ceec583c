"""Loads a Journal's root into its ingestion: the whole root at start, new files on refresh."""

from __future__ import annotations

import bisect
import hashlib
import heapq
import logging
import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.errors import JournalStoreError, LifecycleError
from nenjim.domain.journal.parser import forget_shared_releases, forget_shared_values
from nenjim.domain.journal.values import ArtifactCoordinate
from nenjim.infrastructure.store.progress import Progress, silent
from nenjim.journal.impl.ref.filesystem import REVISION_SUFFIX, JournalFile, check_root, scan_root
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.opening import IngestionHandle
from nenjim.journal.impl.ref.publication import JournalPublisher
from nenjim.journal.impl.ref.store_errors import store_errors
from nenjim.journal.model import RefreshReport
from nenjim.projections.journal_chains import JournalWorldview, StoredRevision

# Files parsed between two emptyings of the parser's release cache: the parses are
# dropped as they are decided, and the cache would keep every release of the load
# (the values the releases are made of repeat, and stay shared until the load ends).
_SHARED_RELEASES_SPAN = 100

_LOGGER = logging.getLogger(__name__)


class UnparsedRevision(Protocol):
    """A revision not yet judged: its exact bytes, the version its place gives, its parse."""

    @property
    def data(self) -> bytes:
        """The exact bytes its digest is taken over."""

    @property
    def version_key(self) -> str:
        """Its Journal version, as text."""

    def parse(self) -> JournalRevision:
        """The parsed revision (a ``JournalError`` for one that cannot be accepted)."""


Unparsed = TypeVar("Unparsed", bound=UnparsedRevision)


class RootLoader:
    """Reads one root and ingests what is new; publishes each new worldview.

    Held by the manager, and by the process only until its ``start()``.
    """

    def __init__(
        self,
        root: Path,
        store: IngestionHandle,
        publisher: JournalPublisher,
        *,
        progress: Progress | None = None,
    ) -> None:
        self._root = root
        self._store = store
        self._publisher = publisher
        self._progress = progress or silent

    def load(self) -> None:
        """Catch up with the log, then ingest every new file of the root in one ingestion;
        claim the store for the Journal.

        The worldview is published only if everything was accepted; the
        process makes it visible by moving to RUNNING.
        """
        check_root(self._root)  # a root still missing opens no store
        with store_errors(self._store.where):
            ingestion = self._store.open()
            ingestion.catch_up()
            # Each file is parsed when its turn comes (its bytes go then) and the ingestion
            # drops each parse once decided: the start holds the texts, not every parse.
            files = scan_root(self._root)
            locate = _locator(files)
            total = len(files)
            new = _new_files(files, ingestion.view)
            new_count = len(new)  # new is emptied as it is ingested
            # The texts no file handed over are read from the log, and checked, before
            # anything is appended: a start that finds the log damaged appends nothing.
            ingestion.view.settle()
            parses = bool(new)
            try:
                ingestion.ingest_start(parse_in_link_order(new, total, self._progress), locate)
            finally:
                # The view keeps texts: the caches would only hold on to what this start
                # parsed. A start that parsed nothing leaves them as it found them.
                if parses:
                    forget_shared_values()
            ingestion.persist()
            ingestion.claim()  # done by the append already, unless nothing was new
        view = ingestion.view.settle()
        self._publisher.publish(view)
        _LOGGER.info(
            "loaded the root %s: %d revision files, %d new; %d revisions in the log",
            self._root,
            total,
            new_count,
            view.position,
        )

    def refresh(self) -> RefreshReport:
        """Fold what other processes appended to the log, then ingest the root's new files,
        one atomic ingestion each, publishing after each; write the projection back."""
        self._publisher.require_running("refresh")
        accepted = []
        with self._store_in_use("refresh") as ingestion:
            self._publisher.publish(ingestion.follow())
            # Every new file is parsed before the first is ingested: one that cannot be
            # parsed is reported before anything is accepted.
            files = scan_root(self._root)
            locate = _locator(files)
            total = len(files)
            new = _new_files(files, ingestion.view)
            for revision in list(parse_in_link_order(new, total)):
                stored, is_new = ingestion.ingest(revision, locate(revision))
                self._publisher.publish(ingestion.view)
                if is_new:
                    accepted.append(stored)
            ingestion.persist()
        return RefreshReport(tuple(accepted))

    def ingest_text(self, text: str) -> JournalRevision:
        """Ingest one complete text atomically and publish the result at once; the accepted
        revision (the one already accepted, for a repeated text)."""
        self._publisher.require_running("ingest_text")
        with self._store_in_use("ingest_text") as ingestion:
            stored, _ = ingestion.ingest_text(text)
            self._publisher.publish(ingestion.view)
            ingestion.persist()
        return stored

    @contextmanager
    def _store_in_use(self, action: str) -> Iterator[JournalIngestion]:
        """The open ingestion of a running Journal, for ``action``; store failures raise
        ``JournalStoreError``, unless a ``stop()`` closed the store: ``LifecycleError``."""
        try:
            with store_errors(self._store.where):
                yield self._store.open()
        except (JournalStoreError, LifecycleError):
            # A stop() closed the store meanwhile: say so as the lifecycle rule.
            self._publisher.require_running(action)
            raise


def _locator(files: list[JournalFile]) -> Callable[[JournalRevision], str]:
    """The path of a parsed file of ``files``, as text: its artifact's directory and its
    version (a file is rejected unless both match its place), so no path is kept per file.
    """
    # Files come artifact by artifact, sharing their coordinate object: one entry each.
    directories = {}
    coordinate = None
    for file in files:
        if file.coordinate is not coordinate:
            coordinate = file.coordinate
            directories[coordinate] = file.directory

    def locate(revision: JournalRevision) -> str:
        name = f"{revision.version}{REVISION_SUFFIX}"
        return os.path.join(directories[revision.coordinate], name)

    return locate


def _new_files(files: list[JournalFile], view: JournalWorldview) -> list[JournalFile]:
    """The files whose exact bytes are not already accepted at their version, in order.

    ``files`` is emptied. An accepted file's bytes are its text, handed to the
    view (the log need not be read).
    """
    new = []
    coordinate: ArtifactCoordinate | None = None
    stored: tuple[StoredRevision, ...] = ()
    keys: tuple[str, ...] = ()
    at = 0  # the chain's first revision not yet matched with a file
    for file in files:
        # Files come artifact by artifact, sharing their coordinate object, and each
        # artifact's files ascend by version as its chain does: one lookup per artifact,
        # and a file usually finds its revision at the next place in the chain.
        if file.coordinate is not coordinate:
            coordinate = file.coordinate
            chain = view.chain(coordinate)
            stored, keys = ((), ()) if chain is None else (chain.stored, chain.version_keys)
            at = 0
        key = file.version_key
        if at >= len(keys) or keys[at] != key:
            at = bisect.bisect_left(keys, key)
            if at >= len(keys) or keys[at] != key:
                new.append(file)  # no revision at this version
                continue
        revision = stored[at]
        at += 1
        if revision.digest != "sha256:" + hashlib.sha256(file.data).hexdigest():
            new.append(file)
        else:
            revision.adopt_bytes(file.data)
    files.clear()
    return new


def parse_in_link_order(
    new: list[Unparsed], total: int, progress: Progress = silent
) -> Iterator[JournalRevision]:
    """The new files ``new`` of a root of ``total`` files (see :func:`_new_files`) parsed,
    each after the one it cites; ``new`` is emptied as it is read.

    A file citing another new file is judged after it, as it would be had the
    cited file been accepted first, so the initial load and a refresh report
    the same rule whatever order the names sort in. Files that cannot extend
    what they cite (not later than it) are judged after those that can, as
    against a root where every other file was accepted. Valid chains keep
    their chronological order: a successor is later than its predecessor.

    Files are parsed in their order (the first that cannot be parsed is the one
    reported), each only when the next one to hand out may depend on it, and a
    file's bytes go once it is parsed: a root whose files come in chain order
    holds one parse at a time here.
    """
    count = len(new)
    # A parsed file's digest and version are those of its bytes and name (or it is
    # rejected), so the links are known before any file is parsed. (Raw digests: a
    # large root's digests as text weigh twice as much.)
    position = {hashlib.sha256(file.data).digest(): i for i, file in enumerate(new)}
    versions = [file.version_key for file in new]
    new.reverse()
    parsed: dict[int, JournalRevision] = {}
    handed_out = [False] * count
    followers: dict[int, list[tuple[bool, int]]] = defaultdict(list)
    ready: list[tuple[bool, int]] = []  # a heap of (judged last?, position)
    while True:
        following = count - len(new)  # the next file to parse
        # The least ready file goes next once no file still unparsed can rank before
        # it: every one of those comes later, so only a file judged last must wait.
        if ready and (not new or not ready[0][0]):
            _, i = heapq.heappop(ready)
            handed_out[i] = True
            for follower in followers.pop(i, ()):
                heapq.heappush(ready, follower)
            yield parsed.pop(i)
        elif new:
            progress("reading revision files", total - count + following, total)
            if following % _SHARED_RELEASES_SPAN == 0:
                forget_shared_releases()
            file = new.pop()
            revision = file.parse()
            parsed[following] = revision
            predecessor = revision.predecessor
            cited = None if predecessor is None else position.get(_raw_digest(str(predecessor)))
            if cited is None:
                heapq.heappush(ready, (False, following))
            else:
                # Fixed-width version texts sort chronologically.
                item = (str(revision.version) <= versions[cited], following)
                if handed_out[cited]:
                    heapq.heappush(ready, item)
                else:
                    followers[cited].append(item)
        else:
            break
    # Digests are unique and a text cannot cite its own digest: the links form a
    # forest, and every file was handed out.
    progress("reading revision files", total, total)


def _raw_digest(digest: str) -> bytes:
    """The 32 bytes of a ``sha256:<hex>`` digest."""
    return bytes.fromhex(digest.removeprefix("sha256:"))
