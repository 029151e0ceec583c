"""Texts a writer hands the fold: used only when exactly the event's, never trusted blindly."""

from __future__ import annotations

import pytest

from journal_texts import digest, journal_text
from nenjim.domain.journal.chain import JournalChain, chain_id
from nenjim.domain.journal.parser import parse_journal
from nenjim.projections.journal_chains import JournalChainsProjection, ProjectionIntegrityError

A = "com.example.alpha"


def _genesis(text: str, sha: str) -> JournalChain.GenesisAccepted:
    return JournalChain.GenesisAccepted(  # type: ignore[call-arg]
        originator_id=chain_id(A),
        originator_version=1,
        timestamp=JournalChain.GenesisAccepted.create_timestamp(),
        originator_topic=JournalChain.TOPIC,
        coordinate=A,
        journal_version="20260101T000000Z",
        digest=sha,
        text=text,
    )


def test_a_known_text_other_than_the_events_does_not_vouch_for_it() -> None:
    """The event's text is digested after all when the writer knew another text under its
    digest: a tampered event is refused whatever the writer handed over."""
    vouched = journal_text(A, "20260101T000000Z")
    tampered = vouched + "# edited\n"
    projection = JournalChainsProjection()
    with pytest.raises(ProjectionIntegrityError, match="does not digest"):
        projection.apply([(1, _genesis(tampered, digest(vouched)))], {digest(vouched): vouched})
    assert projection.view.position == 0


@pytest.mark.parametrize("kind", ["text", "revision"])
def test_a_known_text_equal_to_the_events_is_folded_and_parsed_on_first_use(kind: str) -> None:
    """Handed over as text, the revision is parsed when first read; handed over parsed,
    that very object is served."""
    text = journal_text(A, "20260101T000000Z")
    parsed = parse_journal(text)
    known = {digest(text): text if kind == "text" else parsed}
    view = JournalChainsProjection().apply([(1, _genesis(text, digest(text)))], known)
    chain = view.chain(parsed.coordinate)
    assert chain is not None
    assert chain.latest == parsed
    assert (chain.latest is parsed) == (kind == "revision")
