"""The floor under one Journal ingest: the same row writes, by hand, with the raw driver.

One ``JournalIngestion.ingest`` of a successor writes, in one transaction,
the revision event, its digest claim, the transparency log's entry (leaf)
and the stored tiles the leaf changes (a tile that fills, and the levels
above it). The writer holds the tree's right edge and where the entries end
from the process's previous commit: on SQLite it reads that end again only
when the event's id shows that another writer appended since (:class:`KnownEnd`).
:func:`capture_ingest` records the statements a real ingest runs on SQLite
(from the connections' trace callback); the writers here replay the same
statements with fresh keys, payloads of the same sizes, and none of the
engine's Python (no decision, no tree hashing, no projection, no
``eventsourcing`` application). On PostgreSQL they are plain statements, not
the engine's append function, but take the same table lock and number ids
the same way, in the same two round trips (a taken claim shows as an insert
of no row, where the function reads the holder back).

The tables are always created by the engine itself (:func:`prepare_store`),
so the baseline writes into exactly the schema and indexes an ingest does.
"""

from __future__ import annotations

import hashlib
import pstats
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from benchmarks.common import PG_URL, REPO, Step, chain_texts
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.transparency import HASH_SIZE, TILE_HEIGHT, TILE_WIDTH
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection

EVENTS = f"{JournalLog.name}_events"
CLAIMS = f"{JournalLog.name}_claims"
ENTRIES = f"{JournalLog.name}_entries"
TILES = f"{JournalLog.name}_tiles"
# Bounded work per writer, far more than a timed pass gets through.
_CAPACITY = 1_000_000

Value = int | str | bytes


# --------------------------------------------------------------------------- capture


@dataclass(frozen=True, slots=True)
class Statement:
    """One executed statement: its text with every literal as ``?``, and those literals."""

    shape: str
    values: tuple[Value, ...]


_LITERAL = re.compile(r"x'([0-9a-fA-F]*)'|'((?:[^']|'')*)'|\b(\d+)\b")


def parse_statement(text: str) -> Statement:
    """Split SQLite's expanded statement text into its shape and its literal values."""
    values: list[Value] = []

    def take(match: re.Match[str]) -> str:
        blob, string, number = match.groups()
        if blob is not None:
            values.append(bytes.fromhex(blob))
        elif string is not None:
            values.append(string.replace("''", "'"))
        else:
            values.append(int(number))
        return "?"

    shape = _LITERAL.sub(take, text)
    # Whitespace differs between hand-written and library SQL; the statement does not.
    shape = re.sub(r"\s*,\s*", ", ", re.sub(r"\s+", " ", shape)).strip()
    return Statement(shape, tuple(values))


@contextmanager
def traced_sqlite() -> Iterator[list[str]]:
    """Every statement run on the SQLite connections opened inside the block, values expanded.

    The engine's connections are private to its pool, so the block wraps
    ``sqlite3.connect`` to give each new connection a trace callback. Meant
    for set-up code on one thread: the wrapper is process-wide while it lasts.
    """
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    sqlite3.connect = traced  # type: ignore[assignment]  # one signature for the overloads
    try:
        yield statements
    finally:
        sqlite3.connect = connect


def open_ingestion(url: str) -> JournalIngestion:
    """An ingestion over a fresh log at ``url`` (the engine creates every table)."""
    return JournalIngestion(JournalLog(url), JournalChainsProjection())


def capture_ingest(path: Path, successors: int, artifact: str = "bench.capture") -> list[Statement]:
    """The statements of ``successors`` single ingests after a genesis, in a new SQLite file."""
    revisions = [parse_journal(text) for text in chain_texts(artifact, successors + 1)]
    with traced_sqlite() as traced:
        ingestion = open_ingestion(f"sqlite:///{path}")
        try:
            ingestion.ingest_all(revisions[:1])
            ingestion.catch_up()
            traced.clear()
            for revision in revisions[1:]:
                ingestion.ingest(revision)
        finally:
            ingestion.close()
        return [parse_statement(text) for text in traced]


@dataclass(frozen=True, slots=True)
class IngestWrites:
    """The payloads of one captured ingest: replayed as they are, or as keys of the same size."""

    topic: str
    state: bytes
    claim_namespace: str
    claim_owner: str
    claim_key_size: int
    entry_size: int


def ingest_writes(statements: Sequence[Statement]) -> IngestWrites:
    """The payloads of the first ingest among ``statements``."""

    def values(table: str) -> tuple[Value, ...]:
        for statement in statements:
            if statement.shape.startswith(f"INSERT INTO {table} "):
                return statement.values
        raise LookupError(f"the captured ingest wrote no row into {table}")

    _, _, topic, state = values(EVENTS)
    namespace, key, owner = values(CLAIMS)
    _, _, entry = values(ENTRIES)
    if not (
        isinstance(topic, str)
        and isinstance(state, bytes)
        and isinstance(namespace, str)
        and isinstance(key, str)
        and isinstance(owner, str)
        and isinstance(entry, bytes)
    ):
        raise TypeError(f"unexpected literal types in the captured ingest: {statements!r}")
    return IngestWrites(topic, state, namespace, owner, len(key), len(entry))


def capture_writes(path: Path) -> IngestWrites:
    """The payloads of one real ingest, captured in a new SQLite file at ``path``."""
    return ingest_writes(capture_ingest(path, 1))


def prepare_store(url: str, artifact: str = "bench.same") -> None:
    """Create the log's tables and a first revision at ``url``, through the engine itself."""
    ingestion = open_ingestion(url)
    try:
        ingestion.ingest_all([parse_journal(chain_texts(artifact, 1)[0])])
    finally:
        ingestion.close()


# --------------------------------------------------------------------------- the tree's rows


def stored_tiles_after(size: int) -> list[tuple[int, int, int]]:
    """``(level, index, width)`` of every tile that one more leaf after ``size`` writes:
    each tile the leaf changes but a partial one of level 0 (hashed from the entries)."""
    grown = size + 1
    tiles = []
    level = 0
    # Level 0 always grows; a level above grows when the level below completes a tile.
    while level == 0 or grown % (1 << (TILE_HEIGHT * level)) == 0:
        below = grown >> (TILE_HEIGHT * level)
        width = below % TILE_WIDTH or TILE_WIDTH
        if level or width == TILE_WIDTH:
            tiles.append((level, (below - 1) // TILE_WIDTH, width))
        level += 1
    return tiles


class _Rows:
    """The keys one writer's calls write, with the captured sizes.

    As in the ingest benchmark, call ``n`` appends to stream ``n % artifacts``
    (round-robin, versions from ``first_version``), and its claim key and
    entry are hash-like, so they land all over their indexes as digests do.
    """

    def __init__(
        self, writes: IngestWrites, writer: int, artifacts: int, first_version: int
    ) -> None:
        self.writes = writes
        self.writer = writer
        self.originators = [uuid.uuid4() for _ in range(artifacts)]
        self.first_version = first_version
        self.tile = bytes(range(256)) * (TILE_WIDTH * HASH_SIZE // 256)

    def stream(self, n: int) -> tuple[uuid.UUID, int]:
        artifacts = len(self.originators)
        return self.originators[n % artifacts], self.first_version + n // artifacts

    def claim_key(self, n: int) -> str:
        digest = hashlib.sha256(f"same.w{self.writer}.{n}".encode()).hexdigest()
        return ("sha256:" + digest * 2)[: self.writes.claim_key_size]

    def entry(self, n: int) -> bytes:
        return (self.claim_key(n).encode() * 4)[: self.writes.entry_size]

    def tile_data(self, width: int) -> bytes:
        return self.tile[: width * HASH_SIZE]


# --------------------------------------------------------------------------- SQLite

_SQLITE = {
    "event": f"INSERT INTO {EVENTS} VALUES (?, ?, ?, ?)",
    "claim": f"INSERT INTO {CLAIMS} VALUES (?, ?, ?) ON CONFLICT (namespace, key) DO NOTHING",
    "end": f"SELECT position, notification_id FROM {ENTRIES} ORDER BY position DESC LIMIT 1",
    "entry": f"INSERT INTO {ENTRIES} VALUES (?, ?, ?)",
    "grow": f"INSERT INTO {TILES} VALUES (?, ?, ?) "
    "ON CONFLICT (level, idx) DO UPDATE SET data = excluded.data",
}


def sqlite_connection(path: Path) -> sqlite3.Connection:
    """A connection as the engine opens one: autocommit, the file's WAL mode, the default
    ``synchronous``, the same lock timeout."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)


class KnownEnd:
    """Where the entries end after the last commit of a store's writers in this process
    (the number of entries, and the id of the last event), as the engine keeps it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.end: tuple[int, int] | None = self.read(conn)

    @staticmethod
    def read(conn: sqlite3.Connection) -> tuple[int, int]:
        """The end as stored: entries, and the notification id of the last one."""
        row = conn.execute(_SQLITE["end"]).fetchone()
        return (0, 0) if row is None else (int(row[0]) + 1, int(row[1]))

    def size_before(self, conn: sqlite3.Connection, row_id: int) -> int:
        """The entries before event ``row_id``: known if the last commit ended right
        before it, else read."""
        end = self.end
        if end is not None and end[1] == row_id - 1:
            return end[0]
        return self.read(conn)[0]


def sqlite_same_writes_step(
    conn: sqlite3.Connection,
    writes: IngestWrites,
    writer: int,
    known: KnownEnd,
    *,
    artifacts: int = 1,
    first_version: int = 1,
) -> Step:
    """One ingest's statements per call, in one transaction, over ``artifacts`` new streams;
    ``known`` is shared by the store's writers."""
    rows = _Rows(writes, writer, artifacts, first_version)
    state = {"done": 0}

    def step() -> bool:
        done = state["done"]
        if done >= _CAPACITY:
            return False
        conn.execute("BEGIN")
        try:
            originator, version = rows.stream(done)
            row_id = conn.execute(
                _SQLITE["event"], (originator.hex, version, writes.topic, writes.state)
            ).lastrowid
            claim = (writes.claim_namespace, rows.claim_key(done), writes.claim_owner)
            if conn.execute(_SQLITE["claim"], claim).rowcount != 1:
                raise RuntimeError(f"claim {claim} was taken")
            size = known.size_before(conn, row_id)
            conn.execute(_SQLITE["entry"], (size, row_id, rows.entry(done)))
            for level, index, width in stored_tiles_after(size):
                conn.execute(_SQLITE["grow"], (level, index, rows.tile_data(width)))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            known.end = None
            raise
        known.end = (size + 1, row_id)
        state["done"] = done + 1
        return True

    return step


@contextmanager
def sqlite_same_writes(
    path: Path, threads: int, writes: IngestWrites, artifacts: int
) -> Iterator[list[Step]]:
    """One connection and one step per thread on a store the engine prepared at ``path``."""
    prepare_store(f"sqlite:///{path}")
    connections: list[sqlite3.Connection] = []
    try:
        for _ in range(threads):
            connections.append(sqlite_connection(path))
        known = KnownEnd(connections[0])  # as the engine's writer knows it from its own commit
        yield [
            sqlite_same_writes_step(c, writes, i, known, artifacts=artifacts)
            for i, c in enumerate(connections)
        ]
    finally:
        for connection in connections:
            connection.close()


# --------------------------------------------------------------------------- PostgreSQL


def _pg_statements(schema: str) -> dict[str, sql.Composed]:
    names = {
        "events": sql.Identifier(schema, EVENTS),
        "claims": sql.Identifier(schema, CLAIMS),
        "entries": sql.Identifier(schema, ENTRIES),
        "tiles": sql.Identifier(schema, TILES),
    }
    # The partial tiles of levels 0-2 (trees of up to 2^24 leaves) beside the end.
    edge_keys = ", ".join(
        f"({level}, (e.position + 1) >> {TILE_HEIGHT * (level + 1)})" for level in range(3)
    )
    texts = {
        "lock": "LOCK TABLE {events} IN EXCLUSIVE MODE",
        "claim": "INSERT INTO {claims} VALUES (%s, %s, %s) ON CONFLICT (namespace, key) DO NOTHING",
        # Gap-free ids in commit order under the lock, as the engine numbers them.
        "event": "INSERT INTO {events} "
        "(originator_id, originator_version, topic, state, notification_id) "
        "SELECT %s, %s, %s, %s, coalesce(max(notification_id), 0) + 1 FROM {events} "
        "RETURNING notification_id",
        "notify": "SELECT pg_notify(%s, '')",
        "edge": "SELECT e.position, t.data FROM (SELECT position FROM {entries} "
        "ORDER BY position DESC LIMIT 1) AS e "
        f"LEFT JOIN {{tiles}} AS t ON (t.level, t.idx) IN ({edge_keys})",
        "entry": "INSERT INTO {entries} VALUES (%s, %s, %s)",
        "grow": "INSERT INTO {tiles} VALUES (%s, %s, %s) "
        "ON CONFLICT (level, idx) DO UPDATE SET data = excluded.data",
    }
    return {key: sql.SQL(text).format(**names) for key, text in texts.items()}


def pg_same_writes_step(
    conn: psycopg.Connection[tuple[Any, ...]],
    schema: str,
    writes: IngestWrites,
    writer: int,
    artifacts: int,
) -> Step:
    """One ingest's writes per call: one transaction in two round trips, as the engine's.

    The first sends the lock, claim, event (numbered under the lock), notify
    and the read of the tree's edge; the second the entry, the tiles and the
    commit.
    """
    statements = _pg_statements(schema)
    rows = _Rows(writes, writer, artifacts, 1)
    state = {"done": 0}

    def run(key: str, params: Sequence[object] = ()) -> psycopg.Cursor[tuple[Any, ...]]:
        return conn.execute(statements[key], params, prepare=True)

    def step() -> bool:
        done = state["done"]
        if done >= _CAPACITY:
            return False
        with conn.pipeline(), conn.transaction():
            run("lock")
            claim = (writes.claim_namespace, rows.claim_key(done), writes.claim_owner)
            claimed = run("claim", claim)
            event = run("event", (*rows.stream(done), writes.topic, writes.state))
            run("notify", (EVENTS,))
            edge = run("edge")
            inserted = event.fetchone()  # the first round trip
            if inserted is None or claimed.rowcount != 1:
                raise RuntimeError(f"the event or claim {claim} was not written")
            end = edge.fetchall()
            size = int(end[0][0]) + 1 if end else 0
            run("entry", (size, inserted[0], rows.entry(done)))
            for level, index, width in stored_tiles_after(size):
                run("grow", (level, index, rows.tile_data(width)))
        state["done"] = done + 1
        return True

    return step


@contextmanager
def pg_same_writes(
    schema: str, url: str, threads: int, writes: IngestWrites, artifacts: int
) -> Iterator[list[Step]]:
    """One autocommit connection and one step per thread on the engine's tables in ``schema``."""
    prepare_store(url)
    connections: list[psycopg.Connection[tuple[Any, ...]]] = []
    try:
        for _ in range(threads):
            connections.append(psycopg.connect(PG_URL, autocommit=True, connect_timeout=5))
        yield [
            pg_same_writes_step(c, schema, writes, i, artifacts) for i, c in enumerate(connections)
        ]
    finally:
        for connection in connections:
            connection.close()


# --------------------------------------------------------------------------- profile split

Func = tuple[str, int, str]
OTHER = "other nenjim Python (ingest, log and commit-group glue)"
_TREE = (
    "domain/transparency/",
    "journal/impl/ref/transparency.py",
    "infrastructure/log/tiles.py",
    "infrastructure/log/sqlite_tiles.py",
    "infrastructure/log/postgres_tiles.py",
)
_INGESTION = "journal/impl/ref/ingestion.py"
# Checked in order on (path relative to the repository, or as profiled; function name).
# A function matching none inherits its callers' categories: stdlib, builtins and
# ``typing`` are charged to whoever called them.
_CATEGORIES: list[tuple[str, Callable[[str, str], bool]]] = [
    ("COMMIT", lambda where, name: where == "~" and "'commit' of 'sqlite3" in name),
    (
        "other SQL statements (execute, fetch)",
        lambda where, name: (where == "~" and "sqlite3." in name) or "/psycopg/" in where,
    ),
    ("transparency tree Python (leaf, hashes, tiles)", lambda where, name: where.startswith(_TREE)),
    (
        "view fold (projection)",
        lambda where, name: (
            where.startswith("projections/") or (where == _INGESTION and name == "_publish")
        ),
    ),
    (
        "decide (chain rules, restore)",
        lambda where, name: (
            where.startswith("domain/journal/")
            or (where == _INGESTION and name in ("_decide", "_current_chain"))
        ),
    ),
    ("eventsourcing (save, mapper, recorder)", lambda where, name: "/eventsourcing/" in where),
    (
        OTHER,
        lambda where, name: where.startswith(("journal/", "infrastructure/", "domain/")),
    ),
]


def _where(file: str) -> str:
    if file == "~" or file.startswith("<"):
        return file
    path = Path(file).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else file


def _own_category(func: Func) -> str | None:
    file, _, name = func
    where = _where(file)
    for category, matches in _CATEGORIES:
        if matches(where, name):
            return category
    return None


def _raw(stats: pstats.Stats) -> dict[Func, tuple[int, int, float, float, dict[Func, Any]]]:
    # The per-function rows with their callers; typeshed does not declare the attribute.
    raw: dict[Func, tuple[int, int, float, float, dict[Func, Any]]] = getattr(stats, "stats")  # noqa: B009
    return raw


def time_split(stats: pstats.Stats) -> dict[str, float]:
    """Profiled own time, in seconds, by category; uncategorised code is charged to its callers
    in proportion to the own time each caller's calls spent in it."""
    table: dict[Func, tuple[int, int, float, float, dict[Func, tuple[Any, ...]]]] = _raw(stats)
    shares: dict[Func, dict[str, float]] = {}

    def share(func: Func) -> dict[str, float]:
        if func in shares:
            return shares[func]
        own = _own_category(func)
        if own is not None:
            shares[func] = {own: 1.0}
            return shares[func]
        shares[func] = {OTHER: 1.0}  # while resolving: a recursive call ends here
        callers = table[func][4] if func in table else {}
        weights = {caller: float(edge[2]) for caller, edge in callers.items()}
        total = sum(weights.values())
        if not callers:
            return shares[func]
        if total <= 0:
            weights = dict.fromkeys(callers, 1.0)
            total = float(len(callers))
        mixed: dict[str, float] = {}
        for caller, weight in weights.items():
            for category, part in share(caller).items():
                mixed[category] = mixed.get(category, 0.0) + part * weight / total
        shares[func] = mixed
        return mixed

    split: dict[str, float] = {}
    for func, (_, _, own_time, _, _) in table.items():
        for category, part in share(func).items():
            split[category] = split.get(category, 0.0) + own_time * part
    return split


def calls_of(stats: pstats.Stats, file_suffix: str, name: str) -> tuple[int, float]:
    """Calls of the function ``name`` defined in a file ending ``file_suffix``, and their
    cumulative seconds."""
    table = _raw(stats)
    calls, seconds = 0, 0.0
    for (file, _, func_name), (_, ncalls, _, cumulative, _) in table.items():
        if file.endswith(file_suffix) and func_name == name:
            calls += ncalls
            seconds += cumulative
    return calls, seconds
