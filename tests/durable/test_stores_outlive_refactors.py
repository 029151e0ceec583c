"""Stores written by an earlier build open, audit clean and read back exactly.

``tests/fixtures/stores/`` holds an SQLite Journal log and an SQLite storage
database written once, by ``tests/fixtures/generate_stores.py`` with the code
of the commit ``expected.json`` names, and what the public APIs answered
then. Each test works on a copy. A failure here means this build cannot read
stores that exist on users' disks: that change needs a migration and a new
schema version, never a regenerated fixture.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stored_values import plain

from nenjim.cli import main as nenjim
from nenjim.domain.agents import AgentRoot
from nenjim.domain.persistence.errors import NotFoundError
from nenjim.infrastructure.persistence import Persistence, codecs
from nenjim.infrastructure.storage.sql import events
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref.log import JournalLog

STORES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
EXPECTED: dict[str, Any] = json.loads((STORES / "expected.json").read_text(encoding="utf-8"))
JOURNAL: dict[str, Any] = EXPECTED["journal"]
STORAGE: dict[str, Any] = EXPECTED["storage"]


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    """A writable copy of the fixture stores (the committed files are never opened)."""
    for name in ("journal.db", "storage.db"):
        shutil.copyfile(STORES / name, tmp_path / name)
    return tmp_path


@pytest.fixture
def journal_url(copies: Path) -> str:
    return f"sqlite:///{copies / 'journal.db'}"


@pytest.fixture
def storage_url(copies: Path) -> str:
    return f"sqlite:///{copies / 'storage.db'}"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = nenjim(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# -- the Journal log -----------------------------------------------------------------


def test_the_fixture_covers_what_it_claims() -> None:
    revisions = sum(len(chain) for chain in JOURNAL["chains"].values())
    assert len(JOURNAL["chains"]) == 24
    assert revisions == len(JOURNAL["events"]) == 51
    assert JOURNAL["successors_added_by_refresh"] == 27
    assert {"com.example.widget", "com.r35157.nenjim.hubd"} <= set(JOURNAL["chains"])
    # The topics as the code of the day wrote them: module paths of that day.
    assert {event["topic"] for event in JOURNAL["events"]} == {
        "domain.journal.chain:JournalChain.GenesisAccepted",
        "domain.journal.chain:JournalChain.SuccessorAccepted",
    }


def test_the_journal_log_audits_clean(journal_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, output = _run(capsys, "journal", "audit", "--store", journal_url, "--journal", "fixture")
    assert (code, output) == (0, "audit OK: 51 events, 51 revisions of 24 artifacts\n")


def test_the_journal_projection_rebuilds(
    journal_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = _run(
        capsys, "projections", "rebuild", "journal-chains", "--store", journal_url, "--json"
    )
    assert code == 0, output
    assert json.loads(output)["summary"].startswith("journal-chains: 51 revisions of 24 artifacts")


def test_every_revision_reads_back(journal_url: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty-root"
    empty.mkdir()
    assembly = build_journal(empty, store=journal_url, journal=JOURNAL["journal_name"])
    assembly.process.start()
    try:
        service = assembly.service
        assert sorted(str(c) for c in service.coordinates()) == sorted(JOURNAL["chains"])
        for coordinate, chain in JOURNAL["chains"].items():
            read = [
                {
                    "version": str(revision.version),
                    "digest": str(revision.digest),
                    "predecessor": None
                    if revision.predecessor is None
                    else str(revision.predecessor),
                    "text": revision.text,
                }
                for revision in service.revisions(coordinate)
            ]
            assert read == chain, coordinate
            for stored in chain:
                exact = service.revision(coordinate, stored["version"])
                assert exact is not None
                assert exact.text == stored["text"]
                as_of = service.as_of(coordinate, stored["version"])
                assert as_of is not None
                assert str(as_of.digest) == stored["digest"]
    finally:
        assembly.process.stop()


def test_the_log_keeps_its_events_as_written(journal_url: str) -> None:
    log = JournalLog(journal_url, create=False)
    try:
        notifications = log.recorder.select_notifications(start=1, limit=1000)
    finally:
        log.close()
    assert [
        {
            "id": n.id,
            "topic": n.topic,
            "originator_id": str(n.originator_id),
            "originator_version": n.originator_version,
        }
        for n in notifications
    ] == JOURNAL["events"]


def _root_of_texts(root: Path) -> None:
    for coordinate, chain in JOURNAL["chains"].items():
        (root / coordinate).mkdir(parents=True)
        for stored in chain:
            path = root / coordinate / f"{stored['version']}.journal"
            path.write_bytes(stored["text"].encode("utf-8"))


def test_the_root_it_was_written_from_adds_nothing_and_a_successor_extends_it(
    journal_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    _root_of_texts(root)
    assembly = build_journal(root, store=journal_url, journal=JOURNAL["journal_name"])
    assembly.process.start()
    try:
        head = JOURNAL["chains"]["com.example.widget"][-1]
        successor = (
            head["text"]
            .replace(f"JOURNAL_VERSION {head['version']}", "JOURNAL_VERSION 20990101T000000Z")
            .replace(f"PREDECESSOR {head['predecessor']}", f"PREDECESSOR {head['digest']}")
        )
        assert f"PREDECESSOR {head['digest']}" in successor
        (root / "com.example.widget" / "20990101T000000Z.journal").write_text(
            successor, encoding="utf-8", newline=""
        )
        accepted = assembly.manager.refresh().accepted
        assert [str(r.version) for r in accepted] == ["20990101T000000Z"]
    finally:
        assembly.process.stop()
    code, output = _run(capsys, "journal", "audit", "--store", journal_url)
    assert (code, output) == (0, "audit OK: 52 events, 52 revisions of 24 artifacts\n")
    log = JournalLog(journal_url, create=False)
    try:
        topics = [n.topic for n in log.recorder.select_notifications(start=1, limit=1000)]
    finally:
        log.close()
    # The old events keep their old topics; the new one has the fixed name.
    assert topics[:-1] == [event["topic"] for event in JOURNAL["events"]]
    assert topics[-1] == "nenjim.journal:JournalChain.SuccessorAccepted"


# -- the storage database ------------------------------------------------------------


def test_the_storage_database_audits_clean(
    storage_url: str, copies: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = _run(capsys, "storage", "audit", "--store", storage_url)
    assert code == 0, output
    assert "34 events, live 10 records, 1 streams, 5 blobs; 0 findings" in output


def test_the_storage_log_keeps_its_topics_and_record_types(copies: Path) -> None:
    with sqlite3.connect(copies / "storage.db") as connection:
        topics = dict(
            connection.execute("SELECT topic, count(*) FROM storage_events GROUP BY topic")
        )
        types = connection.execute(
            "SELECT DISTINCT record_type, format_version FROM storage_records ORDER BY 1"
        ).fetchall()
    connection.close()
    assert topics == STORAGE["log"]["topics"]
    assert [list(row) for row in types] == STORAGE["log"]["record_types"]


def test_this_build_knows_every_stored_topic_and_record_type() -> None:
    topics = {
        events.RECORD_INSERTED,
        events.RECORD_REPLACED,
        events.RECORD_DELETED,
        events.STREAM_ENTRY_APPENDED,
        events.STREAM_DELETED,
        events.BLOB_PUT,
    }
    assert set(STORAGE["log"]["topics"]) <= topics
    formats = {(f.record_type, f.format_version) for f in codecs.RECORD_FORMATS}
    assert {(name, version) for name, version in STORAGE["log"]["record_types"]} <= formats


def _value_or_none(load: Callable[[str], Any], key: str) -> Any:
    try:
        return plain(load(key))
    except NotFoundError:
        return None


def test_every_record_and_revision_reads_back(storage_url: str) -> None:
    p = Persistence.open(storage_url)
    try:
        for key, want in STORAGE["agents"].items():
            assert _value_or_none(p.agents.load, key) == want["value"], key
            assert plain(p.agents.history(key)) == want["history"], key
        for key, want in STORAGE["executions"].items():
            assert plain(p.executions.load(key)) == want["value"], key
            assert plain(p.executions.history(key)) == want["history"], key
            assert plain(p.execution_result(key)) == want["result"], key
        for key, want in STORAGE["executions_by_agent"].items():
            assert plain(p.list_executions(key)) == want, key
        for key, want in STORAGE["handoff_result"].items():
            assert plain(p.handoff_result(key, main_agent_id="agent-1")) == want, key
        for key, want in STORAGE["journals"].items():
            assert p.journals.head(key) == want["head"], key
            assert plain(p.journals.read(key)) == want["records"], key
        for key, want in STORAGE["workflow_states"].items():
            assert plain(p.workflow_states.load(key)) == want["value"], key
            assert plain(p.workflow_states.history(key)) == want["history"], key
        for key, want in STORAGE["handoff_states"].items():
            assert plain(p.handoff_states.load(key)) == want, key
        for key, want in STORAGE["teams"].items():
            assert plain(p.teams.load(key)) == want["value"], key
            assert plain(p.teams.history(key)) == want["history"], key
        for key, want in STORAGE["team_executions"].items():
            assert plain(p.team_executions.load(key)) == want["value"], key
            assert plain(p.team_executions.history(key)) == want["history"], key
            assert plain(p.team_execution_result(key)) == want["result"], key
        for key, want in STORAGE["team_executions_by_team"].items():
            assert plain(p.list_team_executions(key)) == want, key
        for key, want in STORAGE["contents"].items():
            assert plain(p.contents.fetch(key)) == want, key
    finally:
        p.close()


def test_the_fixture_reads_every_repository() -> None:
    assert set(STORAGE) >= {
        "agents",
        "executions",
        "journals",
        "workflow_states",
        "handoff_states",
        "teams",
        "team_executions",
        "contents",
    }
    assert any(len(entry["history"]) >= 3 for entry in STORAGE["executions"].values())
    assert STORAGE["agents"]["agent-3"]["value"] is None  # deleted: only its history remains
    assert STORAGE["workflow_states"]["wf-2"]["value"] is None


def test_the_storage_database_takes_new_writes(
    storage_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p = Persistence.open(storage_url)
    try:
        root = p.agents.load("agent-2")
        saved = p.agents.save(
            "agent-2", expected_revision=root.agent_revision, root=root.evolve(metadata={"x": 1})
        )
        assert p.agents.load("agent-2") == saved
        fresh = p.agents.create(AgentRoot.create("agent-9", definition_id="fixture.new"))
        assert [r.value for r in p.agents.history("agent-9")] == [fresh]
    finally:
        p.close()
    code, output = _run(capsys, "storage", "audit", "--store", storage_url)
    assert code == 0, output
