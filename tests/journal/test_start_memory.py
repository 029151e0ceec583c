"""A start holds no parse of what it ingested, decides again on re-parsed texts, and
writes its events in batches inside one transaction."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.sample_roots import generate_root
from journal_texts import Chain, Rel, content
from nenjim.domain.journal.document import JournalDocument, JournalRevision, Release
from nenjim.domain.journal.errors import JournalChainError
from nenjim.domain.journal.parser import forget_shared_values, parse_journal
from nenjim.infrastructure.log import Claim
from nenjim.journal.impl.ref.assembly import build_journal
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import APPEND_BATCH, DIGEST_NAMESPACE, Event, JournalLog
from nenjim.journal.impl.ref.transparency import RevisionEvent, revision_leaf
from nenjim.projections.journal_chains import JournalChainsProjection

A, B, C, D = "com.example.alpha", "com.example.beta", "com.example.gamma", "com.example.delta"


def _alive(kind: type) -> int:
    gc.collect()
    return sum(1 for item in gc.get_objects() if isinstance(item, kind))


def test_a_start_holds_no_parsed_revision_until_one_is_asked_for(tmp_path: Path) -> None:
    """The start parses every file to judge it, then keeps only texts: a revision is parsed
    again on first use (and the same object is handed out afterwards)."""
    root = tmp_path / "root"
    written = generate_root(root, artifacts=12, revisions=4, seed=3)
    assembly = build_journal(root)
    revisions_before, documents_before = _alive(JournalRevision), _alive(JournalDocument)
    forget_shared_values()  # what earlier tests parsed
    releases_before = _alive(Release)
    assembly.process.start()
    try:
        assert _alive(JournalRevision) == revisions_before
        assert _alive(JournalDocument) == documents_before
        assert _alive(Release) == releases_before  # nor do the parser's sharing caches
        service = assembly.service
        coordinate = sorted(service.coordinates())[0]
        first = service.revisions(coordinate)
        assert len(first) == written // 12
        assert service.revisions(coordinate) == first
        assert all(a is b for a, b in zip(first, service.revisions(coordinate), strict=True))
        path = root / str(coordinate) / f"{first[-1].version}.journal"
        assert first[-1] == parse_journal(path.read_text(encoding="utf-8"))
    finally:
        assembly.process.stop()


def test_a_start_that_loses_the_race_for_a_head_decides_again_on_the_texts(
    log: JournalLog,
) -> None:
    """Another writer appends the start's genesis first: the append conflicts, and the
    start decides again on a caught-up view from its texts (parsed again), so only the
    successor is new."""
    chain = Chain(A)
    genesis = chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),))
    successor = chain.add("20260201T000000Z", (Rel("1.0.0", content(1)), Rel("1.1.0", content(2))))
    starting = JournalIngestion(log, JournalChainsProjection())
    starting.catch_up()
    JournalIngestion(log, JournalChainsProjection()).ingest_text(genesis)
    candidates = (parse_journal(text) for text in (genesis, successor))

    assert starting.ingest_start(candidates, _locate) == 1

    assert next(candidates, None) is None  # read to the end, one parse at a time
    revisions = starting.view.chains[parse_journal(genesis).coordinate].revisions
    assert [r.text for r in revisions] == [genesis, successor]
    assert starting.view.position == 2


class _SmallBatches(JournalLog):
    """A Journal log whose appends write two events at a time; another writer may
    claim a digest just before the next append begins."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed_first: str | None = None

    def append_events(
        self, events: Sequence[Event], *, batch_size: int = APPEND_BATCH
    ) -> list[int]:
        if self.claimed_first is not None:
            self.append([], [Claim(DIGEST_NAMESPACE, self.claimed_first, B)])
        return super().append_events(events, batch_size=2)


def _locate(revision: JournalRevision) -> str:
    return f"{revision.coordinate}/{revision.version}.journal"


def _three_artifacts() -> list[JournalRevision]:
    """Five revisions of three artifacts, in chain order (three batches of two at most)."""
    texts = []
    for artifact, count in ((A, 2), (C, 2), (D, 1)):
        chain = Chain(artifact)
        for n in range(count):
            releases = tuple(Rel(f"1.{m}.0", content(m)) for m in range(n + 1))
            texts.append(chain.add(f"2026010{n + 1}T000000Z", releases))
    return [parse_journal(text) for text in texts]


def test_a_start_larger_than_a_batch_is_written_in_one_piece(journal_store: str) -> None:
    log = _SmallBatches()
    starting = JournalIngestion(log, JournalChainsProjection())
    starting.catch_up()
    candidates = _three_artifacts()

    assert starting.ingest_start(iter(candidates), _locate) == 5

    stored = log.recorder.select_notifications(start=None, limit=10)
    assert [n.id for n in stored] == [1, 2, 3, 4, 5]
    assert log.digest_claims() == {
        str(revision.digest): str(revision.coordinate) for revision in candidates
    }
    events = [log.mapper.to_domain_event(n) for n in stored]
    assert [e.digest for e in events if isinstance(e, RevisionEvent)] == [
        str(revision.digest) for revision in candidates
    ]
    leaves = [revision_leaf(e) for e in events if isinstance(e, RevisionEvent)]
    expected = [(n.id, leaf) for n, leaf in zip(stored, leaves, strict=True)]
    assert log.tiled_log.read_entries(0, 10) == expected
    assert starting.view.position == 5


def test_a_start_that_fails_in_a_late_batch_writes_nothing(journal_store: str) -> None:
    """The last revision's digest is claimed by another artifact just before the append:
    the third batch is refused, and the two written before it are rolled back."""
    log = _SmallBatches()
    starting = JournalIngestion(log, JournalChainsProjection())
    starting.catch_up()
    candidates = _three_artifacts()
    last = str(candidates[-1].digest)
    log.claimed_first = last

    with pytest.raises(JournalChainError, match="owned by"):
        starting.ingest_start(iter(candidates), _locate)

    assert log.recorder.max_notification_id() in (None, 0)
    assert log.digest_claims() == {last: B}
    assert log.tiled_log.entry_count() == 0
    assert starting.view.position == 0
