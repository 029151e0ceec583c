"""The Journal served from its store: bounded cache, catch-up of what others append, lifecycle."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from journal_services import durable_url

from journal_texts import Chain, Rel, content, write_chain
from nenjim.admin import transparency
from nenjim.admin.stores import open_log
from nenjim.admin.transparency import FollowedChains
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal.exception import JournalStoreError, LifecycleError
from nenjim.journal.impl.ref import StoredJournal, build_journal
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog, root_identity
from nenjim.projections.journal_chains import JournalChainsProjection

V1, V2 = "20260101T000000Z", "20260201T000000Z"


def _loaded(tmp_path: Path, store_url: str, artifacts: int) -> tuple[Path, str]:
    """A root of ``artifacts`` one-revision chains, loaded into a durable store; both."""
    root = tmp_path / "root"
    root.mkdir()
    for n in range(artifacts):
        chain = Chain(f"com.example.a{n:02d}")
        chain.add(V1, (Rel("1.0.0", content(n)),))
        write_chain(root, chain)
    url = durable_url(store_url, tmp_path)
    assembly = build_journal(root, store=url)
    assembly.process.start()
    assembly.process.stop()
    return root, url


def test_the_cache_never_holds_more_chains_than_its_size(
    tmp_path: Path, journal_store: str
) -> None:
    root, url = _loaded(tmp_path, journal_store, 12)
    served = StoredJournal(url, root=root, cache_size=5)
    served.start()
    try:
        for n in range(12):
            latest = served.latest(f"com.example.a{n:02d}")
            assert latest is not None
            assert str(latest.coordinate) == f"com.example.a{n:02d}"
            assert served.cached <= 5
        assert served.cached == 5
        again = served.latest("com.example.a00")  # dropped: read from the store again
        assert again is not None
        assert str(again.version) == V1
        assert served.cached == 5
    finally:
        served.stop()


def test_a_revision_another_process_appends_is_answered_after_a_poll(
    tmp_path: Path, journal_store: str
) -> None:
    root, url = _loaded(tmp_path, journal_store, 2)
    served = StoredJournal(url, root=root)
    served.start()
    try:
        assert served.latest("com.example.a00") is not None
        chain = Chain("com.example.a00")
        chain.add(V1, (Rel("1.0.0", content(0)),))
        chain.add(V2, (Rel("1.0.0", content(0)), Rel("1.1.0", content(7))))
        write_chain(root, chain)
        script = textwrap.dedent(
            f"""
            from nenjim.journal.impl.ref import build_journal
            assembly = build_journal({str(root)!r}, store={url!r})
            assembly.process.start()
            assembly.process.stop()
            """
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        before = served.latest("com.example.a00")
        assert before is not None
        assert str(before.version) == V1  # the answers move only when it catches up
        assert served.poll() == 1
        after = served.latest("com.example.a00")
        assert after is not None
        assert str(after.version) == V2
        assert after.predecessor == before.digest
        assert served.poll() == 0
    finally:
        served.stop()


def test_queries_need_a_running_journal_and_start_is_single_use(
    tmp_path: Path, journal_store: str
) -> None:
    root, url = _loaded(tmp_path, journal_store, 1)
    served = StoredJournal(url, root=root)
    with pytest.raises(LifecycleError, match="not started"):
        served.latest("Not A Coordinate")  # the lifecycle is checked first
    served.start()
    with pytest.raises(LifecycleError, match="single-use"):
        served.start()
    served.stop()
    with pytest.raises(LifecycleError, match="stopped"):
        served.coordinates()
    served.stop()  # idempotent


def test_a_store_that_holds_no_journal_fails_the_start(tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    served = StoredJournal(missing)
    with pytest.raises(JournalStoreError) as raised:
        served.start()
    assert len(str(raised.value).splitlines()) == 1
    with pytest.raises(LifecycleError, match="failed to start"):
        served.coordinates()
    assert not (tmp_path / "missing.db").exists()


def test_a_reader_that_may_not_write_answers_what_no_writer_persisted(
    tmp_path: Path, journal_store: str
) -> None:
    """``nenjim serve`` opens its store read-only: a revision appended without its chain
    row is folded and held by the reader, which writes nothing."""
    root, url = _loaded(tmp_path, journal_store, 2)
    writer = JournalLog(url, identity=root_identity(os.path.realpath(root)))
    try:
        ingestion = JournalIngestion(writer, JournalChainsProjection())  # writes no rows
        chain = Chain("com.example.a01")
        chain.add(V1, (Rel("1.0.0", content(1)),))
        ingestion.ingest_text(chain.texts[0])  # already accepted: a no-op
        second = chain.add(V2, (Rel("1.0.0", content(1)), Rel("2.0.0", content(9))))
        ingestion.ingest_text(second)
    finally:
        writer.close()
    with open_log(url, None) as log:
        followed = FollowedChains(log, cache_size=1)
        head = followed.chain("com.example.a01").latest
        assert str(head.version) == V2
        assert followed.coordinates(None, 10) == (["com.example.a00", "com.example.a01"], False)
        state = projection_recorder(log).state("journal-chains")
        assert state is not None
        assert state.position == 2  # the reader wrote nothing


def test_a_filtered_coordinates_page_reads_the_index_a_window_at_a_time(
    tmp_path: Path, journal_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = _loaded(tmp_path, journal_store, 12)
    monkeypatch.setattr(transparency, "FILTER_WINDOW", 2)  # many windows before a match
    with open_log(url, None) as log:
        followed = FollowedChains(log)
        assert followed.coordinates(None, 1, "a1") == (["com.example.a10"], True)
        assert followed.coordinates("com.example.a10", 5, "a1") == (["com.example.a11"], False)
        assert followed.coordinates(None, 5, "none") == ([], False)
        assert followed.coordinates("com.example.a09", 2, None) == (
            ["com.example.a10", "com.example.a11"],
            False,
        )


def test_a_program_that_stopped_its_journal_exits_without_a_word(
    tmp_path: Path, journal_store: str
) -> None:
    # A stopped Journal's log is closed again when the interpreter's exit collects it (a
    # module that defines a function collects it late): closing must then need nothing
    # that the exiting interpreter can no longer import.
    root, url = _loaded(tmp_path, journal_store, 1)
    script = textwrap.dedent(
        f"""
        from nenjim.journal.impl.ref import StoredJournal

        def main():
            pass

        served = StoredJournal({url!r}, root={str(root)!r})
        served.start()
        answer = served.as_of("com.example.a00", "20991231T000000Z")
        assert answer is not None
        served.stop()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
