"""Chain, history, idempotency and conflict rules, through the internal ingestion."""

from __future__ import annotations

import pytest

from journal_texts import Chain, Rel, content, digest, journal_text
from nenjim.domain.journal.errors import (
    ChainViolation,
    JournalChainError,
    JournalConflictError,
    JournalError,
    JournalFormatError,
)
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import Claim
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog

A = "com.example.alpha"
B = "com.example.beta"


def _events(log: JournalLog) -> int:
    return log.recorder.max_notification_id() or 0


def _reject(
    ingestion: JournalIngestion, log: JournalLog, text: str, error: type[JournalError]
) -> JournalError:
    """Ingest ``text``, expect ``error``, and check nothing changed."""
    view, events = ingestion.view, _events(log)
    with pytest.raises(error) as caught:
        ingestion.ingest_text(text)
    assert ingestion.view is view
    assert _events(log) == events
    return caught.value


def test_genesis_becomes_queryable_under_its_coordinate(ingestion: JournalIngestion) -> None:
    text = journal_text(A, "20260101T000000Z", releases=(Rel("1.0.0"),))
    revision, accepted = ingestion.ingest_text(text)
    assert accepted
    chain = ingestion.view.chain(revision.coordinate)
    assert chain is not None
    assert chain.revisions == (revision,)
    assert str(revision.digest) == digest(text)


def test_valid_successor_becomes_head_and_predecessor_stays(ingestion: JournalIngestion) -> None:
    chain = Chain(A)
    first = ingestion.ingest_text(chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),)))[0]
    second = ingestion.ingest_text(
        chain.add("20260201T000000Z", (Rel("1.0.0", content(1)), Rel("1.1.0", content(2))))
    )[0]
    snapshot = ingestion.view.chain(first.coordinate)
    assert snapshot is not None
    assert snapshot.latest == second
    assert snapshot.revisions == (first, second)


def test_unknown_predecessor_is_rejected(ingestion: JournalIngestion, log: JournalLog) -> None:
    ingestion.ingest_text(journal_text(A, "20260101T000000Z"))
    error = _reject(
        ingestion,
        log,
        journal_text(A, "20260201T000000Z", predecessor=content(99)),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.UNKNOWN_PREDECESSOR
    assert error.artifact == A


def test_successor_without_any_chain_is_unknown_predecessor(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    error = _reject(
        ingestion,
        log,
        journal_text(A, "20260201T000000Z", predecessor=content(9)),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.UNKNOWN_PREDECESSOR


def test_cross_artifact_predecessor_is_rejected_and_both_chains_unchanged(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    alpha = journal_text(A, "20260101T000000Z")
    ingestion.ingest_text(alpha)
    ingestion.ingest_text(journal_text(B, "20260101T000000Z"))
    error = _reject(
        ingestion,
        log,
        journal_text(B, "20260201T000000Z", predecessor=digest(alpha)),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.CROSS_ARTIFACT_PREDECESSOR
    assert A in str(error)


def test_fork_from_a_non_head_predecessor_is_rejected(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    chain = Chain(A)
    genesis = chain.add("20260101T000000Z")
    ingestion.ingest_text(genesis)
    ingestion.ingest_text(chain.add("20260201T000000Z"))
    error = _reject(
        ingestion,
        log,
        journal_text(A, "20260301T000000Z", predecessor=digest(genesis)),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.FORK


def test_second_genesis_is_rejected(ingestion: JournalIngestion, log: JournalLog) -> None:
    ingestion.ingest_text(journal_text(A, "20260101T000000Z"))
    error = _reject(ingestion, log, journal_text(A, "20260201T000000Z"), JournalChainError)
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.DUPLICATE_GENESIS


def test_successor_earlier_than_predecessor_is_rejected(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    genesis = journal_text(A, "20260201T000000Z")
    ingestion.ingest_text(genesis)
    error = _reject(
        ingestion,
        log,
        journal_text(A, "20260101T000000Z", predecessor=digest(genesis)),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.NON_INCREASING_VERSION


def test_successor_at_the_predecessors_version_fails_as_a_conflict(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    # Equal versions break two rules at once; the identity rule (a different
    # text for an accepted artifact + version) is reported.
    genesis = journal_text(A, "20260101T000000Z")
    ingestion.ingest_text(genesis)
    _reject(
        ingestion,
        log,
        journal_text(A, "20260101T000000Z", predecessor=digest(genesis)),
        JournalConflictError,
    )


def test_release_may_not_disappear(ingestion: JournalIngestion, log: JournalLog) -> None:
    chain = Chain(A)
    ingestion.ingest_text(chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),)))
    error = _reject(
        ingestion,
        log,
        journal_text(A, "20260201T000000Z", predecessor=digest(chain.texts[-1])),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.RELEASE_REMOVED
    assert "1.0.0" in str(error)


def test_release_content_may_not_change(ingestion: JournalIngestion, log: JournalLog) -> None:
    chain = Chain(A)
    ingestion.ingest_text(chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),)))
    error = _reject(
        ingestion,
        log,
        journal_text(
            A,
            "20260201T000000Z",
            predecessor=digest(chain.texts[-1]),
            releases=(Rel("1.0.0", content(2)),),
        ),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.CONTENT_CHANGED


def test_history_rules_hold_across_the_whole_chain(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    """A release kept by every successor stays protected three revisions later."""
    chain = Chain(A)
    one = Rel("1.0.0", content(1))
    ingestion.ingest_text(chain.add("20260101T000000Z", (one,)))
    ingestion.ingest_text(chain.add("20260201T000000Z", (one, Rel("1.1.0", content(2)))))
    yanked = Rel("1.0.0", content(1), extra=('POLICY yanked "broken"',))
    third, accepted = ingestion.ingest_text(
        chain.add("20260301T000000Z", (yanked, Rel("1.1.0", content(2))))
    )
    assert accepted
    release = third.release("1.0.0")
    assert release is not None
    assert release.policy.status.value == "yanked"
    error = _reject(
        ingestion,
        log,
        journal_text(
            A,
            "20260401T000000Z",
            predecessor=digest(chain.texts[-1]),
            releases=(Rel("1.0.0", content(7)), Rel("1.1.0", content(2))),
        ),
        JournalChainError,
    )
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.CONTENT_CHANGED


def test_same_text_again_is_idempotent(ingestion: JournalIngestion, log: JournalLog) -> None:
    chain = Chain(A)
    first, _ = ingestion.ingest_text(chain.add("20260101T000000Z"))
    ingestion.ingest_text(chain.add("20260201T000000Z"))
    view, events = ingestion.view, _events(log)
    again, accepted = ingestion.ingest_text(chain.texts[0])
    assert not accepted
    assert again is first
    assert ingestion.view is view
    assert _events(log) == events


def test_different_text_at_accepted_version_is_a_conflict_even_if_equal_in_meaning(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    text = journal_text(A, "20260101T000000Z", releases=(Rel("1.0.0"),))
    first, _ = ingestion.ingest_text(text)
    variant = text.replace("RELEASE 1.0.0", "# a comment changes the digest\nRELEASE 1.0.0")
    error = _reject(ingestion, log, variant, JournalConflictError)
    assert error.artifact == A
    assert str(first.digest) in str(error)


@pytest.mark.parametrize("text", [None, b"NENJIM-JOURNAL 1\n", 42])
def test_non_text_is_a_type_error(ingestion: JournalIngestion, text: object) -> None:
    with pytest.raises(TypeError):
        ingestion.ingest_text(text)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "   ", " \n\t\n"])
def test_empty_or_blank_text_is_rejected(
    ingestion: JournalIngestion, log: JournalLog, text: str
) -> None:
    _reject(ingestion, log, text, JournalFormatError)


def test_failed_batch_appends_nothing(ingestion: JournalIngestion, log: JournalLog) -> None:
    good = parse_journal(journal_text(A, "20260101T000000Z"))
    bad = parse_journal(journal_text(B, "20260101T000000Z", predecessor=content(5)))
    with pytest.raises(JournalChainError):
        ingestion.ingest_all([good, bad])
    assert _events(log) == 0
    assert ingestion.view.chains == {}


def test_a_digest_claimed_by_another_artifact_is_refused(
    ingestion: JournalIngestion, log: JournalLog
) -> None:
    text = journal_text(A, "20260101T000000Z")
    log.append([], [Claim(DIGEST_NAMESPACE, digest(text), B)])
    error = _reject(ingestion, log, text, JournalChainError)
    assert isinstance(error, JournalChainError)
    assert error.reason is ChainViolation.DIGEST_TAKEN
