"""The projection refuses a log that contradicts itself, at fold time or on first parse."""

from __future__ import annotations

import pytest

from journal_texts import Chain, digest, journal_text
from nenjim.domain.journal.chain import JournalChain, chain_id
from nenjim.projections.journal_chains import JournalChainsProjection, ProjectionIntegrityError

A = "com.example.alpha"


def _genesis(
    text: str, *, coordinate: str = A, version: str = "20260101T000000Z", sha: str | None = None
) -> JournalChain.GenesisAccepted:
    return JournalChain.GenesisAccepted(  # type: ignore[call-arg]
        originator_id=chain_id(coordinate),
        originator_version=1,
        timestamp=JournalChain.GenesisAccepted.create_timestamp(),
        originator_topic=JournalChain.TOPIC,
        coordinate=coordinate,
        journal_version=version,
        digest=sha or digest(text),
        text=text,
    )


def test_a_text_that_does_not_digest_to_its_event_is_refused_when_folded() -> None:
    text = journal_text(A, "20260101T000000Z")
    projection = JournalChainsProjection()
    with pytest.raises(ProjectionIntegrityError, match="does not digest"):
        projection.apply([(1, _genesis(text, sha=digest(text + "#")))])
    assert projection.view.position == 0


def test_a_text_of_another_version_is_refused_when_first_parsed() -> None:
    text = journal_text(A, "20260101T000000Z")
    projection = JournalChainsProjection()
    view = projection.apply([(1, _genesis(text, version="20260202T000000Z"))])
    chain = view.chain(next(iter(view.chains)))
    assert chain is not None
    with pytest.raises(ProjectionIntegrityError, match="its event says"):
        _ = chain.latest


def test_a_successor_that_does_not_follow_the_head_is_refused() -> None:
    chain = Chain(A)
    genesis = chain.add("20260101T000000Z")
    projection = JournalChainsProjection()
    projection.apply([(1, _genesis(genesis))])
    stray = journal_text(A, "20260201T000000Z", predecessor=digest("something else"))
    successor = JournalChain.SuccessorAccepted(  # type: ignore[call-arg]
        originator_id=chain_id(A),
        originator_version=2,
        timestamp=JournalChain.SuccessorAccepted.create_timestamp(),
        coordinate=A,
        journal_version="20260201T000000Z",
        digest=digest(stray),
        predecessor=digest("something else"),
        text=stray,
    )
    with pytest.raises(ProjectionIntegrityError, match="does not follow"):
        projection.apply([(2, successor)])
    assert projection.view.position == 1
