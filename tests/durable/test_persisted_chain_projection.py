"""The Journal chain projection kept in the store: warm restarts, other processes, kills."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from journal_texts import Chain, Rel, content, write_chain
from nenjim.cli import main
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal import JournalService
from nenjim.journal.impl.ref import JournalFollower, build_journal, filesystem
from nenjim.journal.impl.ref.chain_table import CHAIN_TABLE, PersistedChains, rebuild_chain_table
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.rebuild import chain_status
from nenjim.journal.valuetypes import ArtifactCoordinate
from nenjim.projections import journal_chains
from nenjim.projections.journal_chains import JournalChainsProjection

VERSIONS = [f"2026{month:02d}01T000000Z" for month in range(1, 6)]
REPO = Path(__file__).resolve().parents[2]


def _chains(artifacts: int, prefix: str = "com.example.a") -> list[Chain]:
    chains = []
    for n in range(artifacts):
        chain = Chain(f"{prefix}{n}")
        for i, version in enumerate(VERSIONS):
            chain.add(version, tuple(Rel(f"1.{j}.0", content(n * 10 + j)) for j in range(i + 1)))
        chains.append(chain)
    return chains


def _append_without_projection(store: str, chains: list[Chain], identity: str | None) -> None:
    """Append the chains as a writer that keeps no persisted projection would."""
    log = JournalLog(store, identity=identity)
    try:
        ingestion = JournalIngestion(log, JournalChainsProjection())
        ingestion.catch_up()
        ingestion.ingest_all([parse_journal(text) for chain in chains for text in chain.texts])
    finally:
        log.close()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text parsed from now on (files and stored revisions)."""
    seen: list[str] = []

    def counting(text: str) -> Any:
        seen.append(text)
        return parse_journal(text)

    monkeypatch.setattr(filesystem, "parse_journal", counting)
    monkeypatch.setattr(journal_chains, "parse_journal", counting)
    return seen


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The position after which each read of the log started."""
    seen: list[int] = []
    original = LogReader.notifications

    def recording(self: LogReader, after: int) -> Iterator[Any]:
        seen.append(after)
        return original(self, after)

    monkeypatch.setattr(LogReader, "notifications", recording)
    return seen


def test_a_warm_restart_reads_no_event_and_parses_nothing_it_holds(
    tmp_path: Path, durable_store_url: str, parses: list[str], reads: list[int]
) -> None:
    for chain in _chains(3):
        write_chain(tmp_path, chain)
    first = build_journal(tmp_path, store=durable_store_url)
    first.process.start()
    first.process.stop()
    assert len(parses) == 15
    parses.clear()
    reads.clear()
    warm = build_journal(tmp_path, store=durable_store_url)
    warm.process.start()
    try:
        assert parses == []  # files read and hashed, known digests: nothing parsed
        assert reads == [15]  # the log is read only after the persisted position
        latest = warm.service.latest(ArtifactCoordinate("com.example.a0"))
        assert latest is not None
        assert str(latest.version) == VERSIONS[-1]
        assert len(parses) == 1  # the one revision asked for, read back from the log
    finally:
        warm.process.stop()


def test_a_refresh_sees_what_another_process_appended(
    tmp_path: Path, durable_store_url: str
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    write_chain(theirs, _chains(1, "com.example.theirs")[0])
    assembly = build_journal(mine, store=durable_store_url, journal="shared")
    assembly.process.start()
    try:
        assert list(assembly.service.coordinates()) == []
        code = (
            "import sys\n"
            "from nenjim.journal.impl.ref import build_journal\n"
            "a = build_journal(sys.argv[1], store=sys.argv[2], journal='shared')\n"
            "a.process.start()\n"
            "a.process.stop()\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(theirs), durable_store_url],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr
        assert list(assembly.service.coordinates()) == []  # passive: nothing until refresh
        assert assembly.manager.refresh().accepted == ()  # no new file of this root
        assert [str(c) for c in assembly.service.coordinates()] == ["com.example.theirs0"]
        assert len(assembly.service.revisions(ArtifactCoordinate("com.example.theirs0"))) == 5
    finally:
        assembly.process.stop()
    if durable_store_url.startswith("sqlite:"):
        status = chain_status(durable_store_url)
        assert (status.position, status.lag) == (5, 0)


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from nenjim.infrastructure.log import LogReader
    from nenjim.infrastructure.tracking.projections import projection_recorder
    from nenjim.journal.impl.ref.log import JournalLog
    from nenjim.journal.impl.ref.chain_table import PersistedChains
    from nenjim.projections.journal_chains import JournalChainsProjection

    log = JournalLog(sys.argv[1], create=False)
    recorder = projection_recorder(log)
    write, calls = recorder.write, []

    def dying_write(table, rows_after, tracking):
        calls.append(tracking.notification_id)
        if len(calls) < 4:
            return write(table, rows_after, tracking)

        def rows(after):
            for i, row in enumerate(rows_after(after)):
                if i == 10:  # inside the 4th write's transaction, rows half inserted
                    os.kill(os.getpid(), signal.SIGKILL)
                yield row

        return write(table, rows, tracking)

    recorder.write = dying_write
    PersistedChains(JournalChainsProjection(), LogReader(log), recorder, batch=50).catch_up()
    """
)


def test_a_kill_during_catch_up_resumes_from_the_last_write_without_loss(
    durable_store_url: str, reads: list[int]
) -> None:
    _append_without_projection(durable_store_url, _chains(50), None)  # 250 events, no rows
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, durable_store_url],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert killed.returncode == -9, killed.stderr
    status = chain_status(durable_store_url)
    assert (status.position, status.head, status.lag) == (150, 250, 100)
    log = JournalLog(durable_store_url, create=False)
    try:
        recorder = projection_recorder(log)
        assert [row[0] for row in recorder.load(CHAIN_TABLE).rows] == list(range(1, 151))
        reads.clear()
        view = PersistedChains(JournalChainsProjection(), LogReader(log), recorder).catch_up()
        assert reads[0] == 150  # resumed, not replayed from zero
        assert view.position == 250
        resumed = recorder.load(CHAIN_TABLE)
        rebuild_chain_table(LogReader(log), recorder)
        assert recorder.load(CHAIN_TABLE) == resumed  # nothing lost, nothing twice
    finally:
        log.close()


def _revision_count(view: JournalService) -> int:
    return sum(len(view.revisions(c)) for c in view.coordinates())


def test_a_follower_sees_appends_of_other_writers(durable_store_url: str) -> None:
    chains = _chains(2)
    _append_without_projection(durable_store_url, chains[:1], None)
    follower = JournalFollower(durable_store_url, interval=0.05)
    seen: list[JournalService] = []
    moved = threading.Event()

    def on_view(view: JournalService) -> None:
        seen.append(view)
        if _revision_count(view) == 10:
            moved.set()

    thread = threading.Thread(target=follower.follow, args=(on_view,))
    thread.start()
    try:
        _append_without_projection(durable_store_url, chains[1:], None)
        assert moved.wait(30), [_revision_count(v) for v in seen]
    finally:
        follower.close()
        thread.join(30)
    assert not thread.is_alive()
    assert _revision_count(seen[0]) == 5  # the first view is unchanged: views are immutable
    assert len(seen[0].coordinates()) == 1
    assert _revision_count(seen[-1]) == 10
    status = chain_status(durable_store_url)
    assert status.lag == 0  # the follower wrote its rows back


def test_a_postgresql_follower_is_woken_by_notify(postgres_schema_url: str) -> None:
    chains = _chains(2)
    _append_without_projection(postgres_schema_url, chains[:1], None)
    follower = JournalFollower(postgres_schema_url, interval=3600)  # only NOTIFY can wake it
    moved = threading.Event()

    def on_view(view: JournalService) -> None:
        if _revision_count(view) == 10:
            moved.set()

    thread = threading.Thread(target=follower.follow, args=(on_view,), daemon=True)
    thread.start()
    try:
        while _revision_count(follower.view) < 5:  # the first poll ran: the follower now waits
            threading.Event().wait(0.01)
        threading.Event().wait(0.2)
        _append_without_projection(postgres_schema_url, chains[1:], None)
        assert moved.wait(30)
    finally:
        follower.close()


def test_status_shows_the_lag_and_a_rebuild_closes_it(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _append_without_projection(durable_store_url, _chains(2), None)
    assert main(["projections", "status", "--store", durable_store_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["PROJECTION", "LOG", "POSITION", "HEAD", "LAG"]
    assert out[1].split() == ["journal-chains", "journal", "0", "10", "10"]
    assert main(["projections", "rebuild", "journal-chains", "--store", durable_store_url]) == 0
    assert capsys.readouterr().out.startswith(
        "rebuilt journal-chains: 10 revisions of 2 artifacts in "
    )
    assert main(["projections", "status", "--store", durable_store_url]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == [
        "journal-chains",
        "journal",
        "10",
        "10",
        "0",
    ]


def test_an_unknown_projection_is_bad_usage_naming_the_known_ones(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["projections", "rebuild", "nope", "--store", durable_store_url]) == 2
    assert "unknown projection 'nope'; known: journal-chains" in capsys.readouterr().err


def test_readers_of_a_rebuilt_projection_see_a_whole_generation(durable_store_url: str) -> None:
    _append_without_projection(durable_store_url, _chains(4), None)
    log = JournalLog(durable_store_url, create=False)
    try:
        recorder = projection_recorder(log)
        stop = threading.Event()
        torn: list[int] = []

        def read() -> None:
            while not stop.is_set():
                loaded = recorder.load(CHAIN_TABLE)
                if len(loaded.rows) != loaded.position:
                    torn.append(loaded.position)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for _ in range(5):
                rebuild_chain_table(LogReader(log), recorder)
        finally:
            stop.set()
            reader.join(30)
        assert torn == []
        state = recorder.state(CHAIN_TABLE.name)
        assert state is not None
        assert (state.position, state.generation) == (20, 5)
    finally:
        log.close()


def test_memory_keeps_the_projection_in_the_process(tmp_path: Path) -> None:
    for chain in _chains(1):
        write_chain(tmp_path, chain)
    assembly = build_journal(tmp_path, store="memory:")
    assembly.process.start()
    try:
        assert len(assembly.service.revisions(ArtifactCoordinate("com.example.a0"))) == 5
    finally:
        assembly.process.stop()
    assert os.listdir(tmp_path) == ["com.example.a0"]  # no file was created
