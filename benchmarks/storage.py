"""The Storage SPI benchmark: its operations against raw ``sqlite3``/psycopg doing the same SQL.

Operations, each one root-view call (its own transaction): record insert,
record CAS replace, stream append of 1 and of 100 entries, and ``check()``
(one guard, three conditions). Per backend, with 1 and 8 threads; every
thread works on its own anchor (its own ``agent.roots`` row, record keys and
``agent.journal`` stream), so there are no conflicts. Backends: SQLite (file,
WAL, ``synchronous=FULL``) and PostgreSQL (pool), each as a ratio to the
hand-written baseline of :mod:`benchmarks.storage_raw` measured right after
it on a fresh store in the same run; in-memory for reference (no baseline).
With profiles on, the worst ratio of each durable backend is profiled (and,
if it was a multi-thread row, the same operation on one thread), and a short
profiled pass per operation counts the statements ours and the baseline send.

Run: ``python -m benchmarks.storage [--quick] [--no-profile]``.
"""

from __future__ import annotations

import itertools
import pstats
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.common import (
    PG_URL,
    Options,
    Pass,
    Rate,
    Step,
    Timing,
    machine_table,
    mark,
    measure,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
    profile_summary,
    rate_text,
    ratio_text,
    run_pass,
    scratch_dir,
    table,
)
from benchmarks.storage_raw import (
    CHECK_ENTRIES,
    RawWork,
    pg_settings,
    raw_postgres,
    raw_sqlite,
    sqlite_connect,
    sqlite_settings,
)
from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    DurableRecord,
    GuardRef,
    NoRows,
    RevisionIs,
    StreamHeadIs,
    open_backend,
)
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS, JOURNAL, ROOTS

THREADS = (1, 8)
DURABLE = Timing(runs=5, seconds=0.6, warmup=0.2)
MEMORY = Timing(runs=3, seconds=0.4, warmup=0.1)
QUICK = Timing(runs=1, seconds=0.15, warmup=0.05)
PROFILE_SECONDS = 1.0
GROWTH = (6, 0.5)  # consecutive passes on one stream, and their length in seconds
COUNT_SECONDS = 0.25  # a profiled pass per operation that counts its statements
# Operations one worker may do in one measurement (a bound; time ends a pass long before).
CAPACITY = 1_000_000
RESOURCES = (ROOTS, EXECUTIONS, JOURNAL)
# The goals, as ours / the hand-written baseline, per operation. check() has one on SQLite
# only: on PostgreSQL its row is a reference.
TARGETS = {"insert": 0.6, "replace": 0.6, "append1": 0.6, "append100": 0.5, "check": 0.5}
SQLITE_ONLY = ("check",)
# 8 SQLite writers' 1-entry appends share commits (group commit); the baseline commits each.
GROUP_COMMIT_TARGET = 1.5

# One envelope for every write (~230 bytes of Canonical JSON), built before timing.
RECORD = DurableRecord(
    "bench.execution",
    "1.0",
    {
        "workflow": "bench.workflow",
        "status": "running",
        "step": 7,
        "attempt": 1,
        "inputs": {"document": "sha256:" + "1" * 64, "pages": [1, 2, 3]},
        "note": "a benchmark payload of about the size of an execution state",
    },
)


@dataclass(frozen=True, slots=True)
class Op:
    """One benchmarked operation."""

    name: str
    label: str
    kind: str  # insert | replace | append | check
    batch: int = 0  # entries per append


OPS = (
    Op("insert", "record insert", "insert"),
    Op("replace", "record CAS replace", "replace"),
    Op("append1", "stream append, 1 entry", "append", 1),
    Op("append100", "stream append, 100 entries", "append", 100),
    Op("check", "check(): 1 guard + 3 conditions", "check"),
)


# --------------------------------------------------------------------------- ours


def _attributes(owner: str, active: bool) -> dict[str, Any]:
    return {"owner": owner, "active": active}


def _prepare_anchor(backend: Backend, op: Op, root: str) -> None:
    """The thread's root, and what its operation needs, in one transaction."""
    with backend.transaction() as view:
        view.records(ROOTS).insert(key=root, revision=0, attributes={}, record=RECORD)
        executions = view.records(EXECUTIONS)
        if op.kind == "replace":
            attributes = _attributes(root, True)
            executions.insert(key=f"{root}/r", revision=0, attributes=attributes, record=RECORD)
        if op.kind == "check":
            for n in range(CHECK_ENTRIES):
                executions.insert(
                    key=f"{root}/c{n}",
                    revision=0,
                    attributes=_attributes(root, False),
                    record=RECORD,
                )
            entries = [AppendEntry(f"e{n + 1}", RECORD) for n in range(CHECK_ENTRIES)]
            view.streams(JOURNAL).append(stream=root, expected_head=0, entries=entries)


def _spi_step(backend: Backend, op: Op, root: str, capacity: int) -> Step:
    """One worker: handles and arguments made once; entry ids and keys made per call."""
    _prepare_anchor(backend, op, root)
    records = backend.view.records(EXECUTIONS)
    streams = backend.view.streams(JOURNAL)
    inactive, active = _attributes(root, False), _attributes(root, True)
    guards = [GuardRef(ROOTS, root)]
    conditions = [
        RevisionIs(ROOTS, root, 0),
        StreamHeadIs(JOURNAL, root, CHECK_ENTRIES),
        NoRows(EXECUTIONS, "owner_active", {"owner": root, "active": True}),
    ]
    counter = itertools.count()
    state = {"revision": 0, "head": 0, "ops": 0}
    record_key = f"{root}/r"

    def insert() -> None:
        key = f"{root}/x{next(counter)}"
        records.insert(key=key, revision=0, attributes=inactive, record=RECORD)

    def replace() -> None:
        revision = state["revision"]
        stored = records.replace(
            key=record_key,
            expected_revision=revision,
            next_revision=revision + 1,
            attributes=active,
            record=RECORD,
        )
        state["revision"] = stored.revision

    def append() -> None:
        head = state["head"]
        entries = [AppendEntry(f"e{head + n}", RECORD) for n in range(1, op.batch + 1)]
        stored = streams.append(stream=root, expected_head=head, entries=entries)
        state["head"] = stored[-1].position

    def check() -> None:
        backend.view.check(guards=guards, conditions=conditions)

    bodies: dict[str, Callable[[], None]] = {
        "insert": insert,
        "replace": replace,
        "append": append,
        "check": check,
    }
    body = bodies[op.kind]

    def step() -> bool:
        if state["ops"] >= capacity:
            return False
        body()
        state["ops"] += 1
        return True

    return step


def spi_steps(backend: Backend, op: Op, threads: int) -> list[Step]:
    """One worker per thread, each on its own root ``ours-<n>``."""
    return [_spi_step(backend, op, f"ours-{index}", CAPACITY) for index in range(threads)]


# --------------------------------------------------------------------------- stores


@dataclass(frozen=True, slots=True)
class Store:
    """Where one backend's measurements run: fresh stores for ours and for the baseline."""

    name: str
    ours: Callable[[ExitStack], Backend]
    raw: Callable[[ExitStack, Op, int], list[Step]] | None


def _raw_work(op: Op) -> RawWork:
    return RawWork(op.kind, op.batch, RECORD.payload_json, CAPACITY)


def _memory_store() -> Store:
    def ours(stack: ExitStack) -> Backend:
        backend = open_backend("memory:", RESOURCES)
        stack.callback(backend.close)
        return backend

    return Store("in-memory", ours, None)


def _sqlite_store(directory: Path) -> Store:
    numbers = itertools.count(1)

    def ours(stack: ExitStack) -> Backend:
        backend = open_backend(f"sqlite:///{directory / f'ours-{next(numbers)}.db'}", RESOURCES)
        stack.callback(backend.close)
        return backend

    def raw(stack: ExitStack, op: Op, threads: int) -> list[Step]:
        path = directory / f"raw-{next(numbers)}.db"
        return stack.enter_context(raw_sqlite(path, _raw_work(op), threads))

    return Store("SQLite", ours, raw)


def _pg_store() -> Store:
    def ours(stack: ExitStack) -> Backend:
        schema = stack.enter_context(pg_schema("storage"))
        url = pg_store_url(schema, pool_size=max(THREADS), max_overflow=2)
        backend = open_backend(url, RESOURCES)
        stack.callback(backend.close)
        return backend

    def raw(stack: ExitStack, op: Op, threads: int) -> list[Step]:
        schema = stack.enter_context(pg_schema("storageraw"))
        return stack.enter_context(raw_postgres(schema, _raw_work(op), threads))

    return Store("PostgreSQL", ours, raw)


# --------------------------------------------------------------------------- measuring


@dataclass
class Cell:
    """Ours and the baseline for one operation and thread count."""

    ours: Rate
    raw: Rate | None

    @property
    def ratio(self) -> float | None:
        """ours / baseline (medians)."""
        if self.raw is None:
            return None
        return self.ours.median / max(self.raw.median, 1e-9)


Results = dict[str, dict[int, Cell]]


def measure_store(store: Store, timing: Timing) -> Results:
    """Every operation at every thread count, ours and the baseline each on a fresh store.

    Their timed passes alternate (ours, baseline, ours, ...), so a swing in the
    machine's load hits both sides of a ratio alike.
    """
    results: Results = {}
    for op in OPS:
        for threads in THREADS:
            with ExitStack() as stack:
                ours_steps = spi_steps(store.ours(stack), op, threads)
                if store.raw is None:
                    results.setdefault(op.name, {})[threads] = Cell(
                        measure(ours_steps, timing), None
                    )
                    continue
                ours, raw = measure_alternating(ours_steps, store.raw(stack, op, threads), timing)
            results.setdefault(op.name, {})[threads] = Cell(ours, raw)
    return results


def measure_alternating(
    first: Sequence[Step], second: Sequence[Step], timing: Timing
) -> tuple[Rate, Rate]:
    """A warm-up pass of each, then ``timing.runs`` timed passes of each, alternating."""
    if timing.warmup > 0:
        run_pass(first, timing.warmup)
        run_pass(second, timing.warmup)
    passes: tuple[list[Pass], list[Pass]] = ([], [])
    for _ in range(timing.runs):
        passes[0].append(run_pass(first, timing.seconds))
        passes[1].append(run_pass(second, timing.seconds))
    return (
        Rate(tuple(p.rate for p in passes[0]), any(p.exhausted for p in passes[0])),
        Rate(tuple(p.rate for p in passes[1]), any(p.exhausted for p in passes[1])),
    )


@dataclass(frozen=True, slots=True)
class Profiled:
    """A profile of one pass and what it did."""

    stats: pstats.Stats
    ops: int


def _profile(steps: Sequence[Step], seconds: float) -> Profiled:
    profiles: list[Any] = []
    done = run_pass(steps, seconds, profiles)
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    return Profiled(stats, done.ops)


_SQLITE_CALLS = frozenset(
    {
        "<method 'execute' of 'sqlite3.Connection' objects>",
        "<method 'executemany' of 'sqlite3.Connection' objects>",
        "<method 'executemany' of 'sqlite3.Cursor' objects>",
    }
)


def _calls(stats: pstats.Stats, wanted: Callable[[str, str], bool]) -> int:
    # pstats keys functions by (file, line, name); get_stats_profile() keys them by name only,
    # which merges psycopg's Connection.execute with Cursor.execute.
    table: dict[tuple[str, int, str], tuple[Any, ...]] = vars(stats)["stats"]
    return sum(int(row[1]) for (file, _, name), row in table.items() if wanted(file, name))


def driver_calls(stats: pstats.Stats) -> int:
    """Statements sent through the drivers, ``BEGIN`` and ``COMMIT`` included.

    sqlite3: ``Connection.execute``/``executemany``. psycopg: ``Cursor.execute``
    (``Connection.execute`` runs one on a new cursor), ``Cursor.executemany`` (one
    call for all its rows, pipelined), and the ``BEGIN``/``COMMIT`` of
    ``conn.transaction()`` (its ``__enter__``/``__exit__``).
    """

    def wanted(file: str, name: str) -> bool:
        if name in _SQLITE_CALLS:
            return True
        if file.endswith("psycopg/transaction.py"):
            return name in ("__enter__", "__exit__")
        return file.endswith("psycopg/cursor.py") and name in ("execute", "executemany")

    return _calls(stats, wanted)


def _per_op(profiled: Profiled) -> str:
    ops = max(profiled.ops, 1)
    return f"{driver_calls(profiled.stats) / ops:.1f} statements per op ({profiled.ops:,} profiled)"


def worst(results: Results) -> tuple[Op, int, float]:
    """The operation and thread count with the lowest ratio ours / raw."""
    found = (OPS[0], THREADS[0], float("inf"))
    for op in OPS:
        for threads in THREADS:
            ratio = results[op.name][threads].ratio
            if ratio is not None and ratio < found[2]:
                found = (op, threads, ratio)
    return found


def profile_op(store: Store, op: Op, threads: int, ratio: float, seconds: float) -> str:
    """Profile ours on ``op`` (and the baseline, for its statement count) on fresh stores."""
    with ExitStack() as stack:
        backend = store.ours(stack)
        ours = _profile(spi_steps(backend, op, threads), seconds)
    title = f"{store.name}, {op.label}, {threads} thread(s), ratio {ratio_text(ratio)}. "
    title += f"Ours: {_per_op(ours)}"
    if store.raw is not None:
        with ExitStack() as stack:
            raw = _profile(store.raw(stack, op, threads), seconds)
        title += f"; baseline: {_per_op(raw)}"
    if threads > 1:
        title += (
            ". Wall time summed over the threads: the own time of blocking calls includes "
            "waiting for locks, I/O and the GIL"
        )
    return profile_summary(ours.stats, title, top=12)


def statement_counts(store: Store, seconds: float) -> dict[str, str]:
    """Statements per operation, ours / baseline, from a short profiled pass on one thread."""
    counts = {}
    for op in OPS:
        with ExitStack() as stack:
            backend = store.ours(stack)
            ours = _profile(spi_steps(backend, op, 1), seconds)
        text = f"{driver_calls(ours.stats) / max(ours.ops, 1):.0f}"
        if store.raw is not None:
            with ExitStack() as stack:
                raw = _profile(store.raw(stack, op, 1), seconds)
            text += f" / {driver_calls(raw.stats) / max(raw.ops, 1):.0f}"
        counts[op.name] = text
    return counts


def statements_table(counts: dict[str, dict[str, str]]) -> str:
    """Statements per operation by backend (see :func:`driver_calls`)."""
    names = list(counts)
    rows = [[op.label, *(counts[name][op.name] for name in names)] for op in OPS]
    header = ["operation (1 thread)", *(f"{name}: ours / raw" for name in names)]
    return table("Statements per operation, BEGIN and COMMIT included", header, rows)


def profile_worst(store: Store, results: Results, seconds: float) -> list[str]:
    """Profile the worst ratio; if it has several threads, the same operation on one too."""
    op, threads, ratio = worst(results)
    summaries = [profile_op(store, op, threads, ratio, seconds)]
    if threads > 1:
        one = results[op.name][1].ratio
        assert one is not None
        summaries.append(profile_op(store, op, 1, one, seconds))
    return summaries


def stream_growth(store: Store, passes: int, seconds: float) -> list[list[str]]:
    """Appends of 100 on one stream (one thread), pass after pass, as the stream grows."""
    op = next(op for op in OPS if op.name == "append100")
    rows = []
    with ExitStack() as stack:
        backend = store.ours(stack)
        steps = spi_steps(backend, op, 1)
        entries = 0
        for number in range(1, passes + 1):
            done = run_pass(steps, seconds)
            rows.append(
                [
                    store.name,
                    str(number),
                    f"{entries:,}",
                    rate_text(done.rate),
                    rate_text(done.rate * op.batch),
                ]
            )
            entries += done.ops * op.batch
    return rows


# --------------------------------------------------------------------------- report


def _cells(rate: Rate, batch: int) -> tuple[str, str]:
    entries = rate_text(rate.median * batch) if batch > 1 else "-"
    return rate.cell(), entries


def store_table(store: Store, results: Results) -> str:
    """Ours, baseline and ratio per operation and thread count."""
    rows = []
    for op in OPS:
        for threads in THREADS:
            cell = results[op.name][threads]
            ours, ours_entries = _cells(cell.ours, op.batch)
            if cell.raw is None:
                rows.append([op.label, str(threads), ours, ours_entries])
                continue
            raw, raw_entries = _cells(cell.raw, op.batch)
            entries = "-" if op.batch < 2 else f"{ours_entries} / {raw_entries}"
            ratio = cell.ratio
            assert ratio is not None
            rows.append([op.label, str(threads), ours, raw, f"**{ratio_text(ratio)}**", entries])
    if store.raw is None:
        header = ["operation", "threads", "nenjim SPI ops/s", "entries/s"]
        return table(f"Storage SPI, {store.name} (reference, no baseline)", header, rows)
    header = [
        "operation",
        "threads",
        "nenjim SPI ops/s",
        "raw driver ops/s",
        "ratio ours/raw",
        "entries/s ours / raw",
    ]
    return table(f"Storage SPI, {store.name}", header, rows)


def targets_table(store: Store, results: Results) -> str:
    """The goal rows of one durable backend: each ratio against its goal, with a verdict."""
    rows = []
    for op in OPS:
        if op.name in SQLITE_ONLY and store.name != "SQLite":
            continue
        for threads in THREADS:
            ratio = results[op.name][threads].ratio
            if ratio is not None:
                wanted = TARGETS[op.name]
                label = f"{op.label}, {threads} thread(s)"
                rows.append([label, f">= {wanted}x", ratio_text(ratio), mark(ratio >= wanted)])
    group = results["append1"][max(THREADS)].ratio
    if store.name == "SQLite" and group is not None:
        label = f"group commit: {max(THREADS)} writers' 1-entry appends vs one commit per append"
        wanted = GROUP_COMMIT_TARGET
        rows.append([label, f">= {wanted}x", ratio_text(group), mark(group >= wanted)])
    header = ["target", "wanted", "measured", ""]
    return table(f"Storage SPI targets, {store.name}", header, rows)


def durability_table(directory: Path, pg: bool) -> str:
    """The settings ours and the baselines actually run with, read back from live connections."""
    rows = []
    backend = open_backend(f"sqlite:///{directory / 'settings.db'}", RESOURCES)
    try:
        ours = backend.view.run(lambda ctx, driver: sqlite_settings(ctx.connection))
    finally:
        backend.close()
    conn = sqlite_connect(directory / "settings-raw.db")
    try:
        raw = sqlite_settings(conn)
    finally:
        conn.close()
    rows.append(["SQLite", ours, raw])
    if pg:
        with ExitStack() as stack:
            schema = stack.enter_context(pg_schema("storageset"))
            pg_backend = open_backend(pg_store_url(schema), RESOURCES)
            stack.callback(pg_backend.close)
            ours_pg = pg_backend.view.run(lambda ctx, driver: pg_settings(ctx.connection))
            raw_pg = _pg_raw_settings()
        rows.append(["PostgreSQL", ours_pg, raw_pg])
    return table("Durability settings (read back)", ["backend", "nenjim SPI", "raw driver"], rows)


def _pg_raw_settings() -> str:
    with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as conn:
        return pg_settings(conn)


def run(options: Options) -> str:
    """Run the Storage SPI benchmark and return its report."""
    timing = QUICK if options.quick else DURABLE
    out: list[str] = []
    profiles: list[str] = []
    with scratch_dir() as directory:
        problem = pg_problem()
        stores = [_sqlite_store(directory)]
        if problem is None:
            stores.append(_pg_store())
        else:
            out.append(f"PostgreSQL skipped: {problem}")
        out.append(durability_table(directory, problem is None))
        counts: dict[str, dict[str, str]] = {}
        growth: list[list[str]] = []
        passes, seconds = (3, QUICK.seconds) if options.quick else GROWTH
        for store in stores:
            results = measure_store(store, timing)
            out.append(store_table(store, results))
            out.append(targets_table(store, results))
            growth.extend(stream_growth(store, passes, seconds))
            if options.profile:
                profiles.extend(profile_worst(store, results, PROFILE_SECONDS))
                counts[store.name] = statement_counts(store, COUNT_SECONDS)
        if counts:
            out.append(statements_table(counts))
        header = ["backend", "pass", "entries already in the stream", "appends/s", "entries/s"]
        title = f"Append of 100 entries to one growing stream (1 thread, passes of {seconds} s)"
        out.append(table(title, header, growth))
        memory = _memory_store()
        out.append(store_table(memory, measure_store(memory, QUICK if options.quick else MEMORY)))
    out.append(
        "Cells: median of the timed passes (min-max) in operations per second; `*` = a worker "
        "used up its prepared work before the pass ended. Ratio = ours / raw on the medians; "
        "entries/s = ops/s x 100 for the 100-entry append."
    )
    out.extend(profiles)
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "storage")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
