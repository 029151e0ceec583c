"""``JournalFollower``'s public contract: public types out, Journal errors only, the
Journal it follows named as users know it. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, write_chain
from nenjim.journal import JournalService
from nenjim.journal.exception import InvalidValueError, JournalStoreError
from nenjim.journal.impl.ref import JournalFollower, build_journal

A = "com.example.alpha"


def _loaded(root: Path, store: str, journal: str | None = None) -> Path:
    chain = Chain(A)
    chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),))
    write_chain(root, chain)
    assembly = build_journal(root, store=store, journal=journal)
    assembly.process.start()
    assembly.process.stop()
    return root


def test_views_are_journal_services_that_always_answer(
    tmp_path: Path, durable_store_url: str
) -> None:
    root = _loaded(tmp_path / "root", durable_store_url)
    follower = JournalFollower(durable_store_url, root=root)
    try:
        before = follower.view
        assert isinstance(before, JournalService)
        assert before.coordinates() == frozenset()
        view = follower.poll()
        assert isinstance(view, JournalService)
        assert {str(c) for c in view.coordinates()} == {A}
        latest = view.latest(A)
        assert latest is not None
        assert str(latest.version) == "20260101T000000Z"
        assert view.release(A, "20260101T000000Z", "1.0.0") is not None
        assert follower.view is view
        assert before.coordinates() == frozenset()  # a view never changes
    finally:
        follower.close()


def test_follow_hands_journal_services_to_its_callback(
    tmp_path: Path, durable_store_url: str
) -> None:
    root = _loaded(tmp_path / "root", durable_store_url)
    follower = JournalFollower(durable_store_url, root=root, interval=0.05)
    seen: list[JournalService] = []
    arrived = threading.Event()

    def on_view(view: JournalService) -> None:
        seen.append(view)
        arrived.set()

    thread = threading.Thread(target=follower.follow, args=(on_view,))
    thread.start()
    try:
        assert arrived.wait(30)
    finally:
        follower.close()
        thread.join(30)
    assert not thread.is_alive()
    assert isinstance(seen[0], JournalService)
    assert {str(c) for c in seen[0].coordinates()} == {A}


def test_a_root_given_through_a_link_is_the_same_journal(
    tmp_path: Path, durable_store_url: str
) -> None:
    root = _loaded(tmp_path / "root", durable_store_url)
    link = tmp_path / "link"
    link.symlink_to(root)
    follower = JournalFollower(durable_store_url, root=link)
    try:
        assert {str(c) for c in follower.poll().coordinates()} == {A}
    finally:
        follower.close()


def test_another_root_is_refused_naming_each_root_once(
    tmp_path: Path, durable_store_url: str
) -> None:
    root = _loaded(tmp_path / "root", durable_store_url)
    other = tmp_path / "other"
    with pytest.raises(JournalStoreError) as refused:
        JournalFollower(durable_store_url, root=other)
    message = str(refused.value)
    assert f"holds the Journal of root {root.resolve()}, not the Journal of root {other}" in (
        message
    )
    assert message.count(str(root.resolve())) == 1


def test_a_named_journal_is_followed_by_its_name(tmp_path: Path, durable_store_url: str) -> None:
    _loaded(tmp_path / "root", durable_store_url, journal="widgets")
    follower = JournalFollower(durable_store_url, journal="widgets")
    try:
        assert {str(c) for c in follower.poll().coordinates()} == {A}
    finally:
        follower.close()
    with pytest.raises(JournalStoreError, match="the Journal named 'widgets', not the Journal"):
        JournalFollower(durable_store_url, journal="gadgets")
    with pytest.raises(JournalStoreError, match="not the Journal of root"):
        JournalFollower(durable_store_url, root=tmp_path / "root")
    with pytest.raises(InvalidValueError, match="invalid Journal name"):
        JournalFollower(durable_store_url, journal="Not A Name")
    with pytest.raises(TypeError, match="journal= or root=, not both"):
        JournalFollower(durable_store_url, journal="widgets", root=tmp_path / "root")


def test_a_closed_followers_view_reports_the_store_as_a_journal_error(
    tmp_path: Path, durable_store_url: str
) -> None:
    root = _loaded(tmp_path / "root", durable_store_url)
    follower = JournalFollower(durable_store_url, root=root)
    view = follower.poll()  # the persisted rows: texts are read from the log when first asked
    follower.close()
    with pytest.raises(JournalStoreError, match="used after close"):
        view.latest(A)
    with pytest.raises(JournalStoreError, match="used after close"):
        follower.poll()
    follower.close()  # idempotent


def test_a_store_that_cannot_be_followed_is_a_journal_store_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(JournalStoreError, match=f"SQLite store {missing} does not exist"):
        JournalFollower(f"sqlite://{missing}")
    assert not missing.exists()
    with pytest.raises(JournalStoreError, match="memory: is empty"):
        JournalFollower("memory:")
    with pytest.raises(JournalStoreError, match="unsupported store URL"):
        JournalFollower("ftp://example.com/log")
