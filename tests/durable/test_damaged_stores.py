"""Every kind of edit to every table a store holds ends in a report, never a crash.

One store holds both halves: a Journal log of 261 revisions (enough for a
tile of level 1), started once so that its chain projection is persisted,
and the durable state of domain Persistence. A table below lists every table
that store holds (a test checks the list against the store), with its
columns. For each table the matrix makes each kind of edit an operator's
plain SQL can make: delete the first row, delete the last row, insert a
bogus row, and per column: set it NULL (where SQL allows it), store a value
of another type (SQLite, which lets a column hold any type: TEXT for BLOB,
TEXT for INTEGER, INTEGER for TEXT), corrupt it (a byte or character added,
an integer moved by one: a lowered or raised position), and drop the table.

Then every command that checks the store runs on it, as a user runs it:
``journal audit``, ``journal audit --checkpoint``, a Journal start
(``journal verify`` of an empty root), ``storage audit``, after an edit of
the Journal's tables an ingest (a start with a new file in the root), and
last the repairs (``journal repair``, ``storage repair``). Each must end with
a documented exit code (0, 1, or 3 for a store of another schema version or
Journal) and, when it fails, one line naming what and where: never exit 4,
never a traceback, never a raw driver error. The audit that owns the table
must report the edit (exit 1), unless the row is one no check depends on
(listed below, with why). The audits write nothing: every table is dumped
before and after them. An ingest that fails appends nothing; one that fails
on the transparency tree points to ``journal repair``, after which it goes
through. An edit the database itself refuses must be one known to be refused.

Every edit runs on SQLite; on PostgreSQL a slice runs by default (see
``_slice``: each store there is filled anew, a second or two a case), the
whole matrix with ``NENJIM_TEST_EVERY_EDIT=1``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from journal_texts import digest, journal_text, write_revision
from nenjim.cli import main as nenjim
from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot
from nenjim.domain.journal.chain import JournalChain, accept_revision
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.persistence import Persistence
from nenjim.journal.impl.ref.log import JournalLog, root_identity

V1, V2 = "20260101T000000Z", "20260201T000000Z"
REVISIONS = 260  # geneses, then one successor: 261 leaves, a tile of level 1

JOURNAL, STORAGE, SHARED = "journal", "storage", "shared"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "int", "text", "blob", "uuid" or "json" (PostgreSQL's uuid, jsonb; SQLite's text)
    nullable: dict[str, bool]  # by backend: does SQL let it hold NULL?


def _col(name: str, kind: str, *, sqlite_null: bool = False, pg_null: bool = False) -> Column:
    return Column(name, kind, {"sqlite": sqlite_null, "postgresql": pg_null})


TABLES: dict[str, tuple[str, tuple[Column, ...]]] = {
    "journal_events": (
        JOURNAL,
        (
            _col("originator_id", "uuid", sqlite_null=True),
            _col("originator_version", "int", sqlite_null=True),
            _col("topic", "text", sqlite_null=True, pg_null=True),
            _col("state", "blob", sqlite_null=True, pg_null=True),
        ),
    ),
    "journal_claims": (
        JOURNAL,
        (_col("namespace", "text"), _col("key", "text"), _col("owner", "text")),
    ),
    "journal_entries": (
        JOURNAL,
        (_col("position", "int"), _col("notification_id", "int"), _col("data", "blob")),
    ),
    "journal_tiles": (JOURNAL, (_col("level", "int"), _col("idx", "int"), _col("data", "blob"))),
    "nenjim_projections": (
        JOURNAL,
        (
            _col("name", "text"),
            _col("version", "int"),
            _col("generation", "int"),
            _col("position", "int"),
        ),
    ),
    "journal_chain_revisions_g1": (
        JOURNAL,
        (
            _col("position", "int"),
            _col("coordinate", "text"),
            _col("journal_version", "text"),
            _col("digest", "text"),
        ),
    ),
    "nenjim_identity": (SHARED, (_col("component", "text"), _col("identity", "text"))),
    "nenjim_schema": (SHARED, (_col("component", "text"), _col("version", "int"))),
    "storage_events": (
        STORAGE,
        (
            _col("notification_id", "int"),
            _col("originator_id", "uuid"),
            _col("originator_version", "int"),
            _col("topic", "text"),
            _col("state", "blob"),
        ),
    ),
    "storage_records": (
        STORAGE,
        (
            _col("resource", "text"),
            _col("key", "text"),
            _col("revision", "int"),
            _col("attributes", "json"),
            _col("record_type", "text"),
            _col("format_version", "text"),
            _col("payload", "text"),
            _col("log_version", "int"),
        ),
    ),
    "storage_blobs": (
        STORAGE,
        (
            _col("resource", "text"),
            _col("key", "text"),
            _col("data", "blob"),
            _col("attributes", "json"),
        ),
    ),
    "storage_stream_heads": (
        STORAGE,
        (
            _col("resource", "text"),
            _col("stream", "text"),
            _col("head", "int"),
            _col("base", "int"),
        ),
    ),
    "storage_stream_ids": (
        STORAGE,
        (_col("resource", "text"), _col("stream", "text"), _col("entry_id", "text")),
    ),
    "storage_generated_indexes": (
        STORAGE,
        (_col("index_name", "text"), _col("resource", "text")),
    ),
}

# Rows no check depends on: editing them changes nothing any command reads back.
UNCHECKED = {
    # The schema row of a component is read by that component's opener only; the
    # storage audit reads its own (storage's), the Journal's openers theirs.
    "nenjim_schema": "each opener checks its own component's row",
    # Which resources generated indexes belong to: a bookkeeping list of the indexes,
    # whose presence the audit checks in the catalog of the database itself.
    "storage_generated_indexes": "the audit checks the indexes themselves",
    # The identity is checked by a start (a Journal of another root is refused), not
    # by the audit, which opens any Journal's log.
    "nenjim_identity": "checked by a start, not by the audit",
}


# Edits after which nothing is served from what was edited: the tracking row of the
# chain projection no longer names it at this fold's version (deleted, renamed, another
# version, its table dropped), so a start folds the whole log again, checking every
# event, and writes a new generation, as for a store whose projection was never written.
RECOVERED = {
    f"nenjim_projections-{kind}"
    for kind in (
        "delete-first",
        "delete-last",
        "insert-bogus",
        "retype-name",
        "corrupt-name",
        "corrupt-version",
        "lower-version",
        "drop",
    )
}


# Edits the database itself refuses: a lowered key taken by the row before (the edits
# change the last row), SQLite's integer primary keys holding text.
_LOWERED_KEYS = {
    "journal_entries-lower-position",
    "journal_tiles-lower-level",
    "journal_chain_revisions_g1-lower-position",
    "storage_events-lower-notification_id",
    "storage_events-lower-originator_version",
}
REFUSED = {
    "sqlite": _LOWERED_KEYS
    | {
        "journal_events-lower-originator_version",
        "journal_entries-retype-position",
        "journal_chain_revisions_g1-retype-position",
        "storage_events-retype-notification_id",
    },
    "postgresql": _LOWERED_KEYS,
}


@dataclass(frozen=True)
class Edit:
    table: str
    kind: str
    column: str | None = None

    @property
    def id(self) -> str:
        return "-".join(part for part in (self.table, self.kind, self.column) if part)


def _edits(backend: str) -> list[Edit]:
    edits: list[Edit] = []
    for table, (_, columns) in TABLES.items():
        edits += [Edit(table, kind) for kind in ("delete-first", "delete-last", "insert-bogus")]
        for column in columns:
            if column.nullable[backend]:
                edits.append(Edit(table, "null", column.name))
            if backend == "sqlite":
                edits.append(Edit(table, "retype", column.name))
            edits.append(Edit(table, "corrupt", column.name))
            if column.kind == "int":
                edits.append(Edit(table, "lower", column.name))
        edits.append(Edit(table, "drop"))
    return edits


# Beside every table's last row deleted and the table dropped, what PostgreSQL stores its
# own way: its JSON columns (jsonb), the ids its sequences hand out (with gaps) or the
# Journal numbers itself, the tree's write path (ingests extend it in pipelined
# statements), a log with gaps by design. With them every kind of edit runs there once.
POSTGRESQL_ALSO = {
    "storage_records-insert-bogus",
    "storage_blobs-insert-bogus",
    "storage_records-corrupt-attributes",
    "storage_events-corrupt-notification_id",
    "storage_events-delete-first",
    "journal_events-insert-bogus",
    "journal_tiles-corrupt-data",
    "journal_entries-corrupt-position",
    "nenjim_projections-lower-position",
}


def _slice(edits: list[Edit]) -> list[Edit]:
    """What PostgreSQL runs by default, bounded: every table's last row deleted and the
    table dropped, every NULL its columns allow, and :data:`POSTGRESQL_ALSO`."""
    kinds = {"delete-last", "drop", "null"}
    return [e for e in edits if e.kind in kinds or e.id in POSTGRESQL_ALSO]


EVERY_EDIT = os.environ.get("NENJIM_TEST_EVERY_EDIT") == "1"
CASES = [pytest.param(("sqlite", e), id=f"sqlite-{e.id}") for e in _edits("sqlite")] + [
    pytest.param(("postgresql", e), id=f"postgresql-{e.id}")
    for e in (_edits("postgresql") if EVERY_EDIT else _slice(_edits("postgresql")))
]


class Rows:
    """Plain SQL on the store, as an operator's."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite:")

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        if self.sqlite:
            connection = sqlite3.connect(self.url.removeprefix("sqlite://"))
            # A BLOB edited into TEXT need not be UTF-8: read it as it is.
            connection.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
            try:
                with connection:
                    yield connection
            finally:
                connection.close()
            return
        parts = urlsplit(self.url)
        schema = parse_qs(parts.query)["schema"][0]
        with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as connection:
            connection.execute(f'SET search_path TO "{schema}"')
            yield connection

    def execute(self, sql: str) -> list[tuple[Any, ...]]:
        with self._connection() as connection:
            cursor = connection.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []

    def tables(self) -> set[str]:
        if self.sqlite:
            query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        else:
            query = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        return {name for (name,) in self.execute(query)}

    def dump(self) -> dict[str, list[str]]:
        """Every table's rows (as text, sorted), and every index: what an audit must keep."""
        dumped = {}
        for table in sorted(self.tables()):
            rows = self.execute(f"SELECT * FROM {table}")
            dumped[table] = sorted(repr(tuple(_plain(v) for v in row)) for row in rows)
        if self.sqlite:
            indexes = "SELECT name FROM sqlite_master WHERE type = 'index'"
        else:
            indexes = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
        dumped["(indexes)"] = sorted(name for (name,) in self.execute(indexes))
        return dumped

    def order(self, table: str) -> str:
        """The columns a row's place in ``table`` is read by (SQLite: its rowid, if any)."""
        _, columns = TABLES[table]
        key = ", ".join(c.name for c in columns)
        if self.sqlite and table in ("journal_events", "journal_chain_revisions_g1"):
            return "rowid"
        return key

    def edit(self, edit: Edit) -> bool:
        """Make ``edit``; False when the database itself refuses it (a unique key)."""
        try:
            self._edit(edit)
        except (sqlite3.IntegrityError, psycopg.errors.IntegrityError):
            return False
        return True

    def _edit(self, edit: Edit) -> None:
        table = edit.table
        if edit.kind == "drop":
            self.execute(f"DROP TABLE {table}")
            return
        if edit.kind in ("delete-first", "delete-last"):
            where = self._row_where(table, last=edit.kind == "delete-last")
            self.execute(f"DELETE FROM {table} WHERE {where}")
            return
        if edit.kind == "insert-bogus":
            self._insert_bogus(table)
            return
        column = next(c for c in TABLES[table][1] if c.name == edit.column)
        value = self._new_value(edit.kind, column)
        where = self._row_where(table, last=True)
        self.execute(f"UPDATE {table} SET {column.name} = {value} WHERE {where}")

    def _row_where(self, table: str, *, last: bool) -> str:
        """A condition selecting the first or last row of ``table``."""
        _, columns = TABLES[table]
        direction = "DESC" if last else "ASC"
        if self.sqlite:
            key = "rowid" if table not in _WITHOUT_ROWID else columns[0].name
            if key == "rowid":
                return f"rowid = (SELECT rowid FROM {table} ORDER BY rowid {direction} LIMIT 1)"
        names = ", ".join(c.name for c in columns)
        ordering = ", ".join(f"{c.name} {direction}" for c in columns)
        return f"({names}) IN (SELECT {names} FROM {table} ORDER BY {ordering} LIMIT 1)"

    def _insert_bogus(self, table: str) -> None:
        _, columns = TABLES[table]
        values = []
        for column in columns:
            name = column.name
            if column.kind == "int":
                values.append(f"{name} + 100000")
            elif column.kind == "blob":
                values.append(name)
            elif column.kind == "uuid" and not self.sqlite:
                values.append("md5(random()::text)::uuid")
            elif column.kind == "json" and not self.sqlite:
                values.append(f"{name} || {_JSON_KEY}")  # jsonb holds only JSON
            elif name in ("resource", "namespace"):
                values.append(name)  # a resource (claims namespace) in use, another key
            else:
                values.append(f"{name} || '-bogus'")
        names = ", ".join(c.name for c in columns)
        if table == "journal_events" and not self.sqlite:
            # The Journal's log numbers its events itself (max + 1 under its lock), so the
            # column's sequence is never advanced: its next value is an id already taken.
            names += ", notification_id"
            values.append("(SELECT max(notification_id) + 1 FROM journal_events)")
        where = self._row_where(table, last=True)
        self.execute(
            f"INSERT INTO {table} ({names}) SELECT {', '.join(values)} FROM {table} WHERE {where}"
        )

    def _new_value(self, kind: str, column: Column) -> str:
        name = column.name
        if kind == "null":
            return "NULL"
        if kind == "lower":
            return f"{name} - 1"
        if kind == "retype":  # SQLite only: another storage class in the same column
            return {
                "int": "'not a number'",
                "text": "7",
                "uuid": "7",
                "json": "7",
                "blob": f"CAST({name} AS TEXT)",
            }[column.kind]
        # corrupt
        if column.kind == "int":
            return f"{name} + 1"
        if column.kind == "blob":
            # Its first byte cut (SQLite's || would make it TEXT); an empty one (a blob
            # row's: the bytes are in its put event) given a byte.
            if self.sqlite:
                return f"CASE WHEN length({name}) = 0 THEN X'7E' ELSE substr({name}, 2) END"
            cut = f"substring({name} from 2)"
            return f"CASE WHEN length({name}) = 0 THEN '\\x7e'::bytea ELSE {cut} END"
        if column.kind == "uuid":  # another stream's id
            return "'0123456789abcdef0123456789abcdef'" if self.sqlite else "md5('x')::uuid"
        if column.kind == "json" and not self.sqlite:  # jsonb holds only JSON: a key added
            return f"{name} || {_JSON_KEY}"
        return f"{name} || '~'"


_JSON_KEY = """'{"~": 1}'::jsonb"""

_WITHOUT_ROWID = {
    "journal_claims",
    "journal_tiles",
    "nenjim_projections",
    "nenjim_identity",
    "nenjim_schema",
    "storage_records",
    "storage_blobs",
    "storage_stream_heads",
    "storage_stream_ids",
    "storage_generated_indexes",
}


def _plain(value: Any) -> Any:
    return bytes(value) if isinstance(value, memoryview) else value


# -- the store ----------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    root: Path  # an empty Journal root: a start knows only what the log holds
    checkpoint: Path
    verifier: Path


def _fill(url: str, root: Path) -> None:
    """The Journal's revisions, a start (the persisted projection), the durable state."""
    log = JournalLog(url, identity=root_identity(os.path.realpath(root)))
    chains = [
        JournalChain.start(parse_journal(journal_text(f"org.example.a{n}", V1)))
        for n in range(REVISIONS)
    ]
    log.append_chains(chains)
    successor = parse_journal(
        journal_text("org.example.a0", V2, predecessor=digest(journal_text("org.example.a0", V1)))
    )
    chain, _ = accept_revision(chains[0], successor, log.digest_owner)
    log.append_chains([chain])
    log.close()
    assert _run("journal", "verify", str(root), "--store", url)[0] == 0
    persistence = Persistence.open(url)
    try:
        agent = persistence.agents.create(
            AgentRoot.create("agent-1", definition_id="d", definition_version="1")
        )
        persistence.executions.create_active(
            AgentExecution.start("run-1", agent_id="agent-1", base=agent)
        )
        persistence.contents.put_text("hello")
        persistence.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
        )
        persistence.journals.append(
            "agent-1",
            expected_position=0,
            records=[
                AgentJournalRecord.create(f"r{n}", agent_id="agent-1", kind="message")
                for n in (1, 2)
            ],
        )
    finally:
        persistence.close()


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = nenjim(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("keys")
    signer = directory / "log.key"
    code, out, err = _run("keys", "new", "example.com/log", "--out", str(signer))
    assert code == 0, err
    verifier = directory / "log.vkey"
    verifier.write_text(out.splitlines()[-1])
    return signer, verifier


@pytest.fixture(scope="module")
def sqlite_template(
    tmp_path_factory: pytest.TempPathFactory, keys: tuple[Path, Path]
) -> tuple[Path, Template]:
    directory = tmp_path_factory.mktemp("template")
    root = directory / "root"
    root.mkdir()
    url = f"sqlite://{directory / 'store.db'}"
    _fill(url, root)
    return directory / "store.db", _template(url, root, directory, keys)


def _template(url: str, root: Path, directory: Path, keys: tuple[Path, Path]) -> Template:
    code, out, err = _run("journal", "checkpoint", "--store", url, "--key", str(keys[0]))
    assert code == 0, err
    checkpoint = directory / "checkpoint.txt"
    checkpoint.write_text(out)
    return Template(root, checkpoint, keys[1])


@pytest.fixture
def damaged(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    keys: tuple[Path, Path],
    close_logs: None,
) -> tuple[str, Template]:
    """A fresh copy of the store (SQLite) or a freshly filled schema (PostgreSQL)."""
    backend, _ = request.node.callspec.params["case"]
    if backend == "sqlite":
        path, template = request.getfixturevalue("sqlite_template")
        shutil.copyfile(path, tmp_path / "store.db")
        return f"sqlite://{tmp_path / 'store.db'}", template
    url: str = request.getfixturevalue("postgres_schema_url")
    root = tmp_path / "root"
    root.mkdir()
    _fill(url, root)
    return url, _template(url, root, tmp_path, keys)


# -- the checks ---------------------------------------------------------------------

TREE = {"journal_entries", "journal_tiles"}
"""The tables of the Journal's transparency tree, derived from its log: the writers read
them to extend the tree."""
NEW = "org.example.new"


def _ingest(url: str, root: Path, rows: Rows) -> tuple[int, str, str]:
    """A start that ingests one new revision (a later ``journal verify`` of the root, a file
    added); when it fails, nothing was appended."""
    gc.collect()  # no log of this process is left to hand its tree's edge to this one
    before = _event_count(rows)
    path = write_revision(root, NEW, V1, journal_text(NEW, V1))
    try:
        result = _run("journal", "verify", str(root), "--store", url)
    finally:
        shutil.rmtree(path.parent)
    if result[0]:
        assert _event_count(rows) == before, f"a failed ingest appended events: {result[2]}"
    return result


def _event_count(rows: Rows) -> int | None:
    try:
        return int(rows.execute("SELECT count(*) FROM journal_events")[0][0])
    except (sqlite3.Error, psycopg.Error):
        return None  # the table was dropped


STORE_LEVEL = ("schema version", "holds the Journal of", "belongs to")
"""What an exit 3 may say on a damaged store: the store is of another schema version or
Journal (documented: the store cannot be used), not a crash."""


def _check(what: str, code: int, err: str) -> None:
    assert code in (0, 1, 3), f"{what}: exit {code}: {err}"
    if code:
        assert err.count("\n") == 1, f"{what}: not one line: {err!r}"
        assert err.startswith("nenjim: error: "), f"{what}: {err!r}"
    for crash in ("Traceback", "internal error", "psycopg", "sqlite3.", "UniqueViolation"):
        assert crash not in err, f"{what}: {err}"
    if code == 3:
        assert any(reason in err for reason in STORE_LEVEL), f"{what}: exit 3: {err}"


@pytest.mark.parametrize("case", CASES)
def test_every_edit_of_every_table_ends_in_a_report(
    damaged: tuple[str, Template], case: tuple[str, Edit]
) -> None:
    url, template = damaged
    edit = case[1]
    rows = Rows(url)
    if not rows.edit(edit):
        # The database refused it (a unique key, SQLite's integer primary key): nothing to
        # check, as long as it is one of the edits known to be refused.
        assert edit.id in REFUSED[case[0]], f"the database refused {edit.id}"
        return
    before = rows.dump()

    journal_audit = _run("journal", "audit", "--store", url)
    anchored = _run(
        "journal",
        "audit",
        "--store",
        url,
        "--checkpoint",
        str(template.checkpoint),
        "--key",
        str(template.verifier),
    )
    storage_audit = _run("storage", "audit", "--store", url)
    assert rows.dump() == before, "an audit wrote to the store"

    start = _run("journal", "verify", str(template.root), "--store", url)
    family = TABLES[edit.table][0]
    ran = {
        "journal audit": journal_audit,
        "journal audit --checkpoint": anchored,
        "storage audit": storage_audit,
        "start": start,
    }
    if family != STORAGE:  # the Journal's own tables: what its writers read
        ran["ingest"] = ingest = _ingest(url, template.root, rows)
        if edit.table in TREE and ingest[0]:
            assert "nenjim journal repair --store" in ingest[2], ingest[2]
    ran["journal repair"] = _run("journal", "repair", "--store", url)
    ran["storage repair"] = _run("storage", "repair", "--store", url)
    for what, (code, _, err) in ran.items():
        _check(what, code, err)
    if edit.table in TREE and ran["journal repair"][0] == 0:
        assert _ingest(url, template.root, rows)[0] == 0, "an ingest after the repair failed"

    if edit.table in UNCHECKED:
        return
    if edit.id in RECOVERED:
        assert start[0] == 0, start[2]
        assert _run("journal", "audit", "--store", url)[0] == 0
        return
    owner = {JOURNAL: journal_audit, STORAGE: storage_audit}[family]
    assert owner[0] != 0, f"the {family} audit missed the edit: {owner[1]}"


def test_the_table_lists_every_table_of_the_store(
    sqlite_template: tuple[Path, Template],
) -> None:
    path, _ = sqlite_template
    assert Rows(f"sqlite://{path}").tables() == set(TABLES)


def test_the_postgresql_slice_names_edits_of_the_matrix() -> None:
    assert {e.id for e in _edits("postgresql")} >= POSTGRESQL_ALSO
