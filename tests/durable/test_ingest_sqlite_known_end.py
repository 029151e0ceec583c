"""The SQLite Journal log's appends after this process's own.

A writer that committed the log's last append knows where the entries end;
its next append reads them again only if the ids SQLite gives its events
show that someone else appended since (SQLite numbers an event one past the
last stored).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

import pytest

from journal_texts import journal_text
from nenjim.cli import main
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.sqlite import tiles as sqlite_tiles
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog
from nenjim.journal.impl.ref.transparency import RevisionEvent, revision_leaf

HEAD = "20260101T000000Z"


def _genesis(name: str) -> JournalChain:
    return JournalChain.start(parse_journal(journal_text(name, HEAD)))


def _leaves_match_events(log: JournalLog) -> None:
    """Entry n is the leaf of the n-th revision event, and names that event's id."""
    reader = LogReader(log)
    revisions = [(n.id, reader.event(n)) for n in reader.notifications(0)]
    tiled = log.tiled_log
    entries = tiled.read_entries(0, tiled.entry_count())
    assert entries == [(id_, revision_leaf(cast(RevisionEvent, e))) for id_, e in revisions]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "log.db"


@pytest.fixture
def ends_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the reads of where the entries end from the file (an append's, or a
    count's)."""
    reads: list[int] = []
    original = sqlite_tiles._Transaction.end

    def counted(self: sqlite_tiles._Transaction) -> tuple[int, int]:
        if self._end is None:
            reads.append(1)
        return original(self)

    monkeypatch.setattr(sqlite_tiles._Transaction, "end", counted)
    return reads


def test_an_append_after_the_writers_own_reads_no_end(path: Path, ends_read: list[int]) -> None:
    log = JournalLog(f"sqlite:///{path}")
    try:
        log.append_chains([_genesis("org.example.first")])
        ends_read.clear()
        assert log.append_chains([_genesis(f"org.example.n{i}") for i in range(3)]) == [2, 3, 4]
        assert log.append_chains([_genesis("org.example.last")]) == [5]
        assert ends_read == []
        _leaves_match_events(log)
    finally:
        log.close()


def test_an_event_appended_elsewhere_without_a_leaf_is_caught_up_first(
    path: Path, ends_read: list[int]
) -> None:
    """The writer's known end is stale: the ids of its next append show it, the end is
    read, and the other writer's revision gets its leaf before the writer's own."""
    url = f"sqlite:///{path}"
    log = JournalLog(url)
    try:
        log.append_chains([_genesis("org.example.ours")])
        events = _genesis("org.example.b").collect_events()
        foreign = [log.mapper.to_stored_event(e) for e in events]
        revision = cast(RevisionEvent, events[0])
        with sqlite3.connect(path) as other:  # another process's writer, without the tree
            other.executemany(
                "INSERT INTO journal_events VALUES (?, ?, ?, ?)",
                [(str(s.originator_id), s.originator_version, s.topic, s.state) for s in foreign],
            )
            other.execute(
                "INSERT INTO journal_claims VALUES (?, ?, ?)",
                (DIGEST_NAMESPACE, revision.digest, revision.coordinate),
            )
        ends_read.clear()
        assert log.append_chains([_genesis("org.example.next")]) == [3]
        assert ends_read == [1]
        _leaves_match_events(log)
        ends_read.clear()
        assert log.append_chains([_genesis("org.example.last")]) == [4]
        assert ends_read == []  # known again after the writer's own commit
        _leaves_match_events(log)
    finally:
        log.close()
    assert main(["journal", "audit", "--store", url]) == 0


def test_writers_of_one_process_share_where_the_log_ends(path: Path, ends_read: list[int]) -> None:
    url = f"sqlite:///{path}"
    ours = JournalLog(url)
    try:
        ours.append_chains([_genesis("org.example.ours")])
        theirs = JournalLog(url)
        theirs.append_chains([_genesis("org.example.theirs")])
        ends_read.clear()
        assert ours.append_chains([_genesis("org.example.next")]) == [3]
        assert ends_read == []  # one commit group per log and process: it knows
        _leaves_match_events(ours)
    finally:
        ours.close()
