"""A tiled log's committed edge: handed back only for the size a committed append left."""

from __future__ import annotations

import pytest

from nenjim.infrastructure.log.tiles import CommittedEdge, LogEnd


def _end(size: int) -> LogEnd:
    """A log of ``size`` events, each with its entry (ids 1..size)."""
    return LogEnd(size=size, covered=size, last_id=size)


def test_an_edge_is_unknown_until_a_transaction_commits_it() -> None:
    edge = CommittedEdge()
    assert edge.at(0) is None
    with edge.transaction():
        edge.grown(_end(3), "after 3")
        assert edge.at(3) == "after 3"  # inside the transaction that wrote it
        assert not edge.committed
    assert edge.committed
    assert edge.at(3) == "after 3"
    assert edge.at(2) is None
    assert edge.at(4) is None  # another writer appended since: unknown


def test_a_rolled_back_transaction_keeps_the_edge_committed_before() -> None:
    edge = CommittedEdge()
    with edge.transaction():
        edge.grown(_end(3), "after 3")

    def failed_commit() -> None:
        with edge.transaction():
            edge.grown(_end(5), "after 5, rolled back")
            raise RuntimeError("the commit failed")

    with pytest.raises(RuntimeError):
        failed_commit()
    assert edge.at(5) is None
    assert edge.at(3) == "after 3"


def test_a_savepoint_rolled_back_discards_the_pending_edge() -> None:
    edge = CommittedEdge()
    with edge.transaction():
        edge.grown(_end(3), "after 3")
    with edge.transaction():
        edge.grown(_end(4), "after 4, rolled back to its savepoint")
        edge.discard()
        assert edge.at(4) is None
        assert edge.at(3) == "after 3"  # the transaction holds nothing beyond the commit
    assert edge.at(4) is None
    assert edge.at(3) == "after 3"


def test_a_transaction_starts_without_the_pending_edge_of_an_unfinished_one() -> None:
    edge = CommittedEdge()
    edge.grown(_end(2), "grown outside any transaction")
    with edge.transaction():
        assert edge.at(2) is None


def test_the_end_a_committed_append_left_is_known_until_a_later_one_commits() -> None:
    edge = CommittedEdge()
    assert edge.end is None
    with edge.transaction():
        edge.grown(LogEnd(size=3, covered=3, last_id=5), "after 3 entries, 5 events")
        assert edge.end is None  # not committed yet
    assert edge.end == LogEnd(size=3, covered=3, last_id=5)

    def failed_commit() -> None:
        with edge.transaction():
            edge.grown(_end(6), "rolled back")
            raise RuntimeError("the commit failed")

    with pytest.raises(RuntimeError):
        failed_commit()
    assert edge.end == LogEnd(size=3, covered=3, last_id=5)


def test_the_end_before_an_append_is_known_only_right_after_this_processs_last() -> None:
    edge = CommittedEdge()
    assert edge.end_before(1) is None  # nothing committed here
    with edge.transaction():
        edge.grown(_end(3), "after 3")
    assert edge.end_before(4) == _end(3)
    assert edge.end_before(5) is None  # event 4 came from another writer
    with edge.transaction():
        edge.grown(_end(4), "after 4")
        assert edge.end_before(5) == _end(4)  # the open transaction's earlier append
        assert edge.end_before(4) is None
        edge.discard()  # that append was rolled back to its savepoint
        assert edge.end_before(4) == _end(3)


def test_no_end_is_known_before_events_that_lack_their_entries() -> None:
    """Events without entries (an older build's) must be caught up: read what is stored."""
    edge = CommittedEdge()
    with edge.transaction():
        edge.grown(LogEnd(size=3, covered=3, last_id=5), "after 3 entries, 5 events")
    assert edge.end_before(6) is None
