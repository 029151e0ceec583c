"""The ingest benchmark: single-revision ingests against stock ``eventsourcing`` and raw drivers.

Ours: ``JournalIngestion.ingest(revision)`` of successor revisions (an append
at the expected head, durable), texts built and parsed before timing. Each
thread owns distinct artifacts and, by default, its own ``JournalIngestion``
over its own ``JournalLog`` on the same store URL, as independent writers
would. Baselines, at the same thread counts and on fresh stores:

* a stock ``eventsourcing.application.Application`` saving one event on an
  aggregate it holds (its stock SQLite / PostgreSQL recorders), and the same
  with ``repository.get`` before each save (read-modify-write, which is what
  our ingestion does to learn the head);
* raw ``sqlite3`` INSERT + COMMIT of one row (WAL, ``synchronous=FULL``) and raw
  psycopg INSERT of one row in autocommit (one round trip);
* the same writes as one ingest, by hand with the raw driver
  (:mod:`benchmarks.same_writes`): the statements a real ingest runs, captured,
  replayed with fresh keys into tables the engine created, one transaction
  per call. Nothing of our Python runs, so ``ours / same writes`` is what our
  Python costs, and ``same writes / stock`` is the most an ingest making these
  writes in its own transaction could reach on this machine. Its table runs
  the stock save, the same writes and ours with their passes interleaved, on
  fresh stores, so the machine's swings hit all three alike.

For PostgreSQL with 8 writers the notification ids are then checked to be
gap-free and contiguous, and a tailing reader checks they commit in order
(the same reader on raw ``bigserial`` inserts, which have no lock, is the
control that shows it can see out-of-order commits). A profile of one SQLite
writer splits an ingest's time by what it does. Two side tables show how
one ingest's cost grows with the chain's length and with the number of
artifacts in the Journal.

Run: ``python -m benchmarks.ingest [--quick] [--no-profile]``.
"""

from __future__ import annotations

import pstats
import sqlite3
import threading
import time
import timeit
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import psycopg
from eventsourcing.application import Application
from eventsourcing.domain import (
    Aggregate,
    CollectEventsProtocol,
    DomainEventProtocol,
    event,
)
from psycopg import sql

from benchmarks import same_writes
from benchmarks.common import (
    PG_URL,
    Options,
    Pass,
    Rate,
    Step,
    Timing,
    chain_texts,
    machine_table,
    mark,
    measure,
    parse_options,
    pg_problem,
    pg_schema,
    pg_stock_env,
    pg_store_url,
    profile_pass,
    profile_summary,
    rate_text,
    ratio_text,
    run_pass,
    scratch_dir,
    sqlite_stock_env,
    table,
)
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection

THREADS = (1, 8)
# A quick run measures the floor at one thread only: it sets up three stores per row.
QUICK_FLOOR_THREADS = (1,)
# Wanted ratios of ours to the stock save: SQLite by writer count; PostgreSQL at 8 writers.
SQLITE_TARGET = {1: 1.0, 8: 2.0}
PG_TARGET = 3.0
# Successors prepared per artifact: chains grow from 1 to at most this + 1 revisions.
SUCCESSORS_PER_ARTIFACT = 20
MAIN = Timing(runs=3, seconds=2.0, warmup=0.3)
SIDE = Timing(runs=3, seconds=1.0, warmup=0.2)  # reference rows that no target depends on
QUICK = Timing(runs=1, seconds=0.3, warmup=0.1)
# The floor's three variants alternate pass by pass: more, shorter passes than MAIN.
FLOOR = Timing(runs=4, seconds=0.5, warmup=0.2)


def _capacity(threads: int, quick: bool) -> int:
    """Revisions parsed per thread in advance: more than a run uses at the rates seen here."""
    if quick:
        return 1_500 if threads == 1 else 400
    return 12_000 if threads == 1 else 3_000


# Stock and raw work costs nothing to prepare, so it may be far larger (still bounded).
_CHEAP_FACTOR = 8
_RAW_CAPACITY = 1_000_000


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True, slots=True)
class Workload:
    """One thread's artifacts: genesis revisions, then successors interleaved round-robin."""

    genesis: list[JournalRevision]
    successors: list[JournalRevision]


def build_workload(prefix: str, capacity: int) -> Workload:
    """Parse ``capacity`` successors spread over ``capacity / 20`` artifacts named ``prefix.aN``."""
    artifacts = max(1, capacity // SUCCESSORS_PER_ARTIFACT)
    chains = [chain_texts(f"{prefix}.a{i}", SUCCESSORS_PER_ARTIFACT + 1) for i in range(artifacts)]
    return Workload(
        genesis=[parse_journal(chain[0]) for chain in chains],
        successors=[
            parse_journal(chains[a][s])
            for s in range(1, SUCCESSORS_PER_ARTIFACT + 1)
            for a in range(artifacts)
        ],
    )


def _ingest_step(ingestion: JournalIngestion, revisions: Sequence[JournalRevision]) -> Step:
    pending = iter(revisions)

    def step() -> bool:
        revision = next(pending, None)
        if revision is None:
            return False
        _, is_new = ingestion.ingest(revision)
        if not is_new:
            raise RuntimeError(f"{revision.coordinate} {revision.version} was not new")
        return True

    return step


@contextmanager
def nenjim_writers(url: str, threads: int, *, shared: bool, quick: bool) -> Iterator[list[Step]]:
    """One step per thread; ``shared``: all threads use one ingestion (one RLock, one log)."""
    ingestions: list[JournalIngestion] = []
    try:
        for _ in range(1 if shared else threads):
            ingestions.append(JournalIngestion(JournalLog(url), JournalChainsProjection()))
        steps = []
        for index in range(threads):
            ingestion = ingestions[0 if shared else index]
            work = build_workload(f"bench.w{index}", _capacity(threads, quick))
            ingestion.ingest_all(work.genesis)  # one transaction per thread
            steps.append(_ingest_step(ingestion, work.successors))
        for ingestion in ingestions:
            ingestion.catch_up()  # every projection starts at the end of the log
        yield steps
    finally:
        for ingestion in ingestions:
            ingestion.close()


# --------------------------------------------------------------------------- stock eventsourcing


class BenchNote(Aggregate):
    """A stock aggregate whose events carry a Journal-sized text."""

    def __init__(self) -> None:
        self.notes = 0

    @event("Noted")
    def note(self, text: str) -> None:
        """Record one text."""
        self.notes += 1


class StockApplication(Application[UUID]):
    """The stock application (stock recorders chosen by ``PERSISTENCE_MODULE``)."""

    name = "stock"


def _stock_step(
    app: StockApplication, notes: list[BenchNote], texts: list[str], capacity: int, reread: bool
) -> Step:
    state = {"done": 0}

    def step() -> bool:
        done = state["done"]
        if done >= capacity:
            return False
        note = notes[done % len(notes)]
        if reread:
            note = app.repository.get(note.id)
            notes[done % len(notes)] = note
        note.note(texts[done % len(texts)])
        app.save(note)
        state["done"] = done + 1
        return True

    return step


@contextmanager
def stock_writers(
    env: dict[str, str], threads: int, *, reread: bool, quick: bool
) -> Iterator[list[Step]]:
    """One stock Application per thread (independent writers), each with its own aggregates."""
    apps: list[StockApplication] = []
    texts = chain_texts("bench.stock", 64)  # payloads of the same size as ours
    try:
        steps = []
        for _ in range(threads):
            app = StockApplication(env=env)
            apps.append(app)
            capacity = _capacity(threads, quick) * _CHEAP_FACTOR
            notes = [BenchNote() for _ in range(max(1, capacity // SUCCESSORS_PER_ARTIFACT))]
            app.save(*notes)
            steps.append(_stock_step(app, notes, texts, capacity, reread))
        yield steps
    finally:
        for app in apps:
            app.close()


# --------------------------------------------------------------------------- raw drivers

# The same shape as the stock recorders' events tables (rowid / bigserial as the id).
_RAW_SQLITE_TABLE = (
    "CREATE TABLE IF NOT EXISTS raw_events (originator_id TEXT NOT NULL, "
    "originator_version INTEGER NOT NULL, topic TEXT, state BLOB, "
    "PRIMARY KEY (originator_id, originator_version))"
)
_RAW_PG_TABLE = (
    "CREATE TABLE IF NOT EXISTS {}.raw_events (originator_id uuid NOT NULL, "
    "originator_version bigint NOT NULL, topic text, state bytea, "
    "notification_id bigserial UNIQUE, PRIMARY KEY (originator_id, originator_version))"
)


def _payload() -> bytes:
    return chain_texts("bench.raw", 2)[1].encode("utf-8")


@contextmanager
def raw_sqlite_writers(path: Path, threads: int, *, quick: bool) -> Iterator[list[Step]]:
    """One connection per thread; each call is BEGIN; INSERT one row; COMMIT."""
    connections: list[sqlite3.Connection] = []
    payload = _payload()
    try:
        for _ in range(threads):
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")  # what the library leaves in place
            connections.append(conn)
        connections[0].execute(_RAW_SQLITE_TABLE)
        steps = []
        for conn in connections:
            steps.append(_raw_sqlite_step(conn, payload, _RAW_CAPACITY))
        yield steps
    finally:
        for conn in connections:
            conn.close()


def _raw_sqlite_step(conn: sqlite3.Connection, payload: bytes, capacity: int) -> Step:
    originator = uuid.uuid4().hex
    state = {"done": 0}

    def step() -> bool:
        done = state["done"]
        if done >= capacity:
            return False
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO raw_events VALUES (?, ?, ?, ?)", (originator, done, "bench", payload)
        )
        conn.execute("COMMIT")
        state["done"] = done + 1
        return True

    return step


@contextmanager
def raw_pg_writers(schema: str, threads: int, *, quick: bool) -> Iterator[list[Step]]:
    """One autocommit connection per thread; each call is one INSERT (one round trip)."""
    connections: list[psycopg.Connection[tuple[object, ...]]] = []
    payload = _payload()
    insert = sql.SQL(
        "INSERT INTO {}.raw_events (originator_id, originator_version, topic, state) "
        "VALUES (%s, %s, %s, %s)"
    ).format(sql.Identifier(schema))
    try:
        for _ in range(threads):
            connections.append(psycopg.connect(PG_URL, autocommit=True, connect_timeout=5))
        connections[0].execute(sql.SQL(_RAW_PG_TABLE).format(sql.Identifier(schema)))
        steps = []
        for conn in connections:
            steps.append(_raw_pg_step(conn, insert, payload, _RAW_CAPACITY))
        yield steps
    finally:
        for conn in connections:
            conn.close()


def _raw_pg_step(
    conn: psycopg.Connection[tuple[object, ...]],
    insert: sql.Composed,
    payload: bytes,
    capacity: int,
) -> Step:
    originator = uuid.uuid4()
    state = {"done": 0}

    def step() -> bool:
        done = state["done"]
        if done >= capacity:
            return False
        conn.execute(insert, (originator, done, "bench", payload), prepare=True)
        state["done"] = done + 1
        return True

    return step


# --------------------------------------------------------------------------- id checks


@dataclass(frozen=True, slots=True)
class IdCheck:
    """Notification ids after a run, and what a tailing reader saw while writers ran."""

    count: int
    contiguous: bool
    tail_read: int
    tail_holes: int

    @property
    def ok(self) -> bool:
        """Gap-free, contiguous from 1, and never seen out of commit order."""
        return self.contiguous and self.tail_holes == 0


def _ids(schema: str, table_name: str) -> list[int]:
    with psycopg.connect(PG_URL, connect_timeout=5) as conn:
        rows = conn.execute(
            sql.SQL("SELECT notification_id FROM {}.{} ORDER BY notification_id").format(
                sql.Identifier(schema), sql.Identifier(table_name)
            )
        ).fetchall()
    return [int(row[0]) for row in rows]


def tail_while_writing(schema: str, table_name: str, steps: list[Step], seconds: float) -> IdCheck:
    """Run the writers while a reader tails the ids; then check all ids are 1..N.

    The reader asks for ids after the last one it saw, every millisecond. If
    a later id ever committed before an earlier one, it would at some point
    see the later id first: a hole. That is what commit order rules out.
    """
    stop = threading.Event()
    seen = {"read": 0, "holes": 0}
    query = sql.SQL(
        "SELECT notification_id FROM {}.{} WHERE notification_id > %s "
        "ORDER BY notification_id LIMIT 1000"
    ).format(sql.Identifier(schema), sql.Identifier(table_name))
    start = _ids(schema, table_name)
    last = start[-1] if start else 0

    def tail() -> None:
        nonlocal last
        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as conn:
            # Bounded: one poll per millisecond at most, for at most 10x the pass.
            for _ in range(int(seconds * 10_000)):
                for (nid,) in conn.execute(query, (last,), prepare=True).fetchall():
                    seen["read"] += 1
                    if nid != last + 1:
                        seen["holes"] += 1
                    last = int(nid)
                if stop.is_set():
                    return
                time.sleep(0.001)

    reader = threading.Thread(target=tail, daemon=True)
    reader.start()
    try:
        run_pass(steps, seconds)
    finally:
        time.sleep(0.05)  # let the reader see the last commits
        stop.set()
        reader.join(30)
    ids = _ids(schema, table_name)
    return IdCheck(len(ids), ids == list(range(1, len(ids) + 1)), seen["read"], seen["holes"])


# --------------------------------------------------------------------------- chain length


def _timed_successors(
    url: str, seeds: list[JournalRevision], successors: list[JournalRevision], seconds: float
) -> list[str]:
    """Seed a fresh store in one transaction, warm up, then time ``successors`` one by one."""
    warm = [parse_journal(t) for t in chain_texts("bench.warm", 6)]
    ingestion = JournalIngestion(JournalLog(url), JournalChainsProjection())
    try:
        ingestion.ingest_all([*seeds, warm[0]])  # linear in the seeds
        run_pass([_ingest_step(ingestion, warm[1:])], seconds)  # first-use costs
        done = run_pass([_ingest_step(ingestion, successors)], seconds)
    finally:
        ingestion.close()
    return [f"{done.ops:,}", rate_text(done.rate), f"{1e3 / max(done.rate, 1e-9):.2f}"]


def chain_length_effect(directory: Path, lengths: Sequence[int], seconds: float) -> list[list[str]]:
    """Ingest rate when each chain already holds ``length`` revisions (one thread, SQLite).

    About 100 successors are timed, spread over enough artifacts that each
    chain grows by at most 10% (or by one for the shortest), so the rate is
    the rate at that length.
    """
    rows = []
    timed = 100
    for length in lengths:
        artifacts = max(1, min(timed, timed * 10 // length))
        each = -(-timed // artifacts)
        chains = [chain_texts(f"bench.len.a{i}", length + each) for i in range(artifacts)]
        seeds = [parse_journal(t) for chain in chains for t in chain[:length]]
        successors = [parse_journal(chain[length + s]) for s in range(each) for chain in chains]
        url = f"sqlite:///{directory / f'length-{length}.db'}"
        rows.append([f"{length:,}", *_timed_successors(url, seeds, successors, seconds)])
    return rows


def artifact_count_effect(
    directory: Path, counts: Sequence[int], seconds: float
) -> list[list[str]]:
    """Ingest rate when the Journal already holds ``count`` artifacts (one thread, SQLite).

    Every artifact has a genesis; 100 of them then get one successor each,
    so chain lengths stay at 1 and only the number of artifacts changes.
    """
    rows = []
    for count in counts:
        chains = [chain_texts(f"bench.many.a{i}", 2) for i in range(count)]
        seeds = [parse_journal(chain[0]) for chain in chains]
        successors = [parse_journal(chain[1]) for chain in chains[:100]]
        url = f"sqlite:///{directory / f'artifacts-{count}.db'}"
        rows.append([f"{count:,}", *_timed_successors(url, seeds, successors, seconds)])
    return rows


# --------------------------------------------------------------------------- the benchmark


@dataclass
class BackendResult:
    """Measured rates of one backend, by variant then thread count."""

    rates: dict[str, dict[int, Rate]]
    id_checks: dict[str, IdCheck]

    def ratio(self, numerator: str, denominator: str, threads: int) -> float:
        """The median rate of variant ``numerator`` over that of ``denominator``."""
        return self.rates[numerator][threads].median / self.rates[denominator][threads].median

    def ratio_cell(self, numerator: str, denominator: str, threads: int) -> str:
        """:meth:`ratio` as text, ``-`` when a variant was not measured at ``threads``."""
        measured = self.rates.get(numerator, {}), self.rates.get(denominator, {})
        if not all(threads in by_threads for by_threads in measured):
            return "-"
        return ratio_text(self.ratio(numerator, denominator, threads))


def _measure_backend(
    backend: str,
    open_store: Callable[[ExitStack, str], tuple[str, dict[str, str], Path | str]],
    options: Options,
    profiles: list[str],
    writes: same_writes.IngestWrites,
) -> BackendResult:
    main = QUICK if options.quick else MAIN
    side = QUICK if options.quick else SIDE
    result = BackendResult({}, {})

    def record(variant: str, threads: int, rate: Rate) -> None:
        result.rates.setdefault(variant, {})[threads] = rate

    for threads in THREADS:
        with ExitStack() as stack:
            _, env, _ = open_store(stack, "stock")
            with stock_writers(env, threads, reread=False, quick=options.quick) as steps:
                record("stock", threads, measure(steps, main))
        with ExitStack() as stack:
            _, env, _ = open_store(stack, "stockget")
            with stock_writers(env, threads, reread=True, quick=options.quick) as steps:
                record("stock-get", threads, measure(steps, side))
        with ExitStack() as stack:
            _, _, raw_place = open_store(stack, "raw")
            if isinstance(raw_place, Path):
                raw = raw_sqlite_writers(raw_place, threads, quick=options.quick)
            else:
                raw = raw_pg_writers(raw_place, threads, quick=options.quick)
            with raw as steps:
                record("raw", threads, measure(steps, side))
                if backend == "PostgreSQL" and threads == 8 and isinstance(raw_place, str):
                    result.id_checks["raw"] = tail_while_writing(
                        raw_place, "raw_events", steps, side.seconds
                    )
        with ExitStack() as stack:
            url, _, place = open_store(stack, "ours")
            with nenjim_writers(url, threads, shared=False, quick=options.quick) as steps:
                rate = measure(steps, main)
                record("ours", threads, rate)
                if backend == "PostgreSQL" and threads == 8 and isinstance(place, str):
                    result.id_checks["ours"] = tail_while_writing(
                        place, "journal_events", steps, side.seconds
                    )
        stock = result.rates["stock"][threads].median
        target = SQLITE_TARGET[threads] if backend == "SQLite" else PG_TARGET
        missed = result.rates["ours"][threads].median < target * stock
        if options.profile and missed and (backend == "SQLite" or threads == 8):
            # Fresh writers: the measured ones may have used up their prepared revisions.
            with ExitStack() as stack:
                url, _, _ = open_store(stack, "profiled")
                with nenjim_writers(url, threads, shared=False, quick=options.quick) as steps:
                    stats = profile_pass(steps, side.seconds)
            title = f"{backend}, nenjim ingest, {threads} independent writer(s)"
            if threads > 1:
                title += (
                    "; wall time summed over the threads, so the own time of blocking"
                    " calls includes waiting for locks, I/O and the GIL"
                )
            profiles.append(profile_summary(stats, title))
            if threads == 1:
                profiles.append(_time_split_table(backend, stats))
        if threads > 1:
            with ExitStack() as stack:
                url, _, _ = open_store(stack, "shared")
                with nenjim_writers(url, threads, shared=True, quick=options.quick) as steps:
                    record("ours-shared", threads, measure(steps, side))
        if threads in (QUICK_FLOOR_THREADS if options.quick else THREADS):
            for variant, rate in _floor_rates(open_store, threads, options, writes).items():
                record(variant, threads, rate)
    return result


def _floor_rates(
    open_store: Callable[[ExitStack, str], tuple[str, dict[str, str], Path | str]],
    threads: int,
    options: Options,
    writes: same_writes.IngestWrites,
) -> dict[str, Rate]:
    """The stock save, the same writes by hand and ours, passes interleaved on fresh stores.

    Interleaved because the floor's ratios compare rows that a shared machine's
    swings (several-fold in fsync time) would otherwise set apart in time.
    """
    timing = QUICK if options.quick else FLOOR
    # As many streams per writer as ours has artifacts, fed round-robin the same way.
    artifacts = max(1, _capacity(threads, options.quick) // SUCCESSORS_PER_ARTIFACT)
    with ExitStack() as stack:
        _, env, _ = open_store(stack, "floorstock")
        same_url, _, same_place = open_store(stack, "floorsame")
        url, _, _ = open_store(stack, "floorours")
        if isinstance(same_place, Path):
            same = same_writes.sqlite_same_writes(same_place, threads, writes, artifacts)
        else:
            same = same_writes.pg_same_writes(same_place, same_url, threads, writes, artifacts)
        writers = {
            "floor-stock": stack.enter_context(
                stock_writers(env, threads, reread=False, quick=options.quick)
            ),
            "floor-same": stack.enter_context(same),
            "floor-ours": stack.enter_context(
                nenjim_writers(url, threads, shared=False, quick=options.quick)
            ),
        }
        for steps in writers.values():
            run_pass(steps, timing.warmup)
        passes: dict[str, list[Pass]] = {variant: [] for variant in writers}
        for _ in range(timing.runs):
            for variant, steps in writers.items():
                passes[variant].append(run_pass(steps, timing.seconds))
    return {
        variant: Rate(tuple(p.rate for p in done), any(p.exhausted for p in done))
        for variant, done in passes.items()
    }


def _sqlite_store(directory: Path) -> Callable[[ExitStack, str], tuple[str, dict[str, str], Path]]:
    numbers = iter(range(1, 1_000))

    def open_store(stack: ExitStack, tag: str) -> tuple[str, dict[str, str], Path]:
        path = directory / f"{tag}-{next(numbers)}.db"
        return f"sqlite:///{path}", sqlite_stock_env(path), path

    return open_store


def _pg_store(stack: ExitStack, tag: str) -> tuple[str, dict[str, str], str]:
    schema = stack.enter_context(pg_schema(tag))
    return pg_store_url(schema), pg_stock_env(schema), schema


_LABELS = {
    "ours": "nenjim `JournalIngestion.ingest`, one ingestion + log per thread",
    "ours-shared": "nenjim, one `JournalIngestion` shared by all threads",
    "stock": "stock `Application.save`, 1 event on a held aggregate",
    "stock-get": "stock `repository.get` + `save` (read-modify-write)",
    "raw": "raw driver: 1-row INSERT + COMMIT",
}
# (label, numerator, denominator) of the ratio rows under each backend's table.
_RATIOS = (
    ("nenjim / stock save", "ours", "stock"),
    ("nenjim / stock get+save", "ours", "stock-get"),
    ("nenjim / raw", "ours", "raw"),
)
_FLOOR_LABELS = {
    "floor-stock": _LABELS["stock"],
    "floor-same": "raw driver: the same writes as one ingest, by hand (no nenjim Python)",
    "floor-ours": _LABELS["ours"],
}
_FLOOR_RATIOS = (
    ("nenjim / stock save", "floor-ours", "floor-stock"),
    ("same writes by hand / stock save (the floor)", "floor-same", "floor-stock"),
    ("nenjim / same writes by hand (our Python)", "floor-ours", "floor-same"),
)


def _rates_table(
    title: str,
    first_column: str,
    result: BackendResult,
    labels: dict[str, str],
    ratios: Sequence[tuple[str, str, str]],
) -> str:
    """One row per variant in ``labels`` (``-`` where not measured), then the ``ratios``."""
    rows = []
    for variant, label in labels.items():
        by_threads = result.rates.get(variant, {})
        rows.append([label, *(by_threads[t].cell() if t in by_threads else "-" for t in THREADS)])
    for label, numerator, denominator in ratios:
        cells = [result.ratio_cell(numerator, denominator, t) for t in THREADS]
        rows.append([f"**ratio {label}**", *cells])
    return table(title, [first_column, *(f"{t} thread(s)" for t in THREADS)], rows)


def _backend_table(backend: str, result: BackendResult) -> str:
    return _rates_table(
        f"Ingest, {backend}",
        "variant (revisions or rows per second)",
        result,
        _LABELS,
        _RATIOS,
    )


def _floor_table(backend: str, result: BackendResult) -> str:
    return _rates_table(
        f"Ingest floor: the same writes by hand, {backend}",
        "variant, passes interleaved (per second)",
        result,
        _FLOOR_LABELS,
        _FLOOR_RATIOS,
    )


def protocol_checks_us() -> float:
    """µs per stock save in the two runtime-protocol checks of ``Application.save``
    (``DomainEventProtocol``, ``CollectEventsProtocol``), which nenjim's save skips."""
    note = BenchNote()

    def checks() -> None:
        isinstance(note, DomainEventProtocol)
        isinstance(note, CollectEventsProtocol)

    return 1e6 * min(timeit.repeat(checks, number=2_000, repeat=5)) / 2_000


def _budget_table(
    backend: str, result: BackendResult, goals: dict[int, float], skipped_us: float
) -> str:
    """Wall time per ingest (1 / median rate) left to Python, against what a goal allows;
    ``skipped_us``: the part of the stock save's Python that nenjim's save does not run."""

    def each(variant: str, threads: int) -> float | None:
        rate = result.rates.get(variant, {}).get(threads)
        return None if rate is None else 1e6 / rate.median

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    def less(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    rows = [
        [
            "our Python: nenjim ingest - the same writes by hand (floor passes)",
            *(cell(less(each("floor-ours", t), each("floor-same", t))) for t in THREADS),
        ],
        [
            "what the goal leaves to all Python: stock save / goal - the same writes by hand",
            *(
                cell(less(_scaled(each("floor-stock", t), goals.get(t)), each("floor-same", t)))
                for t in THREADS
            ),
        ],
        [
            "`eventsourcing`'s own cost around one row: stock save - raw 1-row INSERT "
            "(its Python; on PostgreSQL also its extra round trips)",
            *(cell(less(each("stock", t), each("raw", t))) if t == 1 else "-" for t in THREADS),
        ],
        [
            f"the same, less the runtime-protocol checks nenjim's save skips ({skipped_us:.0f} µs)",
            *(
                cell(less(less(each("stock", t), each("raw", t)), skipped_us)) if t == 1 else "-"
                for t in THREADS
            ),
        ],
    ]
    return table(
        f"Python per ingest, {backend} (µs of wall time per ingest, 1 / median rate)",
        ["what", *(f"{t} thread(s)" for t in THREADS)],
        rows,
    )


def _scaled(micros: float | None, goal: float | None) -> float | None:
    return None if micros is None or goal is None else micros / goal


def run(options: Options) -> str:
    """Run the ingest benchmark and return its report."""
    out: list[str] = []
    profiles: list[str] = []
    results: dict[str, BackendResult] = {}
    with scratch_dir() as directory:
        writes = same_writes.capture_writes(directory / "capture.db")
        results["SQLite"] = _measure_backend(
            "SQLite", _sqlite_store(directory), options, profiles, writes
        )
        problem = pg_problem()
        if problem is None:
            results["PostgreSQL"] = _measure_backend(
                "PostgreSQL", _pg_store, options, profiles, writes
            )
        else:
            out.append(f"PostgreSQL skipped: {problem}")
        goals = {"SQLite": dict(SQLITE_TARGET), "PostgreSQL": {8: PG_TARGET}}
        skipped = protocol_checks_us()
        for backend, result in results.items():
            out.append(_backend_table(backend, result))
            out.append(_floor_table(backend, result))
            out.append(_budget_table(backend, result, goals[backend], skipped))
        lengths = (1, 100) if options.quick else (1, 100, 1_000)
        counts = (100, 2_000) if options.quick else (100, 2_000, 10_000)
        bound = 1.0 if options.quick else 3.0
        length_rows = chain_length_effect(directory, lengths, bound)
        count_rows = artifact_count_effect(directory, counts, bound)
    timed = ["ingests timed", "ingests/s", "ms per ingest"]
    out.append(
        table(
            "Ingest rate vs chain length (SQLite, 1 thread)",
            ["revisions already in each chain", *timed],
            length_rows,
        )
    )
    out.append(
        table(
            "Ingest rate vs artifacts in the Journal (SQLite, 1 thread, chains of 1)",
            ["artifacts already in the Journal", *timed],
            count_rows,
        )
    )
    out.append(_targets(results))
    out.append(
        "Cells: median of the timed passes (min-max); `*` = a worker used up its prepared work "
        "before the pass ended. Chains grow from 1 to at most "
        f"{SUCCESSORS_PER_ARTIFACT + 1} revisions during a run."
    )
    out.extend(profiles)
    return "\n\n".join(out)


def _targets(results: dict[str, BackendResult]) -> str:
    rows = []
    sqlite = results["SQLite"]
    for threads in THREADS:
        ratio = sqlite.ratio("ours", "stock", threads)
        rows.append(
            [
                f"SQLite ingest, {threads} thread(s), vs stock save",
                f">= {SQLITE_TARGET[threads]}x",
                ratio_text(ratio),
                mark(ratio >= SQLITE_TARGET[threads]),
            ]
        )
        rows.append(_floor_row(f"SQLite, {threads} thread(s)", sqlite, threads))
    pg = results.get("PostgreSQL")
    if pg is not None:
        ratio = pg.ratio("ours", "stock", 8)
        check = pg.id_checks["ours"]
        rows.append(
            [
                "PostgreSQL ingest, 8 writers, vs stock save",
                f">= {PG_TARGET}x",
                ratio_text(ratio),
                mark(ratio >= PG_TARGET),
            ]
        )
        rows.append(_floor_row("PostgreSQL, 8 writers", pg, 8))
        rows.append(
            [
                "PostgreSQL, 8 writers: ids gap-free, contiguous, in commit order",
                "yes",
                f"{check.count:,} ids 1..N contiguous: {check.contiguous}; tailer read "
                f"{check.tail_read:,}, holes seen {check.tail_holes}",
                mark(check.ok),
            ]
        )
        raw = pg.id_checks.get("raw")
        if raw is not None:
            rows.append(
                [
                    "(control) raw bigserial INSERT, 8 threads, no lock",
                    "holes possible",
                    f"tailer read {raw.tail_read:,}, holes seen {raw.tail_holes}",
                    "-",
                ]
            )
    return table("Ingest targets", ["target", "wanted", "measured", ""], rows)


def _floor_row(where: str, result: BackendResult, threads: int) -> list[str]:
    """The goal's floor: the same writes by hand vs the stock save (no verdict of its own)."""
    return [
        f"(floor) {where}: the same writes by hand, vs stock save (interleaved)",
        "-",
        result.ratio_cell("floor-same", "floor-stock", threads),
        "-",
    ]


def _time_split_table(backend: str, stats: pstats.Stats) -> str:
    """Where one writer's ingest time goes, from its profile (cProfile inflates Python)."""
    ingests, _ = same_writes.calls_of(stats, "journal/impl/ref/ingestion.py", "ingest")
    if not ingests:
        raise RuntimeError(f"the profile of one {backend} writer holds no ingest")
    split = same_writes.time_split(stats)
    total = sum(split.values()) or 1e-9
    each = max(ingests, 1)
    rows = [
        [category, f"{100 * seconds / total:.1f}%", f"{1e6 * seconds / each:.0f}"]
        for category, seconds in sorted(split.items(), key=lambda item: -item[1])
    ]
    saves, in_collect = same_writes.calls_of(
        stats, "eventsourcing/application.py", "collect_events"
    )
    rows.append(
        [
            "(part of eventsourcing) `Application.collect_events`, incl. its runtime "
            "Protocol `isinstance`",
            f"{100 * in_collect / total:.1f}%",
            f"{1e6 * in_collect / max(saves, 1):.0f} per save",
        ]
    )
    return table(
        f"Where one ingest's time goes ({backend}, 1 writer, cProfile, {ingests:,} ingests)",
        ["part", "share of profiled time", "µs per ingest (profiled)"],
        rows,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "ingest")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
