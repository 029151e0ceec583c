"""Loads a Journal's root into its ingestion: the whole root at start, new files on refresh."""

from __future__ import annotations

import heapq
from collections import defaultdict
from pathlib import Path
from typing import TypeVar

from domain.journal.document import JournalRevision
from domain.journal.parser import decode_journal_bytes, forget_shared_values
from infrastructure.log import LogClosedError
from journal.impl.ref.filesystem import JournalFile, scan_root
from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.progress import Progress, silent
from journal.impl.ref.publication import JournalPublisher
from journal.model import RefreshReport
from projections.journal_chains import JournalWorldview

_Source = TypeVar("_Source")


class RootLoader:
    """Reads one root and ingests what is new; publishes each new worldview.

    Held by the manager, and by the process only until its ``start()``.
    """

    def __init__(
        self,
        root: Path,
        ingestion: JournalIngestion,
        publisher: JournalPublisher,
        *,
        progress: Progress | None = None,
    ) -> None:
        self._root = root
        self._ingestion = ingestion
        self._publisher = publisher
        self._progress = progress or silent

    def load(self) -> None:
        """Catch up with the log, then ingest every new file of the root in one ingestion.

        The worldview is published only if everything was accepted; the
        process makes it visible by moving to RUNNING.
        """
        self._ingestion.catch_up()
        files = scan_root(self._root)
        # Handed over twice: parsing empties ``files`` (a file's bytes go once it is
        # parsed) and the ingestion drops each parse once decided, so the bytes are
        # gone before the parses pile up, and the parses before the append.
        try:
            new = in_link_order(_parse_new(files, self._ingestion.view, self._progress))
        finally:
            forget_shared_values()  # the view keeps texts: the caches would only hold on
        self._ingestion.ingest_start(new)
        self._ingestion.persist()
        self._publisher.publish(self._ingestion.view.settle())

    def refresh(self) -> RefreshReport:
        """Fold what other processes appended to the log, then ingest the root's new files,
        one atomic ingestion each, publishing after each; write the projection back."""
        self._publisher.require_running("refresh")
        accepted = []
        try:
            self._publisher.publish(self._ingestion.follow())
            for path, revision in in_link_order(
                _parse_new(scan_root(self._root), self._ingestion.view)
            ):
                stored, is_new = self._ingestion.ingest(revision, path)
                self._publisher.publish(self._ingestion.view)
                if is_new:
                    accepted.append(stored)
            self._ingestion.persist()
        except LogClosedError:
            # A stop() during the refresh closed the store: say so as the lifecycle rule.
            self._publisher.require_running("refresh")
            raise
        return RefreshReport(tuple(accepted))


def _parse_new(
    files: list[JournalFile], view: JournalWorldview, progress: Progress = silent
) -> list[tuple[str, JournalRevision]]:
    """Parse the files whose exact bytes are not already accepted at their version;
    each one's path (as text: a large root's ``Path`` objects weigh more than the
    strings) and revision.

    ``files`` is emptied as it is read: a file's bytes are not kept once parsed
    (the parsed revision holds its text).
    """
    total = len(files)
    files.reverse()
    revisions = []
    coordinate, chain = None, None
    while files:
        progress("reading revision files", total - len(files), total)
        file = files.pop()
        if file.coordinate != coordinate:  # files come artifact by artifact
            coordinate, chain = file.coordinate, view.chain(file.coordinate)
        stored = None if chain is None else chain.stored_at(file.version)
        if stored is None or stored.digest != file.digest_text:
            revisions.append((str(file.path), file.parse()))
        else:
            # Accepted byte for byte: its text is these bytes, so the log need not be read.
            stored.adopt_text(decode_journal_bytes(file.data))
    progress("reading revision files", total, total)
    return revisions


def in_link_order(
    candidates: list[tuple[_Source, JournalRevision]],
) -> list[tuple[_Source, JournalRevision]]:
    """``candidates`` (in artifact and version order) with each one after the one it cites.

    A file citing another new file is judged after it, as it would be had the
    cited file been accepted first, so the initial load and a refresh report
    the same rule whatever order the names sort in. Files that cannot extend
    what they cite (not later than it) are judged after those that can, as
    against a root where every other file was accepted. Valid chains keep
    their chronological order: a successor is later than its predecessor.
    """
    position = {str(revision.digest): i for i, (_, revision) in enumerate(candidates)}
    followers: dict[int, list[tuple[bool, int]]] = defaultdict(list)
    ready: list[tuple[bool, int]] = []
    for i, (_, revision) in enumerate(candidates):
        cited = None if revision.predecessor is None else position.get(str(revision.predecessor))
        if cited is None:
            ready.append((False, i))
        else:
            stale = revision.version <= candidates[cited][1].version
            followers[cited].append((stale, i))
    # Digests are unique and a text cannot cite its own digest: the links form a forest.
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, i = heapq.heappop(ready)
        ordered.append(candidates[i])
        for follower in followers.pop(i, ()):
            heapq.heappush(ready, follower)
    return ordered
