"""Rows of a Journal log edited behind the engine's back: audit and start-up agree.

Each edit below is made with plain SQL on a durable log of two artifacts
(``a0``: three revisions at notifications 1-3, ``a1``: two at 4-5) whose
files were removed from the root afterwards, so that start-up knows only
what the log holds. For each edit the table says what the audit reports and
what a start does:

- ``REFUSED``: start-up refuses with a one-line ``JournalError``;
- ``SERVED``: start-up cannot see it without parsing every stored text (which
  it does not do: too slow for a restart); the audit finds it, and a query
  that parses the text raises a one-line ``JournalIntegrityError``;
- ``SERVED_SILENTLY``: only the audit's parse reveals it (a history rule);
- ``CONSISTENT``: start-up cannot reveal it (a consistent forgery of the
  head, a cut tail, an order change between streams that changes nothing).
  The audit finds it in the stored transparency tree, which still holds the
  original leaves; if the tree was removed too, the audit reports the missing
  tree (it writes nothing), but a start recomputes the tree from the edited
  texts, and from then on nothing in the log reveals the edit: it needs an
  anchor outside the log (a checkpoint signed before).

Nothing else may come out: no traceback, no exception that is not a
``JournalError``, no message of more than one line.

Every edit runs on SQLite; on PostgreSQL a slice covering each kind of
column (state bytes, stream uuids, notification ids, claims) runs by
default, and every edit with ``NENJIM_TEST_EVERY_EDIT=1``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from journal_texts import Chain, Rel, content, digest, journal_text
from nenjim.domain.journal.chain import chain_id
from nenjim.journal.exception import JournalError, JournalIntegrityError
from nenjim.journal.impl.ref import StoredJournal, build_journal
from nenjim.journal.impl.ref import audit as audit_module
from nenjim.journal.impl.ref.audit import audit_journal_log, journal_problem
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE

A, B = "com.example.a0", "com.example.a1"
V1, V2, V3, V4 = "20260101T000000Z", "20260201T000000Z", "20260301T000000Z", "20260401T000000Z"
GENESIS = "nenjim.journal:JournalChain.GenesisAccepted"
SUCCESSOR = "nenjim.journal:JournalChain.SuccessorAccepted"

REFUSED, SERVED, SERVED_SILENTLY, CONSISTENT = "refused", "served", "served-silently", "consistent"
# The audit opens the store as it is: a deleted tree is reported, not rebuilt.
TREE_DELETED = "the transparency tree holds 0 leaves"


class LogRows:
    """The Journal log's tables, edited with plain SQL as an operator would."""

    def __init__(self, store: str) -> None:
        self.sqlite = store.startswith("sqlite:")
        self.store = store
        self.id_column = "rowid" if self.sqlite else "notification_id"

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        if self.sqlite:
            with sqlite3.connect(self.store.removeprefix("sqlite://")) as conn:
                return conn.execute(sql.replace("%s", "?"), params).fetchall()
        parts = urlsplit(self.store)
        schema = parse_qs(parts.query)["schema"][0]
        with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            cursor = conn.execute(sql, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def forget_projections(self) -> None:
        """Drop the persisted projections: the next start folds the whole log."""
        catalog = (
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            if self.sqlite
            else "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
        for (table,) in self.execute(catalog):
            if table == "nenjim_projections" or table.startswith("journal_chain_revisions_g"):
                self.execute(f"DROP TABLE {table}")

    def stream(self, coordinate: str) -> object:
        """A stream id as the backend stores it."""
        return chain_id(coordinate).hex if self.sqlite else chain_id(coordinate)

    def row(self, n: int) -> tuple[Any, ...]:
        (row,) = self.execute(
            "SELECT originator_id, originator_version, topic, state FROM journal_events "
            f"WHERE {self.id_column} = %s",
            (n,),
        )
        return row

    def state(self, n: int) -> dict[str, Any]:
        return dict(json.loads(bytes(self.row(n)[3])))

    def set_state(self, n: int, state: dict[str, Any] | bytes) -> None:
        data = state if isinstance(state, bytes) else json.dumps(state).encode()
        self.update(n, state=data)

    def edit_state(self, n: int, **changes: Any) -> None:
        state = self.state(n)
        for key, value in changes.items():
            if value is _DROP:
                del state[key]
            else:
                state[key] = value
        self.set_state(n, state)

    def update(self, n: int, **columns: object) -> None:
        names = [self.id_column if c == "id" else c for c in columns]
        assignments = ", ".join(f"{name} = %s" for name in names)
        self.execute(
            f"UPDATE journal_events SET {assignments} WHERE {self.id_column} = %s",
            (*columns.values(), n),
        )

    def delete(self, n: int) -> None:
        self.execute(f"DELETE FROM journal_events WHERE {self.id_column} = %s", (n,))

    def copy(self, n: int, new_id: int, **columns: object) -> None:
        originator, version, topic, state = self.row(n)
        row = {"originator_id": originator, "originator_version": version, "topic": topic}
        row |= {"state": state, **columns}
        names = [*row, self.id_column]
        self.execute(
            f"INSERT INTO journal_events ({', '.join(names)}) "
            f"VALUES ({', '.join(['%s'] * len(names))})",
            (*row.values(), new_id),
        )

    def claims(self, sql: str, params: tuple[object, ...]) -> None:
        self.execute(sql.replace("{claims}", "journal_claims"), params)


_DROP = object()


def _forge(rows: LogRows, n: int, text: str, *, claim: bool) -> None:
    """Replace notification ``n``'s text and digest (and its claim) consistently."""
    old = rows.state(n)["digest"]
    rows.edit_state(n, text=text, digest=digest(text))
    if claim:
        rows.claims(
            "UPDATE {claims} SET key = %s WHERE namespace = %s AND key = %s",
            (digest(text), DIGEST_NAMESPACE, old),
        )


def _forget_tree(rows: LogRows) -> None:
    """Remove the stored transparency tree: the next open recomputes it from the texts."""
    rows.execute("DELETE FROM journal_entries")
    rows.execute("DELETE FROM journal_tiles")


def _swap_ids(rows: LogRows, first: int, second: int) -> None:
    rows.update(first, id=1000)
    rows.update(second, id=first)
    rows.update(1000, id=second)


def _swap_versions(rows: LogRows, first: int, second: int) -> None:
    a, b = rows.row(first)[1], rows.row(second)[1]
    rows.update(first, originator_version=1000)
    rows.update(second, originator_version=a)
    rows.update(first, originator_version=b)


def _shift_ids(rows: LogRows) -> None:
    for n in range(5, 0, -1):
        rows.update(n, id=n + 1)


def _head_text(rows: LogRows, edit: Callable[[str], str]) -> str:
    return edit(rows.state(3)["text"])


@dataclass(frozen=True)
class Edit:
    name: str
    apply: Callable[[LogRows], None]
    audit: str | None  # a fragment of the audit's problem; None: the audit finds nothing
    start: str  # REFUSED, SERVED, SERVED_SILENTLY or CONSISTENT
    start_says: str = ""  # a fragment of start-up's (or the query's) error


def _claim(sql: str, *params: object) -> Callable[[LogRows], None]:
    return lambda rows: rows.claims(sql, params)


def _a2_digest(rows: LogRows) -> str:
    return str(rows.state(2)["digest"])


EDITS = [
    Edit("untouched", lambda rows: None, None, CONSISTENT),
    # --- text and digest -------------------------------------------------------------
    Edit(
        "text-edited",
        lambda r: r.edit_state(2, text=r.state(2)["text"] + "# edited\n"),
        "notification 2 (com.example.a0 20260201T000000Z): stored text does not digest",
        REFUSED,
        "does not digest",
    ),
    Edit(
        "digest-edited",
        lambda r: r.edit_state(2, digest=digest("other")),
        "does not digest",
        REFUSED,
        "does not digest",
    ),
    Edit(
        "text-and-digest-forged-mid-chain",
        lambda r: _forge(r, 2, r.state(2)["text"] + "# forged\n", claim=False),
        "notification 3 (com.example.a0 20260301T000000Z): revision 20260301T000000Z does not "
        "follow",
        REFUSED,
        "does not follow",
    ),
    Edit(
        "text-digest-and-claim-forged-mid-chain",
        lambda r: _forge(r, 2, r.state(2)["text"] + "# forged\n", claim=True),
        "does not follow",
        REFUSED,
        "does not follow",
    ),
    Edit(
        "head-forged-consistently",
        lambda r: _forge(r, 3, _head_text(r, lambda t: t + "# forged\n"), claim=True),
        "transparency leaf 2 (notification 3) differs from the leaf of its stored text",
        CONSISTENT,
    ),
    Edit(
        "head-forged-consistently-tree-recomputed",
        lambda r: (
            _forge(r, 3, _head_text(r, lambda t: t + "# forged\n"), claim=True),
            _forget_tree(r),
        ),
        TREE_DELETED,
        CONSISTENT,
    ),
    Edit(
        "head-forged-breaking-history",
        lambda r: _forge(
            r, 3, _head_text(r, lambda t: t.replace(content(1), content(7))), claim=True
        ),
        "breaks a chain rule: release content changed",
        SERVED_SILENTLY,
    ),
    Edit(
        "head-forged-unparsable",
        lambda r: _forge(r, 3, "not a journal\n", claim=True),
        "stored text does not parse",
        SERVED,
        "does not parse",
    ),
    Edit(
        "head-forged-with-another-version",
        lambda r: _forge(r, 3, _head_text(r, lambda t: t.replace(V3, V4)), claim=True),
        f"stored text is {A} {V4}",
        SERVED,
        "its event says",
    ),
    # --- topics and stored state -------------------------------------------------------
    Edit(
        "genesis-topic-swapped-to-successor",
        lambda r: r.update(1, topic=SUCCESSOR),
        "notification 1: SuccessorAccepted with fields",
        REFUSED,
        "SuccessorAccepted with fields",
    ),
    Edit(
        "successor-topic-swapped-to-genesis",
        lambda r: r.update(2, topic=GENESIS),
        "notification 2: GenesisAccepted with fields",
        REFUSED,
        "GenesisAccepted with fields",
    ),
    Edit(
        "unknown-topic",
        lambda r: r.update(2, topic="nowhere.module:Nothing"),
        "unexpected event topic 'nowhere.module:Nothing'",
        REFUSED,
        "unexpected event topic",
    ),
    Edit(
        "topic-of-another-class",
        lambda r: r.update(2, topic="nenjim.journal:JournalChain"),
        "unexpected event topic",
        REFUSED,
        "unexpected event topic",
    ),
    Edit(
        "undecodable-state",
        lambda r: r.set_state(2, b"\x00not json"),
        "notification 2: cannot decode the stored event",
        REFUSED,
        "cannot decode",
    ),
    Edit(
        "field-missing",
        lambda r: r.edit_state(2, text=_DROP),
        "with fields",
        REFUSED,
        "with fields",
    ),
    Edit(
        "field-added",
        lambda r: r.edit_state(1, predecessor=digest("x")),
        "with fields",
        REFUSED,
        "with fields",
    ),
    Edit(
        "field-of-the-wrong-type",
        lambda r: r.edit_state(2, text=42),
        "fields of the wrong type: ['text']",
        REFUSED,
        "wrong type",
    ),
    Edit(
        "timestamp-of-the-wrong-type",
        lambda r: r.edit_state(1, timestamp="yesterday"),
        "fields of the wrong type: ['timestamp']",
        REFUSED,
        "wrong type",
    ),
    Edit(
        "genesis-of-another-aggregate",
        lambda r: r.edit_state(1, originator_topic="somewhere:Else"),
        "genesis of 'somewhere:Else'",
        REFUSED,
        "genesis of",
    ),
    Edit(
        "coordinate-edited",
        lambda r: r.edit_state(5, coordinate=A),
        "notification 5 (com.example.a0 20260201T000000Z): stored on another artifact's stream",
        REFUSED,
        "another artifact's stream",
    ),
    Edit(
        "coordinate-malformed",
        lambda r: r.edit_state(5, coordinate="Not\nA Coordinate"),
        "invalid artifact coordinate",
        REFUSED,
        "invalid artifact coordinate",
    ),
    Edit(
        "journal-version-edited-to-a-later-one",
        lambda r: r.edit_state(3, journal_version=V4),
        f"stored text is {A} {V3}",
        SERVED,
        "its event says",
    ),
    Edit(
        "journal-version-edited-to-an-earlier-one",
        lambda r: r.edit_state(3, journal_version=V1),
        "does not follow",
        REFUSED,
        "does not follow",
    ),
    Edit(
        "journal-version-malformed",
        lambda r: r.edit_state(3, journal_version="2026-03-01"),
        "is not YYYYMMDDTHHMMSSZ",
        REFUSED,
        "is not YYYYMMDDTHHMMSSZ",
    ),
    Edit(
        "predecessor-edited",
        lambda r: r.edit_state(2, predecessor=digest("x")),
        "does not follow",
        REFUSED,
        "does not follow",
    ),
    # --- notification ids and stream positions -----------------------------------------
    Edit(
        "gap-in-notification-ids",
        lambda r: r.update(5, id=9),
        "notification 9 follows notification 4: notification ids have no gaps",
        REFUSED,
        "have no gaps",
    ),
    Edit("ids-shifted", _shift_ids, "notification 2 follows notification 0", REFUSED, "no gaps"),
    Edit(
        "ids-swapped-within-a-stream",
        lambda r: _swap_ids(r, 1, 2),
        "stream position 2, expected 1",
        REFUSED,
        "stream position",
    ),
    Edit(
        "ids-swapped-between-streams",
        lambda r: _swap_ids(r, 3, 4),
        "transparency leaf 2 (notification 3) differs from the leaf of its stored text",
        CONSISTENT,
    ),
    Edit(
        "ids-swapped-between-streams-tree-recomputed",
        lambda r: (_swap_ids(r, 3, 4), _forget_tree(r)),
        TREE_DELETED,
        CONSISTENT,
    ),
    Edit(
        "originator-version-changed",
        lambda r: r.update(3, originator_version=7),
        "stream position 7, expected 3",
        REFUSED,
        "stream position",
    ),
    Edit(
        "originator-versions-swapped",
        lambda r: _swap_versions(r, 2, 3),
        "stream position 3, expected 2",
        REFUSED,
        "stream position",
    ),
    Edit(
        "event-moved-to-another-stream",
        lambda r: r.update(5, originator_id=r.stream(A), originator_version=4),
        "notification 5 (com.example.a1 20260201T000000Z): stored on another artifact's stream",
        REFUSED,
        "another artifact's stream",
    ),
    Edit(
        "event-moved-with-its-coordinate",
        lambda r: (
            r.update(5, originator_id=r.stream(A), originator_version=4),
            r.edit_state(5, coordinate=A),
        ),
        "does not follow",
        REFUSED,
        "does not follow",
    ),
    # --- deleted and duplicated events -------------------------------------------------
    Edit("event-deleted", lambda r: r.delete(2), "have no gaps", REFUSED, "have no gaps"),
    Edit(
        "genesis-deleted",
        lambda r: r.delete(1),
        "notification 2 follows notification 0",
        REFUSED,
        "have no gaps",
    ),
    Edit(
        "head-deleted-claim-kept",
        lambda r: r.delete(5),
        "has no revision",
        REFUSED,
        "has no revision",
    ),
    Edit(
        "tail-cut-with-its-claim",
        lambda r: (
            r.claims(
                "DELETE FROM {claims} WHERE namespace = %s AND key = %s",
                (DIGEST_NAMESPACE, r.state(5)["digest"]),
            ),
            r.delete(5),
        ),
        "the transparency tree holds 5 leaves; the log holds 4 revisions",
        CONSISTENT,
    ),
    Edit(
        "tail-cut-with-its-claim-tree-recomputed",
        lambda r: (
            r.claims(
                "DELETE FROM {claims} WHERE namespace = %s AND key = %s",
                (DIGEST_NAMESPACE, r.state(5)["digest"]),
            ),
            r.delete(5),
            _forget_tree(r),
        ),
        TREE_DELETED,
        CONSISTENT,
    ),
    Edit(
        "event-duplicated",
        lambda r: r.copy(2, 6, originator_version=4),
        "notification 6 (com.example.a0 20260201T000000Z): revision 20260201T000000Z does not "
        "follow",
        REFUSED,
        "does not follow",
    ),
    Edit(
        "event-duplicated-into-another-stream",
        lambda r: r.copy(4, 6, originator_id=r.stream(A), originator_version=4),
        "stored on another artifact's stream",
        REFUSED,
        "another artifact's stream",
    ),
    # --- claims --------------------------------------------------------------------------
    Edit(
        "claim-deleted",
        lambda r: r.claims(
            "DELETE FROM {claims} WHERE namespace = %s AND key = %s",
            (DIGEST_NAMESPACE, _a2_digest(r)),
        ),
        "has no digest claim: its claim was deleted, or its text and digest were edited",
        REFUSED,
        "(to check the whole store: nenjim journal audit --store ",
    ),
    Edit(
        "claim-inserted",
        _claim("INSERT INTO {claims} VALUES (%s, %s, %s)", DIGEST_NAMESPACE, digest("x"), A),
        "has no revision",
        REFUSED,
        "digest index",
    ),
    Edit(
        "claim-owner-changed",
        lambda r: r.claims("UPDATE {claims} SET owner = %s WHERE key = %s", (B, _a2_digest(r))),
        "is claimed by 'com.example.a1'",
        REFUSED,
        "digest index",
    ),
    Edit(
        "claim-key-changed",
        lambda r: r.claims(
            "UPDATE {claims} SET key = %s WHERE key = %s", (digest("x"), _a2_digest(r))
        ),
        "digest index",
        REFUSED,
        "digest index",
    ),
    Edit(
        "claim-moved-to-another-namespace",
        lambda r: r.claims(
            "UPDATE {claims} SET namespace = %s WHERE key = %s", ("elsewhere", _a2_digest(r))
        ),
        "digest index",
        REFUSED,
        "digest index",
    ),
]


def _load(root: Path, store: str) -> None:
    first = Chain(A)
    for version in (V1, V2, V3):
        first.add(version, (Rel("1.0.0", content(1)),))
    second = Chain(B)
    for version in (V1, V2):
        second.add(version, (Rel("1.0.0", content(2)),))
    for chain in (first, second):
        for version, text in zip(chain.versions, chain.texts, strict=True):
            (root / chain.artifact).mkdir(parents=True, exist_ok=True)
            (root / chain.artifact / f"{version}.journal").write_text(text)
    assembly = build_journal(root, store=store)
    assembly.process.start()
    assembly.process.stop()
    for path in root.glob("*/*.journal"):
        path.unlink()  # start-up now knows only what the log holds


def _start_and_read(root: Path, store: str) -> tuple[str, JournalError] | None:
    """Start a Journal on the edited log and read every revision: ``(phase, error)`` or None."""
    assembly = build_journal(root, store=store)
    phase = "start"
    try:
        assembly.process.start()
        phase = "query"
        for coordinate in assembly.service.coordinates():
            for revision in assembly.service.revisions(coordinate):
                assert revision.text
    except JournalError as error:
        return phase, error
    finally:
        assembly.process.stop()
    return None


POSTGRESQL_SLICE = {
    "untouched",
    "text-edited",
    "head-forged-consistently",
    "head-forged-consistently-tree-recomputed",
    "head-forged-unparsable",
    "undecodable-state",
    "field-of-the-wrong-type",
    "unknown-topic",
    "gap-in-notification-ids",
    "ids-swapped-within-a-stream",
    "originator-version-changed",
    "event-moved-to-another-stream",
    "event-duplicated-into-another-stream",
    "tail-cut-with-its-claim",
    "tail-cut-with-its-claim-tree-recomputed",
    "claim-deleted",
    "claim-inserted",
}
EVERY_EDIT = os.environ.get("NENJIM_TEST_EVERY_EDIT") == "1"
CASES = [pytest.param(("sqlite", e), id=f"sqlite-{e.name}") for e in EDITS] + [
    pytest.param(("postgresql", e), id=f"postgresql-{e.name}")
    for e in EDITS
    if EVERY_EDIT or e.name in POSTGRESQL_SLICE
]


@pytest.fixture
def edited_store(request: pytest.FixtureRequest, close_logs: None) -> str:
    """A fresh durable store of the case's kind."""
    kind, _ = request.node.callspec.params["case"]
    if kind == "sqlite":
        directory: Path = request.getfixturevalue("tmp_path_factory").mktemp("store")
        return f"sqlite://{directory / 'log.db'}"
    url: str = request.getfixturevalue("postgres_schema_url")
    return url


@pytest.mark.parametrize("case", CASES)
def test_audit_and_start_up_agree_on_an_edited_log(
    tmp_path: Path, edited_store: str, case: tuple[str, Edit]
) -> None:
    durable_store_url, edit = edited_store, case[1]
    _load(tmp_path, durable_store_url)
    rows = LogRows(durable_store_url)
    edit.apply(rows)
    rows.forget_projections()  # what start-up finds when it folds the edited log itself

    report = audit_journal_log(durable_store_url)
    if edit.audit is None:
        assert report.ok, journal_problem(report)
    else:
        assert journal_problem(report) is not None, "the audit missed the edit"
        assert edit.audit in journal_problem(report)
        assert len(journal_problem(report).splitlines()) == 1

    outcome = _start_and_read(tmp_path, durable_store_url)
    if edit.start in (CONSISTENT, SERVED_SILENTLY):
        assert outcome is None, str(outcome[1] if outcome else "")
        return
    assert outcome is not None, "start-up and queries accepted the edited log"
    phase, error = outcome
    assert edit.start_says in str(error)
    assert len(str(error).splitlines()) == 1
    if edit.start == SERVED:
        assert phase == "query"
        assert isinstance(error, JournalIntegrityError)
    else:
        assert phase == "start"


def test_a_text_edited_under_a_persisted_projection_is_refused_at_start(
    tmp_path: Path, durable_store_url: str
) -> None:
    """Start-up trusts the rows it persisted; a text it must read back by position (its file
    is gone) is read and checked before the service is published."""
    store = durable_store_url
    _load(tmp_path, store)
    rows = LogRows(store)
    rows.edit_state(2, text=rows.state(2)["text"] + "# edited\n")
    outcome = _start_and_read(tmp_path, store)
    assert outcome is not None, "the edited text was served"
    phase, error = outcome
    assert phase == "start"
    assert isinstance(error, JournalIntegrityError)
    assert "notification 2 (com.example.a0 20260201T000000Z): stored text does not digest" in (
        str(error)
    )


@pytest.mark.parametrize("edit", ["event", "row"])
def test_a_start_that_finds_the_log_or_its_projection_damaged_appends_nothing(
    tmp_path: Path, durable_store_url: str, edit: str
) -> None:
    """The texts a start reads back from the log (no file holds them) are read, and checked
    against their events and persisted rows, before the root's new files are appended."""
    store = durable_store_url
    _load(tmp_path, store)
    rows = LogRows(store)
    if edit == "event":
        rows.edit_state(2, text=rows.state(2)["text"] + "# edited\n")
        says = "notification 2 (com.example.a0 20260201T000000Z): stored text does not digest"
    else:  # the persisted row of the revision names another version than its event
        rows.execute(  # the rows of the generation the one start wrote
            "UPDATE journal_chain_revisions_g1 SET journal_version = %s WHERE position = 2", (V4,)
        )
        says = (
            f"notification 2: the persisted chain projection says {A} {V4} "
            f"{rows.state(2)['digest']}; its event says {A} {V2} {rows.state(2)['digest']}"
        )
    new = tmp_path / "com.example.new"
    new.mkdir()
    (new / f"{V1}.journal").write_text(journal_text("com.example.new", V1))
    before = rows.execute("SELECT count(*) FROM journal_events")
    outcome = _start_and_read(tmp_path, store)
    assert outcome is not None, "the damage went unnoticed"
    phase, error = outcome
    assert phase == "start"
    assert says in str(error)
    assert rows.execute("SELECT count(*) FROM journal_events") == before


def test_a_text_edited_under_a_persisted_projection_is_served_from_its_file_and_audited(
    tmp_path: Path, durable_store_url: str
) -> None:
    """With the accepted file still in the root, a restart takes the text from the file
    (its bytes digest to the persisted row's digest) and never reads the edited copy; the
    audit, which reads every stored text, reports it."""
    store = durable_store_url
    _load(tmp_path, store)
    rows = LogRows(store)
    accepted = rows.state(2)["text"]
    rows.edit_state(2, text=accepted + "# edited\n")
    (tmp_path / A / f"{V2}.journal").write_text(accepted)
    assembly = build_journal(tmp_path, store=store)
    assembly.process.start()
    try:
        served = assembly.service.revision(A, V2)
        assert served is not None
        assert served.text == accepted
    finally:
        assembly.process.stop()
    report = audit_journal_log(store)
    assert journal_problem(report) is not None, "the audit missed the edit"
    assert "notification 2" in journal_problem(report)


def test_a_forged_stored_text_whose_file_is_still_in_the_root_is_a_conflict(
    tmp_path: Path, durable_store_url: str
) -> None:
    """A consistent forgery is visible to start-up when the root still holds the file."""
    _load(tmp_path, durable_store_url)
    rows = LogRows(durable_store_url)
    original = rows.state(3)["text"]
    _forge(rows, 3, original + "# forged\n", claim=True)
    rows.forget_projections()
    (tmp_path / A / f"{V3}.journal").write_text(original)
    outcome = _start_and_read(tmp_path, durable_store_url)
    assert outcome is not None
    assert outcome[0] == "start"
    assert "already accepted with digest" in str(outcome[1])


def test_every_kind_of_edit_is_in_the_table() -> None:
    assert len(EDITS) >= 40
    assert {e.start for e in EDITS} == {REFUSED, SERVED, SERVED_SILENTLY, CONSISTENT}
    assert len({e.name for e in EDITS}) == len(EDITS)


def test_a_text_edited_under_the_store_is_refused_by_the_journal_served_from_it(
    tmp_path: Path, durable_store_url: str
) -> None:
    """Served from the store, a revision's text is read by position when a query first needs
    it, and checked against its row's digest then: an edited one is an integrity error
    naming its artifact and version, and the other artifacts are still answered."""
    store = durable_store_url
    _load(tmp_path, store)
    rows = LogRows(store)
    rows.edit_state(2, text=rows.state(2)["text"] + "# edited\n")
    served = StoredJournal(store, root=tmp_path)
    served.start()
    try:
        with pytest.raises(JournalIntegrityError) as raised:
            served.revision(A, V2)
        assert f"notification 2 ({A} {V2}): stored text does not digest" in str(raised.value)
        assert len(str(raised.value).splitlines()) == 1
        head = served.latest(B)
        assert head is not None
        assert str(head.version) == V2
    finally:
        served.stop()


@pytest.mark.parametrize("name", ["untouched", "head-forged-breaking-history"])
def test_the_audit_reads_again_a_head_it_did_not_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, close_logs: None, name: str
) -> None:
    # No parsed head kept: each successor's history rule reads its head from the log.
    monkeypatch.setattr(audit_module, "HEAD_CACHE", 0)
    store = f"sqlite://{tmp_path / 'log.db'}"
    _load(tmp_path / "root", store)
    edit = next(e for e in EDITS if e.name == name)
    edit.apply(LogRows(store))

    problem = journal_problem(audit_journal_log(store))

    if edit.audit is None:
        assert problem is None
    else:
        assert problem is not None
        assert edit.audit in problem
