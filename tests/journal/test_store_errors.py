"""A store the Journal cannot use is a ``nenjim.journal.exception.JournalStoreError``, whenever it
shows: at ``build_journal`` or at ``start()``."""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_texts import journal_text, write_revision
from nenjim.infrastructure.log import StoreUnavailableError, UnsupportedStoreError
from nenjim.journal.exception import JournalStoreError
from nenjim.journal.impl.ref import build_journal

A = "com.example.alpha"


def _root(path: Path) -> Path:
    write_revision(path, A, "20260101T000000Z", journal_text(A, "20260101T000000Z"))
    return path


@pytest.mark.parametrize("exists", [True, False], ids=["root", "no-root-yet"])
def test_an_unsupported_store_url_is_refused_at_build(tmp_path: Path, exists: bool) -> None:
    root = _root(tmp_path / "root") if exists else tmp_path / "root"
    with pytest.raises(JournalStoreError, match="unsupported store URL 'ftp://x/y'") as refused:
        build_journal(root, store="ftp://x/y")
    assert isinstance(refused.value.__cause__, UnsupportedStoreError)


def test_a_store_that_cannot_be_created_is_refused_at_build(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'absent' / 'j.db'}"
    with pytest.raises(JournalStoreError, match=r"directory .* does not exist") as refused:
        build_journal(_root(tmp_path / "root"), store=store)
    assert isinstance(refused.value.__cause__, StoreUnavailableError)


def test_a_store_opened_at_start_reports_the_same_error_there(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assembly = build_journal(root, store=f"sqlite:///{tmp_path / 'absent' / 'j.db'}")
    _root(root)
    with pytest.raises(JournalStoreError, match=r"directory .* does not exist"):
        assembly.process.start()
    assert not (tmp_path / "absent").exists()


def test_a_store_another_root_claimed_meanwhile_is_refused_at_start(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'j.db'}"
    late = tmp_path / "late"
    assembly = build_journal(late, store=store)  # opens nothing yet
    first = build_journal(_root(tmp_path / "first"), store=store)
    first.process.start()
    first.process.stop()
    _root(late)
    with pytest.raises(JournalStoreError, match=r"holds the Journal of root .*first, not the"):
        assembly.process.start()
