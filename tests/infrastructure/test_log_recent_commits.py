"""A reader of a log is answered from memory only for ids this process committed last,
and takes the event objects this process appended instead of decoding them again."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import Notification, StoredEvent

from journal_texts import journal_text
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.log.recent_commits import ATTACHED, KEPT, RecentCommits
from nenjim.journal.impl.ref.log import JournalLog

REPO = Path(__file__).resolve().parents[2]
HEAD = "20260101T000000Z"


def _stored(version: int) -> StoredEvent:
    return StoredEvent(
        originator_id="00000000-0000-0000-0000-000000000001",
        originator_version=version,
        topic="example:Event",
        state=f"{version}".encode(),
    )


def test_a_range_is_answered_only_when_every_id_in_it_is_kept() -> None:
    recent = RecentCommits()
    recent.record([([1, 2], [_stored(1), _stored(2)], None), ([4], [_stored(4)], None)])
    assert [n.id for n in recent.between(0, 2) or []] == [1, 2]
    assert recent.between(0, 4) is None  # id 3: another process's
    assert recent.between(3, 4) == [
        Notification(
            id=4,
            originator_id=_stored(4).originator_id,
            originator_version=4,
            topic="example:Event",
            state=b"4",
        )
    ]
    assert recent.between(4, 4) == []  # nothing asked for


def test_every_reader_is_given_the_same_notification_objects() -> None:
    """Built once when committed, not once per reader: a process's writers each read
    every other writer's notifications."""
    recent = RecentCommits()
    recent.record([([1, 2], [_stored(1), _stored(2)], None)])
    first, second = recent.between(0, 2), recent.between(1, 2)
    assert first is not None
    assert second is not None
    assert first[1] is second[0]


def test_appends_without_one_id_per_event_are_not_kept() -> None:
    recent = RecentCommits()
    recent.record([(None, [_stored(1)], None), ([1], [_stored(1), _stored(2)], None)])
    assert recent.between(0, 1) is None


def test_only_the_newest_notifications_are_kept() -> None:
    recent = RecentCommits()
    recent.record([([n], [_stored(n)], None) for n in range(1, KEPT + 11)])
    assert recent.between(0, 10) is None
    assert recent.between(10, KEPT + 10) is not None


def test_ids_that_do_not_grow_forget_what_was_kept() -> None:
    """A log made anew numbers from 1 again: what was kept belonged to the old one."""
    recent = RecentCommits()
    recent.record([([1, 2, 3], [_stored(1), _stored(2), _stored(3)], None)])
    recent.record([([2], [_stored(20)], None)])
    assert recent.between(0, 2) is None
    assert [n.state for n in recent.between(1, 2) or []] == [b"20"]


def test_a_notification_given_from_memory_brings_the_object_its_writer_appended() -> None:
    recent = RecentCommits()
    first, second = object(), object()
    recent.record([([1, 2], [_stored(1), _stored(2)], [first, second]), ([3], [_stored(3)], None)])
    given = recent.between(0, 3)
    assert given is not None
    assert [recent.appended(n) for n in given] == [first, second, None]  # 3: none given


def test_a_notification_read_elsewhere_brings_no_object() -> None:
    """Equal to the one kept, but with bytes of its own: as a store's read gives it."""
    recent = RecentCommits()
    recent.record([([1], [_stored(1)], [object()])])
    read = Notification(
        id=1,
        originator_id=_stored(1).originator_id,
        originator_version=1,
        topic="example:Event",
        state=bytes(bytearray(b"1")),
    )
    assert read == (recent.between(0, 1) or [])[0]
    assert recent.appended(read) is None


def test_objects_that_do_not_match_the_events_are_not_kept() -> None:
    recent = RecentCommits()
    recent.record([([1, 2], [_stored(1), _stored(2)], [object()])])
    assert [recent.appended(n) for n in recent.between(0, 2) or []] == [None, None]


def _kept(count: int) -> RecentCommits:
    recent = RecentCommits()
    recent.record([([n], [_stored(n)], None) for n in range(1, count + 1)])
    return recent


def test_a_value_is_attached_only_to_a_kept_notification() -> None:
    recent = _kept(3)
    assert recent.attach(2, "up to 2")
    assert not recent.attach(4, "up to 4")  # not committed here (yet)
    assert recent.latest_attached(0, 10) == (2, "up to 2")


def test_the_newest_value_in_a_range_is_given_with_its_id() -> None:
    recent = _kept(6)
    for id_ in (1, 3, 5):
        recent.attach(id_, f"up to {id_}")
    assert recent.latest_attached(0, 6) == (5, "up to 5")
    assert recent.latest_attached(0, 4) == (3, "up to 3")
    assert recent.latest_attached(3, 4) is None  # after 3, up to 4: none
    assert recent.latest_attached(5, 6) is None
    recent.attach(3, "again")
    assert recent.latest_attached(0, 4) == (3, "again")  # the last value attached wins


def test_only_the_newest_attached_values_are_kept() -> None:
    recent = _kept(ATTACHED + 5)
    for id_ in range(1, ATTACHED + 6):
        recent.attach(id_, id_)
    assert recent.latest_attached(0, 5) is None
    assert recent.latest_attached(0, 6) == (6, 6)


def test_a_value_goes_with_its_notification() -> None:
    """Forgotten when the notification is, and when the log is made anew."""
    recent = _kept(2)
    recent.attach(1, "up to 1")
    recent.record([([n], [_stored(n)], None) for n in range(3, KEPT + 3)])
    assert recent.latest_attached(0, 1) is None
    recent.attach(KEPT + 2, "newest")
    recent.record([([1], [_stored(1)], None)])  # ids start again: a new log
    assert recent.latest_attached(0, KEPT + 2) is None


def test_a_reader_shares_only_what_this_process_committed(durable_store_url: str) -> None:
    first, second = JournalLog(durable_store_url), JournalLog(durable_store_url)
    first.append_chains([_genesis("org.example.a"), _genesis("org.example.b")])
    reader, other = LogReader(first), LogReader(second)
    reader.share(2, "up to 2")
    reader.share(3, "up to 3")  # no notification 3 yet: nothing kept
    assert other.shared(0, 3) == (2, "up to 2")  # another log object on the same store
    assert other.shared(2, 3) is None


def _genesis(name: str) -> JournalChain:
    return JournalChain.start(parse_journal(journal_text(name, HEAD)))


@pytest.fixture
def no_store_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the reads of notifications that reach a store."""
    reads: list[int] = []
    original = LogReader.notifications

    def counted(self: LogReader, after: int) -> Iterator[Notification]:
        reads.append(after)
        return original(self, after)

    monkeypatch.setattr(LogReader, "notifications", counted)
    return reads


def test_a_reader_reads_from_memory_what_the_processs_writers_committed(
    durable_store_url: str, no_store_reads: list[int]
) -> None:
    first, second = JournalLog(durable_store_url), JournalLog(durable_store_url)
    first.append_chains([_genesis("org.example.a")])
    second.append_chains([_genesis("org.example.b"), _genesis("org.example.c")])
    reader = LogReader(first)
    from_memory = list(reader.notifications_through(0, 3))
    assert no_store_reads == []
    assert from_memory == list(reader.notifications(0))  # what the store holds, in order


def test_a_reader_takes_the_events_the_processs_writers_appended(
    durable_store_url: str,
) -> None:
    """No decoding of what this process encoded: the writer's own (immutable) objects."""
    first, second = JournalLog(durable_store_url), JournalLog(durable_store_url)
    first.append_chains([_genesis("org.example.a")])
    appended = _genesis("org.example.b").collect_events()
    second.append_events(appended)
    reader = LogReader(first)
    from_memory = list(reader.notifications_through(0, 2))
    assert reader.event(from_memory[1]) is appended[0]
    from_store = list(reader.notifications(0))
    decoded = reader.event(from_store[1])
    assert decoded is not appended[0]
    assert vars(decoded) == vars(appended[0])  # what the stored bytes decode to


_APPEND_ONE = """
import sys
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.impl.ref.log import JournalLog
log = JournalLog(sys.argv[1])
log.append_chains([JournalChain.start(parse_journal(sys.stdin.read()))])
log.close()
"""


def test_a_range_holding_another_processs_commit_is_read_from_the_store(
    durable_store_url: str, no_store_reads: list[int]
) -> None:
    ours = JournalLog(durable_store_url)
    ours.append_chains([_genesis("org.example.a")])
    subprocess.run(
        [sys.executable, "-c", _APPEND_ONE, durable_store_url],
        input=journal_text("org.example.theirs", HEAD),
        text=True,
        check=True,
        cwd=REPO,
    )
    ours.append_chains([_genesis("org.example.c")])
    read = list(LogReader(ours).notifications_through(0, 3))
    assert no_store_reads == [0]
    assert [n.id for n in read] == [1, 2, 3]
