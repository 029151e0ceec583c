"""The digest index check tells a concurrent append from an edit."""

from __future__ import annotations

import re

import pytest

from journal_texts import Chain
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.exception import JournalIntegrityError
from nenjim.journal.impl.ref.digest_index import check_digest_index
from nenjim.projections.journal_chains import ChainSnapshot, JournalWorldview

A = "com.example.alpha"


def _views() -> tuple[JournalWorldview, JournalWorldview, list[str]]:
    chain = Chain(A)
    texts = [chain.add("20260101T000000Z"), chain.add("20260201T000000Z")]
    revisions = [parse_journal(t) for t in texts]
    first = JournalWorldview(
        {revisions[0].coordinate: ChainSnapshot.from_revisions((revisions[0],))}, 1
    )
    both = JournalWorldview(
        {revisions[0].coordinate: ChainSnapshot.from_revisions(tuple(revisions))}, 2
    )
    return first, both, [str(r.digest) for r in revisions]


def test_a_claim_of_a_revision_appended_meanwhile_is_found_by_reading_again() -> None:
    first, both, digests = _views()
    reads = []
    view = check_digest_index(first, dict.fromkeys(digests, A), lambda: reads.append(1) or both)
    assert view is both
    assert reads == [1]


def test_a_consistent_index_is_not_read_again() -> None:
    first, _, digests = _views()
    view = check_digest_index(first, {digests[0]: A}, lambda: pytest.fail("read again"))
    assert view is first


def test_a_claim_without_a_revision_after_reading_again_is_an_edit() -> None:
    first, _, digests = _views()
    with pytest.raises(JournalIntegrityError, match="has no revision"):
        check_digest_index(first, dict.fromkeys(digests, A), lambda: first)


def test_a_revision_without_its_claim_is_an_edit_named_as_such() -> None:
    _, both, digests = _views()
    with pytest.raises(JournalIntegrityError) as raised:
        check_digest_index(both, {digests[0]: A}, lambda: both)
    message = str(raised.value)
    assert f"revision {digests[1]} of {A} has no digest claim" in message
    assert "its claim was deleted, or its text and digest were edited" in message
    assert "None" not in message


def test_a_revision_claimed_by_another_artifact_says_the_claim_was_edited() -> None:
    _, both, digests = _views()
    edited = re.escape("is claimed by 'com.example.other': the claim was edited")
    with pytest.raises(JournalIntegrityError, match=edited):
        check_digest_index(both, dict.fromkeys(digests, "com.example.other"), lambda: both)
