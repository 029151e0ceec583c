"""Moving a store with ``nenjim log export`` and ``nenjim log import``: SQLite, PostgreSQL, back.

A Journal and the durable state of agents, teams and workflows are written
to one SQLite store, exported, imported into PostgreSQL, exported again and
imported into a new SQLite store. Each store must answer exactly what the
first one answered (every revision, every record, history, stream and blob,
through the replay kit's read models), audit clean, hold the same events at
the same ids with the same bytes, and take new writes. An import into a
store that is not empty, or of a damaged file or a log that does not audit,
is refused with one line, and nothing is written.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import psycopg
import pytest
from busy_state import live_a_busy_life

from journal_texts import journal_text
from nenjim.admin.transfer import ImportRefusedError, import_store
from nenjim.cli import main
from nenjim.infrastructure.log.transfer import ExportWriter, LoggedEvent, LogSection
from nenjim.infrastructure.persistence import Persistence
from nenjim.journal.impl.ref import build_journal
from nenjim.testing import (
    RECORD_INSERTED,
    RECORD_REPLACED,
    RecordedLog,
    assert_same_read_models,
    decode_state,
    open_store,
    read_models,
)

PROJECT = Path(__file__).resolve().parents[2]
JOURNAL_NAME = "moving"
NEW_REVISION = "20260601T000000Z"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the sample Journal root (45 revisions of 20 artifacts)."""
    copy = tmp_path / "root"
    shutil.copytree(PROJECT / "data" / "sample" / "journals", copy)
    return copy


def _write_state(store: str, root: Path) -> None:
    """A Journal (named) and a busy life of durable state, in one store."""
    assembly = build_journal(root, store=store, journal=JOURNAL_NAME)
    assembly.process.start()
    assembly.process.stop()
    persistence = Persistence.open(store)
    try:
        live_a_busy_life(persistence)
    finally:
        persistence.close()


def _models(store: str, log: RecordedLog) -> dict[str, Any]:
    with open_store(store, log) as opened:
        assert opened.audit() == [], store
        return read_models(opened, log)


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


def _tables(url: str) -> list[str]:
    """The tables in the PostgreSQL schema a test URL names."""
    connection_url = urlunsplit(urlsplit(url)._replace(query=""))
    with psycopg.connect(connection_url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (_schema(url),)
        ).fetchall()
    return [row[0] for row in rows]


def test_sqlite_to_postgresql_and_back(
    tmp_path: Path, root: Path, postgres_schema_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_url = f"sqlite://{tmp_path / 'first.db'}"
    _write_state(sqlite_url, root)
    moved = tmp_path / "moved.log"
    code, out, err = _run(capsys, "log", "export", "--store", sqlite_url, "--out", str(moved))
    assert (code, err) == (0, "")
    assert out.startswith(
        f"exported 83 events from {sqlite_url} to {moved}: journal 45, storage 38"
    )
    recorded = RecordedLog.from_file(moved)
    assert recorded.identity == f"name:{JOURNAL_NAME}"
    assert [event.id for event in recorded.events_of("storage")] == list(range(1, 39))
    expected = _models(sqlite_url, recorded)

    code, out, err = _run(capsys, "log", "import", "--store", postgres_schema_url, str(moved))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"imported 83 events into {postgres_schema_url}: journal 45, storage 38 "
        f"(the Journal named '{JOURNAL_NAME}')",
        "journal audit OK: 45 events, 45 revisions of 20 artifacts",
        "storage audit OK: 38 events, live 11 records, 2 streams, 3 blobs",
        "rebuilt journal-chains: 45 revisions of 20 artifacts",
        "rebuilt agent-runs: 3 runs of 2 agents from 38 events",
    ]
    assert_same_read_models(expected, _models(postgres_schema_url, recorded), "PostgreSQL")
    # Exactly the same events: ids, streams, positions, topics and stored bytes.
    from_postgres = RecordedLog.record(postgres_schema_url)
    assert from_postgres.events == recorded.events
    assert from_postgres.summary.logs == recorded.summary.logs

    back = tmp_path / "back.log"
    assert _run(capsys, "log", "export", "--store", postgres_schema_url, "--out", str(back))[0] == 0
    second_sqlite = f"sqlite://{tmp_path / 'second.db'}"
    code, out, err = _run(capsys, "log", "import", "--store", second_sqlite, str(back))
    assert (code, err) == (0, "")
    assert "journal audit OK: 45 events" in out
    assert_same_read_models(expected, _models(second_sqlite, recorded), "SQLite again")
    assert RecordedLog.record(second_sqlite).events == recorded.events


def test_a_moved_store_takes_new_writes(
    tmp_path: Path, root: Path, postgres_schema_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_url = f"sqlite://{tmp_path / 'first.db'}"
    _write_state(sqlite_url, root)
    moved = tmp_path / "moved.log"
    assert _run(capsys, "log", "export", "--store", sqlite_url, "--out", str(moved))[0] == 0
    for target in (postgres_schema_url, f"sqlite://{tmp_path / 'second.db'}"):
        assert _run(capsys, "log", "import", "--store", target, str(moved))[0] == 0
        # The Journal goes on: the same named Journal refreshes a new revision into it.
        assembly = build_journal(root, store=target, journal=JOURNAL_NAME)
        assembly.process.start()
        added = root / "com.example.moved" / f"{NEW_REVISION}.journal"
        added.parent.mkdir()
        added.write_text(journal_text("com.example.moved", NEW_REVISION))
        report = assembly.manager.refresh()
        assembly.process.stop()
        assert [str(r.coordinate) for r in report.accepted] == ["com.example.moved"]
        shutil.rmtree(added.parent)
        # Durable state goes on, at the next ids.
        persistence = Persistence.open(target)
        try:
            persistence.contents.put_text("after the move")
        finally:
            persistence.close()
        after = RecordedLog.record(target)
        assert [e.id for e in after.events_of("journal")] == list(range(1, 47))
        storage_ids = [e.id for e in after.events_of("storage")]
        assert storage_ids[:33] == list(range(1, 34))
        assert storage_ids[33] > 33
        assert (
            _run(capsys, "journal", "audit", "--store", target, "--journal", JOURNAL_NAME)[0] == 0
        )
        assert _run(capsys, "storage", "audit", "--store", target)[0] == 0


# -- refusals: nothing written -------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """An export of a Journal and durable state (the refusals edit copies of it)."""
    directory = tmp_path_factory.mktemp("exported")
    root = directory / "root"
    shutil.copytree(PROJECT / "data" / "sample" / "journals", root)
    store = f"sqlite://{directory / 'source.db'}"
    _write_state(store, root)
    return RecordedLog.record(store).data


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store to import into: an SQLite file that does not exist yet, or an empty schema."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'target.db'}"
    url: str = request.getfixturevalue("postgres_schema_url")
    return url


def _untouched(target: str) -> None:
    """Nothing was written: no SQLite file (nor its WAL files), no table in the schema."""
    if target.startswith("sqlite:"):
        path = Path(target.removeprefix("sqlite://"))
        assert not list(path.parent.glob(path.name + "*")), list(path.parent.iterdir())
    else:
        assert _tables(target) == []


def _rewritten(data: bytes, edit: Any) -> bytes:
    """The export with its events edited by ``edit(events) -> events``, honestly checksummed."""
    recorded = RecordedLog.from_bytes(data)
    out = io.BytesIO()
    writer = ExportWriter(out, recorded.summary.source)
    events = edit(list(recorded.events))
    for section in recorded.summary.logs:
        writer.begin_log(section)
        for event in events:
            if event.log == section.log:
                writer.event(event)
    writer.finish()
    return out.getvalue()


def _swap_ids(events: list[LoggedEvent]) -> list[LoggedEvent]:
    events[3], events[4] = events[4], events[3]
    return events


def _damaged(data: bytes, how: str) -> bytes:
    lines = data.splitlines(keepends=True)
    if how == "truncated":
        return data[: len(data) // 2]
    if how == "no trailer":
        return b"".join(lines[:-1])
    if how == "edited line":
        return data.replace(b'"originator_version":2', b'"originator_version":9', 1)
    if how == "bad checksum":
        end = json.loads(lines[-1])
        end["sha256"] = hashlib.sha256(b"another file").hexdigest()
        return b"".join(lines[:-1]) + (json.dumps(end) + "\n").encode()
    if how == "format version 2":
        return data.replace(b'"version":1', b'"version":2', 1)
    assert how == "ids out of order"
    body = b"".join([*lines[:4], lines[5], lines[4], *lines[6:-1]])
    end = json.loads(lines[-1])
    end["sha256"] = hashlib.sha256(body).hexdigest()  # an honest checksum: the order is the fault
    return body + (json.dumps(end) + "\n").encode()


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("truncated", "truncated (the line has no end)"),
        ("no trailer", "without its trailer: truncated"),
        ("edited line", "checksum mismatch"),
        ("bad checksum", "checksum mismatch"),
        ("format version 2", "log export format version 2; this build reads version 1 only"),
        ("ids out of order", "journal event id 3 after id 4: ids must increase"),
    ],
)
def test_a_damaged_file_is_refused_and_nothing_is_written(
    *,
    exported: bytes,
    target: str,
    tmp_path: Path,
    how: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    damaged = tmp_path / "damaged.log"
    damaged.write_bytes(_damaged(exported, how))
    code, out, err = _run(capsys, "log", "import", "--store", target, str(damaged))
    assert (code, out) == (1, "")
    assert err.startswith(f"nenjim: error: {damaged}")
    assert message in err
    assert err.endswith("nothing was written\n")
    assert err.count("\n") == 1
    _untouched(target)


def _drop_middle_revision(events: list[LoggedEvent]) -> list[LoggedEvent]:
    """A Journal log with a revision cut out of a chain (not its head: that would be a
    consistent, shorter log), renumbered so the ids have no gap."""
    journal = [e for e in events if e.log == "journal"]
    longer = {e.originator_id for e in journal if e.originator_version == 3}
    cut = next(e for e in journal if e.originator_version == 2 and e.originator_id in longer)
    kept = [e for e in journal if e is not cut]
    renumbered = [
        LoggedEvent(e.log, n, e.originator_id, e.originator_version, e.topic, e.state)
        for n, e in enumerate(kept, start=1)
    ]
    return renumbered + [e for e in events if e.log == "storage"]


def _skip_a_revision(events: list[LoggedEvent]) -> list[LoggedEvent]:
    """A storage log whose first replace jumps a revision (edited behind the engine's back)."""
    edited = []
    done = False
    for event in events:
        state = decode_state(event.topic, event.state) if event.log == "storage" else None
        if not done and state is not None and event.topic == RECORD_REPLACED:
            state["revision"] += 1
            edited.append(
                LoggedEvent(
                    event.log,
                    event.id,
                    event.originator_id,
                    event.originator_version,
                    event.topic,
                    json.dumps(state).encode(),
                )
            )
            done = True
        else:
            edited.append(event)
    assert done
    return edited


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _drop_middle_revision,
            "the journal log does not audit, nothing was written: notification",
        ),
        (_skip_a_revision, "the storage log does not audit, nothing was written: storage_e"),
    ],
    ids=["journal", "storage"],
)
def test_a_log_that_does_not_audit_is_refused_and_nothing_is_written(
    *,
    exported: bytes,
    target: str,
    tmp_path: Path,
    edit: Any,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = tmp_path / "broken.log"
    broken.write_bytes(_rewritten(exported, edit))
    RecordedLog.from_file(broken)  # an intact file: the log itself is the fault
    code, out, err = _run(capsys, "log", "import", "--store", target, str(broken), "--json")
    assert (code, out) == (1, "")
    failure = json.loads(err)
    assert (failure["kind"], failure["exit_code"]) == ("audit", 1)
    assert f"{broken}: {message}" in failure["error"]
    _untouched(target)


def _journal_in(store: str, tmp_path: Path) -> None:
    root = tmp_path / "other-root" / "com.example.widget"
    root.mkdir(parents=True)
    (root / "20260101T000000Z.journal").write_text(
        "NENJIM-JOURNAL 1\nARTIFACT com.example.widget\nJOURNAL_VERSION 20260101T000000Z\n"
    )
    assembly = build_journal(root.parent, store=store)
    assembly.process.start()
    assembly.process.stop()


def _claimed_only(store: str, tmp_path: Path) -> None:
    """A store a Journal claimed, with no revision in it yet (an empty root)."""
    empty = tmp_path / "empty-root"
    empty.mkdir()
    assembly = build_journal(empty, store=store)
    assembly.process.start()
    assembly.process.stop()


def _storage_in(store: str, tmp_path: Path) -> None:
    persistence = Persistence.open(store)
    persistence.contents.put_text("already here")
    persistence.close()


def _opened_only(store: str, tmp_path: Path) -> None:
    """Tables created by opening, nothing written: still an empty store."""
    Persistence.open(store).close()


@pytest.mark.parametrize(
    ("occupy", "reason"),
    [
        (_journal_in, "journal_events holds 1 rows"),
        (_claimed_only, "its journal log belongs to 'root:"),
        (_storage_in, "storage_events holds 1 rows"),
    ],
    ids=["journal", "identity", "storage"],
)
def test_an_import_into_a_store_that_is_not_empty_is_refused_and_changes_nothing(
    *,
    exported: bytes,
    target: str,
    tmp_path: Path,
    occupy: Any,
    reason: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    occupy(target, tmp_path)
    before = RecordedLog.record(target)
    moved = tmp_path / "moved.log"
    moved.write_bytes(exported)
    code, out, err = _run(capsys, "log", "import", "--store", target, str(moved))
    assert (code, out) == (3, "")
    assert "is not empty (" in err
    assert reason in err
    assert err.endswith("an import needs an empty store; nothing was written\n")
    after = RecordedLog.record(target)
    assert (after.events, after.summary.logs) == (before.events, before.summary.logs)


def test_a_store_only_opened_is_empty_enough(
    exported: bytes, target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _opened_only(target, tmp_path)
    moved = tmp_path / "moved.log"
    moved.write_bytes(exported)
    assert _run(capsys, "log", "import", "--store", target, str(moved))[0] == 0
    assert RecordedLog.record(target).events == RecordedLog.from_bytes(exported).events


# -- ids: kept, except a storage log with gaps moving into SQLite --------------------


def test_storage_ids_with_gaps_are_kept_on_postgresql_and_renumbered_into_sqlite(
    tmp_path: Path,
    postgres_schema_url: str,
    nenjim_new_store: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    persistence = Persistence.open(postgres_schema_url)
    try:
        live_a_busy_life(persistence)  # its refused and rolled-back writes spend ids
        persistence.contents.put_text("after the gap")
    finally:
        persistence.close()
    recorded = RecordedLog.record(postgres_schema_url)
    ids = [event.id for event in recorded.events]
    assert ids != list(range(1, len(ids) + 1))  # PostgreSQL left gaps
    expected = _models(postgres_schema_url, recorded)
    moved = tmp_path / "moved.log"
    recorded.write(moved)

    other_postgres = nenjim_new_store("postgresql")
    assert _run(capsys, "log", "import", "--store", other_postgres, str(moved))[0] == 0
    assert RecordedLog.record(other_postgres).events == recorded.events

    sqlite_url = f"sqlite://{tmp_path / 'dense.db'}"
    code, out, _ = _run(capsys, "log", "import", "--store", sqlite_url, str(moved), "--json")
    assert code == 0
    assert json.loads(out)["renumbered"] is True
    dense = RecordedLog.record(sqlite_url)
    assert [event.id for event in dense.events] == list(range(1, len(ids) + 1))
    assert [(e.originator_id, e.originator_version, e.topic, e.state) for e in dense.events] == [
        (e.originator_id, e.originator_version, e.topic, e.state) for e in recorded.events
    ]
    assert_same_read_models(expected, _models(sqlite_url, recorded), "renumbered SQLite")


# -- a named Journal on PostgreSQL lives in journal_NAME -------------------------------


@pytest.fixture
def database(postgres_url: str) -> Iterator[str]:
    """A fresh database (a named Journal without ?schema= uses its own schema there)."""
    name = f"nenjim_moving_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(urlsplit(postgres_url)._replace(path=f"/{name}"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_a_named_journal_moves_into_its_own_schema(
    root: Path, database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = f"sqlite://{tmp_path / 'named.db'}"
    assembly = build_journal(root, store=source, journal=JOURNAL_NAME)
    assembly.process.start()
    assembly.process.stop()
    moved = tmp_path / "moved.log"
    assert _run(capsys, "log", "export", "--store", source, "--out", str(moved))[0] == 0
    assert _run(capsys, "log", "import", "--store", database, str(moved))[0] == 0
    with psycopg.connect(database) as conn:
        schemas = {
            row[0]
            for row in conn.execute("SELECT schemaname FROM pg_tables WHERE tablename LIKE 'j%'")
        }
    assert schemas == {f"journal_{JOURNAL_NAME}"}
    named = f"{database}{'&' if '?' in database else '?'}schema=journal_{JOURNAL_NAME}"
    code, out, _ = _run(capsys, "projections", "status", "--store", named, "--json")
    assert code == 0
    assert json.loads(out)["projections"] == [  # the import rebuilt it in the Journal's schema
        {"name": "journal-chains", "log": "journal", "position": 45, "head": 45, "lag": 0}
    ]
    assembly = build_journal(root, store=database, journal=JOURNAL_NAME)
    assembly.process.start()
    assert sum(len(assembly.service.revisions(c)) for c in assembly.service.coordinates()) == 45
    assembly.process.stop()
    # Exporting it again names the Journal; public holds no log, another name none either.
    again = tmp_path / "again.log"
    for journal, code, message in (
        ([], 3, "holds no nenjim log"),
        (["--journal", "other"], 3, "holds no nenjim log"),
        (["--journal", JOURNAL_NAME], 0, ""),
    ):
        argv = ("log", "export", "--store", database, *journal, "--out", str(again))
        done, _, err = _run(capsys, *argv)
        assert done == code
        assert message in err
    assert RecordedLog.from_file(again).events == RecordedLog.from_file(moved).events


# -- export refusals ----------------------------------------------------------------


def test_exporting_a_store_that_does_not_exist_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    code, out, err = _run(capsys, "log", "export", "--store", f"sqlite://{missing}")
    assert (code, out) == (3, "")
    assert err == f"nenjim: error: SQLite store {missing} does not exist\n"
    assert not missing.exists()


def test_an_edited_row_that_is_no_event_is_one_line(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "edited.db"
    _write_state(f"sqlite://{store}", root)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE journal_events SET originator_id = 'zz' WHERE rowid = 2")
    out = tmp_path / "out.log"
    out.write_text("an older export\n")
    code, printed, err = _run(
        capsys, "log", "export", "--store", f"sqlite://{store}", "--out", str(out)
    )
    assert (code, printed) == (1, "")
    assert err == (
        "nenjim: error: the log in the store is inconsistent: journal_events notification 2: "
        "originator id 'zz' is not a UUID\n"
    )
    assert out.read_text() == "an older export\n"  # replaced only by a complete export
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.log")] == []


def test_every_event_is_exported_in_id_order_with_its_bytes(tmp_path: Path, root: Path) -> None:
    store = tmp_path / "source.db"
    _write_state(f"sqlite://{store}", root)
    recorded = RecordedLog.record(f"sqlite://{store}")
    with sqlite3.connect(store) as conn:
        journal = conn.execute(
            "SELECT rowid, originator_id, originator_version, topic, state FROM journal_events "
            "ORDER BY rowid"
        ).fetchall()
        storage = conn.execute(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM storage_events ORDER BY notification_id"
        ).fetchall()
    assert [
        (e.id, e.originator_id.hex, e.originator_version, e.topic, e.state)
        for e in recorded.events_of("journal")
    ] == journal
    assert [
        (e.id, str(e.originator_id), e.originator_version, e.topic, e.state)
        for e in recorded.events_of("storage")
    ] == storage
    assert RECORD_INSERTED in {e.topic for e in recorded.events_of("storage")}


# -- the file must stay what was checked ------------------------------------------------


class _Switching(io.BytesIO):
    """A file that reads as ``first`` until it is rewound, then as ``second``."""

    def __init__(self, first: bytes, second: bytes) -> None:
        super().__init__(first)
        self._second = second

    def seek(self, offset: int, whence: int = 0) -> int:
        if (offset, whence) == (0, 0) and self._second:
            self.__init__(self._second, b"")  # type: ignore[misc]
        return super().seek(offset, whence)


def test_a_file_that_changes_between_the_two_readings_is_refused(
    exported: bytes, tmp_path: Path
) -> None:
    other = _rewritten(
        exported,
        lambda events: (
            [e for e in events if e.log == "journal"]
            + [e for e in events if e.log == "storage"][:-1]
        ),
    )
    target = tmp_path / "target.db"
    with pytest.raises(ImportRefusedError, match=r"moved\.log changed while it was imported"):
        import_store(f"sqlite://{target}", _Switching(exported, other), name="moved.log")
    _untouched(f"sqlite://{target}")


def test_a_log_this_build_does_not_know_is_refused(tmp_path: Path) -> None:
    out = io.BytesIO()
    writer = ExportWriter(out, "elsewhere")
    writer.begin_log(LogSection("ledger", None))
    writer.finish()
    target = tmp_path / "target.db"
    with pytest.raises(ImportRefusedError, match="log 'ledger' is not one this build imports"):
        import_store(f"sqlite://{target}", io.BytesIO(out.getvalue()), name="x.log")
    _untouched(f"sqlite://{target}")
