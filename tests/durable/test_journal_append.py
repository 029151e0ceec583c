"""Appending revisions to a durable Journal without a root (``JournalAppender``).

Texts are judged against the chains in the store exactly as a root's files
are; a rejected call leaves the store unchanged. Every test runs on SQLite
and on PostgreSQL.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, digest, journal_text, write_chain
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal.exception import (
    ChainViolation,
    JournalChainError,
    JournalConflictError,
    JournalFormatError,
    JournalLayoutError,
    JournalStoreError,
)
from nenjim.journal.impl.ref import (
    JournalAppender,
    JournalFollower,
    append_revisions,
    build_journal,
)
from nenjim.journal.impl.ref.chain_table import CHAIN_TABLE
from nenjim.journal.impl.ref.log import JournalLog

WIDGET = "com.example.widget"
GADGET = "com.example.gadget"
V1, V2, V3 = "20260101T000000Z", "20260102T000000Z", "20260103T000000Z"


def _widget(versions: int = 3) -> Chain:
    chain = Chain(WIDGET)
    for version in (V1, V2, V3)[:versions]:
        chain.add(version, (Rel("1.0.0", content(1)),))
    return chain


def _events(store: str) -> int:
    log = JournalLog(store, create=False)
    try:
        return log.recorder.max_notification_id() or 0
    finally:
        log.close()


def _versions(store: str, root: Path, coordinate: str = WIDGET, **journal: str) -> list[str]:
    """The versions a Journal started afterwards over ``root`` and ``store`` answers."""
    assembly = build_journal(root, store=store, **journal)
    assembly.process.start()
    try:
        return [str(r.version) for r in assembly.service.revisions(coordinate)]
    finally:
        assembly.process.stop()


@pytest.fixture
def rooted(tmp_path: Path, durable_store_url: str) -> tuple[Path, str]:
    """A store owned by a root holding the widget's genesis."""
    root = tmp_path / "root"
    chain = Chain(WIDGET)
    chain.add(V1, (Rel("1.0.0", content(1)),))
    write_chain(root, chain)
    assert _versions(durable_store_url, root) == [V1]
    return root, durable_store_url


def test_appended_revisions_are_answered_by_a_journal_started_afterwards(
    rooted: tuple[Path, str],
) -> None:
    root, store = rooted
    chain = _widget()
    appended = append_revisions(store, chain.texts[1:])
    assert [str(r.version) for r in appended] == [V2, V3]
    assert _versions(store, root) == [V1, V2, V3]
    follower = JournalFollower(store, root=root)
    try:
        head = follower.poll().latest(WIDGET)
        assert head is not None
        assert head.text == chain.texts[2]
    finally:
        follower.close()


def test_texts_are_judged_in_link_order_whatever_order_they_come_in(
    rooted: tuple[Path, str],
) -> None:
    root, store = rooted
    chain = _widget()
    assert len(append_revisions(store, [chain.texts[2], chain.texts[1]])) == 2
    assert _versions(store, root) == [V1, V2, V3]


def test_a_repeated_text_is_accepted_once(rooted: tuple[Path, str]) -> None:
    _root, store = rooted
    chain = _widget(2)
    assert len(append_revisions(store, [chain.texts[1], chain.texts[1]])) == 1
    before = _events(store)
    assert append_revisions(store, chain.texts) == ()
    assert _events(store) == before


def test_a_named_journal_needs_no_root(tmp_path: Path, durable_store_url: str) -> None:
    chain = _widget()
    assert len(append_revisions(durable_store_url, chain.texts, journal="registry")) == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _versions(durable_store_url, empty, journal="registry") == [V1, V2, V3]


def test_a_store_that_holds_no_journal_needs_a_name(tmp_path: Path, durable_store_url: str) -> None:
    JournalLog(durable_store_url).close()  # the tables, no owner
    with pytest.raises(JournalStoreError, match=r"holds no Journal yet: name one \(--journal"):
        JournalAppender(durable_store_url)
    assert _events(durable_store_url) == 0


def test_an_in_memory_store_is_refused() -> None:
    with pytest.raises(JournalStoreError) as raised:
        JournalAppender("memory:")
    assert (
        str(raised.value)
        == "store memory: keeps nothing: revisions are appended to a durable store"
    )


def test_a_store_of_another_journal_is_refused(rooted: tuple[Path, str]) -> None:
    _, store = rooted
    with pytest.raises(JournalStoreError, match="holds the Journal of root"):
        append_revisions(store, _widget().texts, journal="registry")


@pytest.mark.parametrize(
    ("broken", "error", "message"),
    [
        (
            lambda genesis, head: [f"NENJIM-JOURNAL 1\nARTIFACT {WIDGET}\nJOURNAL_VERSION 1\n"],
            JournalFormatError,
            "line 3",
        ),
        (
            lambda genesis, head: [journal_text(WIDGET, V3, predecessor="sha256:" + "e" * 64)],
            JournalChainError,
            "unknown predecessor",
        ),
        (
            lambda genesis, head: [journal_text(WIDGET, V3)],
            JournalChainError,
            "duplicate genesis",
        ),
        (
            lambda genesis, head: [journal_text(WIDGET, "20251231T000000Z", predecessor=head)],
            JournalChainError,
            "journal version not later",
        ),
        (
            lambda genesis, head: [journal_text(GADGET, V2, predecessor=genesis)],
            JournalChainError,
            "predecessor belongs to another artifact",
        ),
        (
            lambda genesis, head: [journal_text(WIDGET, V1, releases=(Rel("2.0.0", content(2)),))],
            JournalConflictError,
            f"JOURNAL_VERSION {V1} is already accepted",
        ),
    ],
    ids=["bad-text", "broken-link", "genesis-again", "out-of-order", "cross-artifact", "dupe"],
)
def test_every_rejection_names_the_artifact_and_leaves_the_store_unchanged(
    rooted: tuple[Path, str],
    broken: object,
    error: type[Exception],
    message: str,
) -> None:
    root, store = rooted
    good = _widget(2).texts[1]  # a valid successor, rejected with the bad text
    before = _events(store)
    texts = broken(digest(_widget(1).texts[0]), digest(good))  # type: ignore[operator]
    with pytest.raises(error, match=message) as raised:
        append_revisions(store, [good, *texts])
    assert "\n" not in str(raised.value)
    assert "com.example" in str(raised.value)
    assert _events(store) == before
    assert _versions(store, root) == [V1]


def test_an_error_names_the_file_and_line(rooted: tuple[Path, str], tmp_path: Path) -> None:
    _, store = rooted
    bad = tmp_path / "bad.txt"
    bad.write_text(f"NENJIM-JOURNAL 1\nARTIFACT {WIDGET}\nJOURNAL_VERSION nope\n")
    with JournalAppender(store) as appender, pytest.raises(JournalFormatError) as raised:
        appender.append_files([bad])
    assert f"path {bad}" in str(raised.value)
    assert "line 3" in str(raised.value)


def test_a_file_named_after_another_version_is_refused(
    rooted: tuple[Path, str], tmp_path: Path
) -> None:
    _, store = rooted
    misnamed = tmp_path / f"{V3}.journal"
    misnamed.write_text(_widget(2).texts[1])
    with JournalAppender(store) as appender, pytest.raises(JournalLayoutError) as raised:
        appender.append_files([misnamed])
    assert str(raised.value) == (
        f"JOURNAL_VERSION {V2} differs from its file name {V3}.journal "
        f"(artifact {WIDGET}, path {misnamed})"
    )


def test_files_named_after_their_version_are_appended(
    rooted: tuple[Path, str], tmp_path: Path
) -> None:
    root, store = rooted
    chain = _widget()
    paths = []
    for version, text in zip(chain.versions[1:], chain.texts[1:], strict=True):
        path = tmp_path / f"{version}.journal"
        path.write_bytes(text.encode())
        paths.append(path)
    with JournalAppender(store) as appender:
        assert len(appender.append_files(paths)) == 2
    assert _versions(store, root) == [V1, V2, V3]


def test_of_two_appenders_racing_on_one_head_only_one_wins(rooted: tuple[Path, str]) -> None:
    root, store = rooted
    genesis = digest(_widget(1).texts[0])
    ours = journal_text(WIDGET, V2, predecessor=genesis, releases=_releases(1))
    theirs = journal_text(WIDGET, V3, predecessor=genesis, releases=_releases(2))
    # Both open (and see the genesis as head) before either appends.
    with JournalAppender(store) as first, JournalAppender(store) as second:
        assert len(first.append([ours])) == 1
        before = _events(store)
        with pytest.raises(JournalChainError) as raised:
            second.append([theirs])
    assert raised.value.reason is ChainViolation.FORK
    assert _events(store) == before
    assert _versions(store, root) == [V1, V2]


def test_racing_threads_each_extend_the_chain_once(rooted: tuple[Path, str]) -> None:
    root, store = rooted
    genesis = digest(_widget(1).texts[0])
    texts = [
        journal_text(WIDGET, f"2026020{n}T000000Z", predecessor=genesis, releases=_releases(n))
        for n in range(1, 5)
    ]
    appenders = [JournalAppender(store) for _ in texts]
    outcomes: list[object] = []
    barrier = threading.Barrier(len(texts))

    def race(appender: JournalAppender, text: str) -> None:
        barrier.wait()
        try:
            outcomes.append(appender.append([text]))
        except JournalChainError as error:
            outcomes.append(error.reason)

    threads = [
        threading.Thread(target=race, args=pair) for pair in zip(appenders, texts, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for appender in appenders:
        appender.close()
    assert sum(isinstance(outcome, tuple) for outcome in outcomes) == 1
    assert outcomes.count(ChainViolation.FORK) == len(texts) - 1
    assert len(_versions(store, root)) == 2


def test_a_root_file_that_differs_from_an_appended_revision_is_a_conflict_at_start(
    rooted: tuple[Path, str],
) -> None:
    root, store = rooted
    append_revisions(store, _widget(2).texts[1:])
    other = journal_text(WIDGET, V2, predecessor=digest(_widget(1).texts[0]), releases=_releases(7))
    (root / WIDGET / f"{V2}.journal").write_text(other)
    assembly = build_journal(root, store=store)
    with pytest.raises(JournalConflictError, match=f"artifact {WIDGET}"):
        assembly.process.start()
    assembly.process.stop()


def test_a_root_holding_the_appended_file_starts_as_before(rooted: tuple[Path, str]) -> None:
    root, store = rooted
    chain = _widget(2)
    append_revisions(store, chain.texts[1:])
    before = _events(store)
    (root / WIDGET / f"{V2}.journal").write_text(chain.texts[1])
    assert _versions(store, root) == [V1, V2]
    assert _events(store) == before


def _releases(n: int) -> tuple[Rel, ...]:
    """The widget's genesis release, plus one of its own per ``n``."""
    return (Rel("1.0.0", content(1)), Rel(f"1.{n + 1}.0", content(100 + n)))


def test_the_chain_projection_is_written_back_when_the_appender_closes(
    rooted: tuple[Path, str],
) -> None:
    _, store = rooted
    chain = _widget()
    with JournalAppender(store) as appender:
        appender.append(chain.texts[1:2])
        appender.append(chain.texts[2:])
    log = JournalLog(store, create=False)
    try:
        assert projection_recorder(log).load(CHAIN_TABLE).position == 3
    finally:
        log.close()
