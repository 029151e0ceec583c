"""Explicit, idempotent refresh through the passive manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, journal_text, write_chain, write_revision
from nenjim.journal.exception import JournalChainError, JournalConflictError, JournalFormatError
from nenjim.journal.impl.ref import JournalAssembly, build_journal

A = "com.example.alpha"
B = "com.example.beta"
V1, V2, V3 = "20260101T000000Z", "20260201T000000Z", "20260301T000000Z"


@pytest.fixture
def chain() -> Chain:
    """Alpha's chain, genesis only."""
    chain = Chain(A)
    chain.add(V1, (Rel("1.0.0", content(1)),))
    return chain


@pytest.fixture
def started(tmp_path: Path, chain: Chain) -> JournalAssembly:
    """A Journal started on a root holding ``chain``."""
    write_chain(tmp_path, chain)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    return assembly


def test_unchanged_refresh_is_idempotent(started: JournalAssembly) -> None:
    before = started.service.revisions(A)
    assert started.manager.refresh().accepted == ()
    assert started.manager.refresh().accepted == ()
    assert started.service.revisions(A) == before


def test_refresh_discovers_a_new_successor(
    started: JournalAssembly, chain: Chain, tmp_path: Path
) -> None:
    text = chain.add(V2, (Rel("1.0.0", content(1)), Rel("1.1.0", content(2))))
    write_revision(tmp_path, A, V2, text)
    report = started.manager.refresh()
    assert [str(r.version) for r in report.accepted] == [V2]
    latest = started.service.latest(A)
    assert latest is not None
    assert latest.text == text
    assert [str(r.version) for r in started.service.revisions(A)] == [V1, V2]
    assert started.manager.refresh().accepted == ()


def test_refresh_discovers_new_artifacts_and_several_successors(
    started: JournalAssembly, chain: Chain, tmp_path: Path
) -> None:
    chain.add(V2, (Rel("1.0.0", content(1)),))
    chain.add(V3, (Rel("1.0.0", content(1)),))
    write_chain(tmp_path, chain)
    write_revision(tmp_path, B, V2, journal_text(B, V2))
    report = started.manager.refresh()
    assert [(str(r.coordinate), str(r.version)) for r in report.accepted] == [
        (A, V2),
        (A, V3),
        (B, V2),
    ]


def test_a_changed_accepted_file_is_a_conflict(
    started: JournalAssembly, chain: Chain, tmp_path: Path
) -> None:
    path = tmp_path / A / f"{V1}.journal"
    path.write_text(chain.texts[0] + "# edited after acceptance\n")
    with pytest.raises(JournalConflictError) as caught:
        started.manager.refresh()
    assert caught.value.path == path
    latest = started.service.latest(A)
    assert latest is not None
    assert latest.text == chain.texts[0]


def test_deleted_files_keep_their_history(started: JournalAssembly, tmp_path: Path) -> None:
    (tmp_path / A / f"{V1}.journal").unlink()
    assert started.manager.refresh().accepted == ()
    assert len(started.service.revisions(A)) == 1


def test_a_bad_new_file_fails_refresh_and_changes_nothing(
    started: JournalAssembly, chain: Chain, tmp_path: Path
) -> None:
    write_revision(tmp_path, A, V2, chain.add(V2, (Rel("1.0.0", content(1)),)))
    write_revision(tmp_path, B, V2, "NENJIM-JOURNAL 1\nARTIFACT com.example.beta\nBOGUS x\n")
    with pytest.raises(JournalFormatError):
        started.manager.refresh()
    # Every file is read and parsed before any is ingested.
    assert len(started.service.revisions(A)) == 1


def test_a_chain_error_keeps_earlier_ingestions_of_the_same_refresh(
    started: JournalAssembly, chain: Chain, tmp_path: Path
) -> None:
    write_revision(tmp_path, A, V2, chain.add(V2, (Rel("1.0.0", content(1)),)))
    write_revision(tmp_path, B, V2, journal_text(B, V2, predecessor=content(8)))
    with pytest.raises(JournalChainError):
        started.manager.refresh()
    # One atomic ingestion per file: alpha's successor was accepted before beta failed.
    assert len(started.service.revisions(A)) == 2
    assert started.service.latest(B) is None


def test_manager_refresh_reaches_the_same_journal_object(
    started: JournalAssembly, chain: Chain, tmp_path: Path
) -> None:
    write_revision(tmp_path, A, V2, chain.add(V2, (Rel("1.0.0", content(1)),)))
    started.manager.refresh()
    latest = started.process  # the process view is the service object itself
    assert latest is started.service
    head = started.service.latest(A)
    assert head is not None
    assert str(head.version) == V2
