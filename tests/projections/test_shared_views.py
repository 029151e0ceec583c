"""Projections of one log in one process share the views they fold.

Independent writers of a process each keep a projection of the same log, and
after each commit each one folds every other writer's events. A projection
that catches up with ``shared`` starts from the newest view another one
shared up to where it must reach: the same view, since what lies at a
position of a log is what every reader reads there.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from worldviews import contents

from journal_texts import journal_text
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import LogReader
from nenjim.journal.impl.ref.chain_log import catch_up, share
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import ChainFold, JournalChainsProjection

HEAD = "20260101T000000Z"


def _revision(name: str) -> JournalRevision:
    return parse_journal(journal_text(name, HEAD))


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions of the events folded one by one."""
    folded: list[int] = []
    original = ChainFold.add

    def counted(self: ChainFold, position: int, event: object) -> object:
        folded.append(position)
        return original(self, position, event)

    monkeypatch.setattr(ChainFold, "add", counted)
    return folded


@pytest.fixture
def log(durable_store_url: str) -> Iterator[JournalLog]:
    opened = JournalLog(durable_store_url)
    yield opened
    opened.close()


def test_an_ingestion_starts_from_what_another_of_the_process_folded(
    durable_store_url: str, folds: list[int]
) -> None:
    first = JournalIngestion(JournalLog(durable_store_url), JournalChainsProjection())
    second = JournalIngestion(JournalLog(durable_store_url), JournalChainsProjection())
    for n in range(10):
        first.ingest(_revision(f"org.example.a{n}"))
    first.close()  # what it shared stays readable: its revisions hold their texts
    folds.clear()
    own = _revision("org.example.b")
    stored, is_new = second.ingest(own)
    assert is_new
    assert folds == [11]  # its own revision only, not the first ingestion's ten again
    assert stored is own  # its own parse stays in its view
    fresh = JournalChainsProjection()
    catch_up(fresh, LogReader(JournalLog(durable_store_url)))
    assert contents(second.view) == contents(fresh.view)
    assert second.view.settle() is second.view  # every text is at hand


def _appended(log: JournalLog, *names: str) -> list[JournalRevision]:
    revisions = [_revision(name) for name in names]
    log.append_chains([JournalChain.start(revision) for revision in revisions])
    return revisions


def test_a_view_shared_up_to_a_position_is_taken_by_a_projection_behind_it(
    log: JournalLog,
) -> None:
    _appended(log, "org.example.a", "org.example.b")
    reader = LogReader(log)
    ahead, behind = JournalChainsProjection(), JournalChainsProjection()
    catch_up(ahead, reader, through=2)
    share(ahead, reader)
    catch_up(behind, reader, through=2, shared=True)
    assert behind.view is ahead.view
    assert behind.revisions_after(0) == ahead.revisions_after(0)


def test_a_projection_folds_for_itself_unless_it_asks_for_a_shared_view(log: JournalLog) -> None:
    _appended(log, "org.example.a", "org.example.b")
    reader = LogReader(log)
    ahead, own = JournalChainsProjection(), JournalChainsProjection()
    catch_up(ahead, reader, through=2)
    share(ahead, reader)
    catch_up(own, reader, through=2)
    assert own.view is not ahead.view
    assert contents(own.view) == contents(ahead.view)


def test_a_shared_view_is_not_taken_past_the_callers_own_revision(log: JournalLog) -> None:
    """Its own revision keeps the caller's parse; what lies before it is still taken."""
    _appended(log, "org.example.a")
    (own,) = _appended(log, "org.example.b")
    _appended(log, "org.example.c")
    reader = LogReader(log)
    ahead, behind = JournalChainsProjection(), JournalChainsProjection()
    catch_up(ahead, reader, through=1)
    share(ahead, reader)
    catch_up(ahead, reader, through=3)
    share(ahead, reader)
    catch_up(behind, reader, {str(own.digest): own}, through=3, shared=True)
    chain = behind.view.chain(own.coordinate)
    assert chain is not None
    assert chain.latest is own
    assert behind.revisions_after(0)[0] is ahead.revisions_after(0)[0]  # the view at 1: taken
    assert contents(behind.view) == contents(ahead.view)


def test_a_projection_that_loaded_a_persisted_copy_shares_nothing(log: JournalLog) -> None:
    """Its revisions read their texts through the log that loaded them."""
    _appended(log, "org.example.a", "org.example.b")
    reader = LogReader(log)
    folded = JournalChainsProjection()
    catch_up(folded, reader)
    loaded = JournalChainsProjection()
    loaded.load(folded.revisions_after(0))
    share(loaded, reader)
    behind = JournalChainsProjection()
    catch_up(behind, reader, through=2, shared=True)
    assert behind.view is not loaded.view
    assert contents(behind.view) == contents(folded.view)
