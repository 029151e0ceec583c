"""The internal ingestion entry point: one text, judged as a root file's, queryable at once."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, journal_text, write_chain, write_revision
from nenjim.journal import JournalServiceManager
from nenjim.journal.exception import (
    JournalChainError,
    JournalConflictError,
    JournalFormatError,
    JournalRootError,
    LifecycleError,
)
from nenjim.journal.impl.ref import JournalAssembly, build_journal
from nenjim.journal.impl.ref.manager import ingest_text
from nenjim.journal.model import RefreshReport

A = "com.example.alpha"
B = "com.example.beta"
GENESIS = journal_text(A, "20260101T000000Z", releases=(Rel("1.0.0", content(1)),))


def _started(root: Path, store: str | None = None) -> JournalAssembly:
    root.mkdir(exist_ok=True)
    assembly = build_journal(root, store=store)
    assembly.process.start()
    return assembly


def test_a_valid_genesis_is_queryable_at_once_under_its_coordinate(tmp_path: Path) -> None:
    assembly = _started(tmp_path)
    revision = ingest_text(assembly.manager, GENESIS)
    service = assembly.service
    assert service.coordinates() == frozenset({revision.coordinate})
    assert str(revision.coordinate) == A
    assert service.latest(A) == revision
    assert service.revisions(A) == (revision,)
    assert service.revision(A, "20260101T000000Z") == revision
    assert service.as_of(A, "20991231T000000Z") == revision
    release = service.release(A, "20260101T000000Z", "1.0.0")
    assert release is not None
    assert str(release.content) == content(1)
    assembly.process.stop()


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_the_digest_is_of_the_exact_text_bytes(tmp_path: Path, newline: str) -> None:
    assembly = _started(tmp_path)
    text = journal_text(A, "20260101T000000Z", newline=newline) + newline
    revision = ingest_text(assembly.manager, text)
    assert str(revision.digest) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    latest = assembly.service.latest(A)
    assert latest is not None
    assert latest.text == text
    assembly.process.stop()


def test_a_successor_of_a_loaded_file_becomes_the_head(tmp_path: Path) -> None:
    chain = Chain(A)
    chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),))
    write_chain(tmp_path, chain)
    assembly = _started(tmp_path)
    successor = chain.add("20260201T000000Z", (Rel("1.0.0", content(1)), Rel("1.1.0", content(2))))
    revision = ingest_text(assembly.manager, successor)
    assert assembly.service.latest(A) == revision
    assert [str(r.version) for r in assembly.service.revisions(A)] == [
        "20260101T000000Z",
        "20260201T000000Z",
    ]
    assembly.process.stop()


def test_a_repeated_text_returns_the_revision_accepted_before(tmp_path: Path) -> None:
    assembly = _started(tmp_path)
    first = ingest_text(assembly.manager, GENESIS)
    again = ingest_text(assembly.manager, GENESIS)
    assert again == first
    assert assembly.service.revisions(A) == (first,)
    assembly.process.stop()


def _rejected_texts() -> list[tuple[str, object, type[Exception]]]:
    orphan = journal_text(B, "20260101T000000Z", predecessor="sha256:" + "0" * 64)
    other = journal_text(A, "20260101T000000Z", releases=(Rel("2.0.0", content(9)),))
    return [
        ("none", None, TypeError),
        ("bytes", GENESIS.encode(), TypeError),
        ("empty", "", JournalFormatError),
        ("blank", "  \n\t\n", JournalFormatError),
        ("byte-order mark", "\ufeff" + GENESIS, JournalFormatError),
        ("structure", "NENJIM-JOURNAL 1\nARTIFACT com.example.beta\n", JournalFormatError),
        ("unknown predecessor", orphan, JournalChainError),
        ("duplicate genesis", journal_text(A, "20260301T000000Z"), JournalChainError),
        ("conflict", other, JournalConflictError),
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [(text, error) for _, text, error in _rejected_texts()],
    ids=[name for name, _, _ in _rejected_texts()],
)
def test_a_rejected_text_changes_nothing(
    tmp_path: Path, text: object, error: type[Exception]
) -> None:
    assembly = _started(tmp_path)
    accepted = ingest_text(assembly.manager, GENESIS)
    with pytest.raises(error):
        ingest_text(assembly.manager, text)  # type: ignore[arg-type]
    assert assembly.service.coordinates() == frozenset({accepted.coordinate})
    assert assembly.service.revisions(A) == (accepted,)
    assert assembly.manager.refresh() == RefreshReport(())
    assembly.process.stop()


@pytest.mark.parametrize("text", [GENESIS, None, ""], ids=["valid", "none", "empty"])
def test_the_lifecycle_is_checked_before_the_text(tmp_path: Path, text: object) -> None:
    assembly = build_journal(tmp_path)
    with pytest.raises(LifecycleError, match="not started"):
        ingest_text(assembly.manager, text)  # type: ignore[arg-type]
    failed = build_journal(tmp_path / "missing")
    with pytest.raises(JournalRootError):
        failed.process.start()
    with pytest.raises(LifecycleError, match="failed to start"):
        ingest_text(failed.manager, text)  # type: ignore[arg-type]
    assembly.process.start()
    assembly.process.stop()
    with pytest.raises(LifecycleError, match="stopped"):
        ingest_text(assembly.manager, text)  # type: ignore[arg-type]


def test_only_the_manager_of_build_journal_is_taken(tmp_path: Path) -> None:
    class Other(JournalServiceManager):
        @property
        def journal_root(self) -> Path:
            return tmp_path

        def refresh(self) -> RefreshReport:
            return RefreshReport()

    with pytest.raises(TypeError, match="needs the manager of build_journal, got Other"):
        ingest_text(Other(), GENESIS)


def test_an_ingested_text_is_kept_by_the_store_and_a_different_file_conflicts(
    tmp_path: Path, journal_store: str
) -> None:
    # ``memory:`` keeps nothing between two Journals: restart over a file instead.
    store = f"sqlite:///{tmp_path / 'j.db'}" if journal_store == "memory:" else journal_store
    root = tmp_path / "root"
    first = _started(root, store)
    revision = ingest_text(first.manager, GENESIS)
    first.process.stop()
    again = _started(root, store)
    assert again.service.latest(A) == revision  # no file: its text comes from the log
    other = journal_text(A, "20260101T000000Z", releases=(Rel("2.0.0", content(9)),))
    write_revision(root, A, "20260101T000000Z", other)
    with pytest.raises(JournalConflictError):
        again.manager.refresh()
    again.process.stop()
