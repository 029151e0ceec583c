"""A start holds no parse of what it ingested, and decides again on re-parsed texts."""

from __future__ import annotations

import gc
from pathlib import Path

from benchmarks.sample_roots import generate_root
from domain.journal.document import JournalDocument, JournalRevision, Release
from domain.journal.parser import forget_shared_values, parse_journal
from journal.impl.ref.assembly import build_journal
from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.log import JournalLog
from journal_texts import Chain, Rel, content
from projections.journal_chains import JournalChainsProjection

A = "com.example.alpha"


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
    candidates = [
        ("a/1.journal", parse_journal(genesis)),
        ("a/2.journal", parse_journal(successor)),
    ]

    assert starting.ingest_start(candidates) == 1

    assert candidates == []  # handed over: the start kept no parse
    revisions = starting.view.chains[parse_journal(genesis).coordinate].revisions
    assert [r.text for r in revisions] == [genesis, successor]
    assert starting.view.position == 2
