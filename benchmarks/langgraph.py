"""Benchmark: ``NenjimSaver`` against LangGraph's own ``SqliteSaver`` and ``PostgresSaver``.

Operations (each one call of a saver shared by all worker threads, as a
LangGraph application shares its checkpointer), at 1 and 8 threads, every
thread on its own LangGraph thread id:

- ``put``: the next checkpoint of a growing thread (parent = the previous
  one), with a LangGraph-shaped state: ``messages`` (~0.5 kB, new every
  step), ``count`` (new every step), ``context`` (~2 kB, written at the
  first step only: its version stays, as LangGraph keeps an unwritten
  channel's) and a branch channel; versions in LangGraph's string form;
- ``put_writes``: a task's two writes (a message and a count) against the
  thread's checkpoint, a new task id each call;
- ``get_tuple``: the newest checkpoint of a thread of 20 (no checkpoint id,
  as ``invoke`` and ``get_state`` ask), with its two pending writes;
- ``list``: every checkpoint of a thread of 10, each with two writes.

Both sides run on the same database kind, each on a fresh SQLite file or
PostgreSQL schema, ours measured right before theirs: SQLite files in WAL
mode with ``synchronous=FULL`` (read back from both), PostgreSQL through a
pool of 8 (``PostgresSaver`` over a ``psycopg_pool.ConnectionPool``).

Bytes: a real ``StateGraph`` runs 100 supersteps of one node on a thread
whose state carries ``n`` (changes every step) and ``big`` (100 kB of random
letters and digits, changed at steps 50 and 100), as one ``str`` or as a
``list`` of 100 strings of 1 kB. Measured on disk: the SQLite file after a
WAL checkpoint; on PostgreSQL the total size of every table of the schema
(heap, TOAST and indexes) after ``VACUUM``.

Run: ``python -m benchmarks.langgraph [--quick] [--no-profile]``.
"""

from __future__ import annotations

import operator
import os
import random
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

import psycopg
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from benchmarks.common import (
    PG_URL,
    Options,
    Rate,
    Step,
    Timing,
    machine_table,
    mark,
    measure,
    parse_options,
    pg_problem,
    pg_schema,
    pg_schema_bytes,
    pg_store_url,
    profile_pass,
    profile_summary,
    ratio_text,
    scratch_dir,
    table,
)
from nenjim.langgraph import NenjimSaver

OPERATIONS = ("put", "put_writes", "get_tuple", "list")
THREADS = (1, 8)
MAX_OPS = 1_000_000
"""No worker does more operations than this in one pass (the passes are bounded by time)."""

_RANDOM = random.Random(7)
_CONTEXT = {"documents": [{"id": f"doc-{i}", "text": "lorem ipsum " * 15} for i in range(10)]}
_TASK_PATH = "~__pregel_pull, agent"

Saver = BaseCheckpointSaver[Any]


# --------------------------------------------------------------------------- workloads


def _version(counter: int) -> str:
    return f"{counter:032}.{_RANDOM.random():016}"


_CONTEXT_VERSION = _version(1)
"""The version of the channel no step writes after the first: one for every checkpoint."""


def _message(index: int) -> dict[str, Any]:
    return {"role": "assistant" if index % 2 else "user", "content": f"message {index} " * 8}


def _checkpoint(step: int) -> tuple[Checkpoint, dict[str, Any]]:
    """A LangGraph-shaped checkpoint of step ``step`` and its ``new_versions``."""
    versions = {
        "messages": _version(step + 1),
        "count": _version(step + 1),
        "context": _CONTEXT_VERSION,
        "branch:to:agent": _version(step + 1),
    }
    checkpoint: Checkpoint = {
        "v": 4,
        "id": str(uuid6(clock_seq=step)),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {
            "messages": [_message(step - i) for i in range(4)],
            "count": step,
            "context": _CONTEXT,
            "branch:to:agent": None,
        },
        "channel_versions": versions,
        "versions_seen": {
            "__input__": {},
            "__start__": {"__start__": versions["context"]},
            "agent": {"branch:to:agent": versions["branch:to:agent"]},
        },
        "updated_channels": ["messages", "count", "branch:to:agent"],
    }
    # As LangGraph's: a channel's version changes only when it is written ("context" at
    # the first step), and new_versions names the channels written.
    written = ("messages", "count", "branch:to:agent", *(("context",) if step == 0 else ()))
    new = {name: versions[name] for name in written}
    return checkpoint, new


def _config(thread: str, checkpoint_id: str | None = None) -> Any:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _grow(saver: Saver, thread: str, count: int, writes: bool) -> Any:
    """Put ``count`` checkpoints on ``thread`` (two writes each if ``writes``); the last config."""
    config = _config(thread)
    for step in range(count):
        checkpoint, new = _checkpoint(step)
        metadata: Any = {"source": "loop", "step": step, "parents": {}}
        config = saver.put(config, checkpoint, metadata, new)
        if writes:
            saver.put_writes(config, [("messages", _message(step)), ("count", step)], f"t{step}")
    return config


def _workers(saver: Saver, operation: str, threads: int, tag: str) -> list[Step]:
    """One prepared step per worker thread."""
    steps: list[Step] = []
    for index in range(threads):
        thread = f"{tag}-{operation}-{index}"
        steps.append(_step(saver, operation, thread))
    return steps


def _step(saver: Saver, operation: str, thread: str) -> Step:
    done = [0]
    if operation == "put":
        config = [_config(thread)]

        def put() -> bool:
            step = done[0]
            checkpoint, new = _checkpoint(step)
            metadata: Any = {"source": "loop", "step": step, "parents": {}}
            config[0] = saver.put(config[0], checkpoint, metadata, new)
            done[0] += 1
            return done[0] < MAX_OPS

        return put
    if operation == "put_writes":
        target = _grow(saver, thread, 1, writes=False)

        def put_writes() -> bool:
            step = done[0]
            writes = [("messages", _message(step)), ("count", step)]
            saver.put_writes(target, writes, f"task-{step}", _TASK_PATH)
            done[0] += 1
            return done[0] < MAX_OPS

        return put_writes
    if operation == "get_tuple":
        _grow(saver, thread, 20, writes=True)
        latest = _config(thread)

        def get_tuple() -> bool:
            found = saver.get_tuple(latest)
            assert found is not None
            assert len(found.pending_writes or ()) == 2
            done[0] += 1
            return done[0] < MAX_OPS

        return get_tuple
    _grow(saver, thread, 10, writes=True)
    everything = _config(thread)

    def list_all() -> bool:
        found = list(saver.list(everything))
        assert len(found) == 10
        done[0] += 1
        return done[0] < MAX_OPS

    return list_all


# --------------------------------------------------------------------------- savers


@dataclass(frozen=True, slots=True)
class Backend:
    """One database kind: how to open our saver and theirs on a fresh store."""

    name: str
    ours: Callable[[], Any]
    theirs: Callable[[], Any]
    settings: Callable[[Saver, Saver], str]


@contextmanager
def _ours_sqlite(directory: Path) -> Iterator[NenjimSaver]:
    with NenjimSaver.from_conn_string(f"sqlite://{directory / f'{uuid.uuid4().hex}.db'}") as saver:
        yield saver


@contextmanager
def _theirs_sqlite(directory: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(directory / f"{uuid.uuid4().hex}.db")) as saver:
        saver.setup()
        yield saver


@contextmanager
def _ours_postgres() -> Iterator[NenjimSaver]:
    with (
        pg_schema("lg_ours") as schema,
        NenjimSaver.from_conn_string(pg_store_url(schema, pool_size=8, max_overflow=2)) as saver,
    ):
        yield saver


@contextmanager
def _theirs_postgres() -> Iterator[PostgresSaver]:
    with pg_schema("lg_theirs") as schema:
        conninfo = make_conninfo(PG_URL, options=f"-csearch_path={schema}")
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        with ConnectionPool(conninfo, min_size=8, max_size=8, kwargs=kwargs) as pool:
            saver = PostgresSaver(pool)  # type: ignore[arg-type]
            saver.setup()
            yield saver


def _sqlite_settings(ours: Saver, theirs: Saver) -> str:
    assert isinstance(ours, NenjimSaver)
    assert isinstance(theirs, SqliteSaver)
    path = ours.backend.path  # type: ignore[attr-defined]
    with sqlite3.connect(path) as probe:
        ours_mode = probe.execute("PRAGMA journal_mode").fetchone()[0]
    with theirs.cursor(transaction=False) as cursor:
        mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = cursor.execute("PRAGMA synchronous").fetchone()[0]
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return (
        f"ours: journal_mode={ours_mode}, synchronous=FULL (set on every connection); "
        f"SqliteSaver: journal_mode={mode}, synchronous={names.get(synchronous, synchronous)}"
    )


def _pg_settings(ours: Saver, theirs: Saver) -> str:
    with psycopg.connect(PG_URL) as conn:
        row = conn.execute("SELECT current_setting('synchronous_commit')").fetchone()
    return f"both: synchronous_commit={row[0] if row else '?'}, one pool of 8 connections each"


# --------------------------------------------------------------------------- throughput


@dataclass(frozen=True, slots=True)
class Row:
    """One operation at one thread count: ours and theirs."""

    backend: str
    operation: str
    threads: int
    ours: Rate
    theirs: Rate

    @property
    def ratio(self) -> float:
        """Ours over theirs, on the medians."""
        return self.ours.median / self.theirs.median if self.theirs.median else 0.0


def _rows(backend: Backend, timing: Timing) -> list[Row]:
    rows = []
    for operation in OPERATIONS:
        for threads in THREADS:
            with backend.ours() as ours:
                ours_rate = measure(_workers(ours, operation, threads, "ours"), timing)
            with backend.theirs() as theirs:
                theirs_rate = measure(_workers(theirs, operation, threads, "theirs"), timing)
            rows.append(Row(backend.name, operation, threads, ours_rate, theirs_rate))
    return rows


def _rate_table(backend: Backend, rows: Sequence[Row], baseline: str) -> str:
    return table(
        f"{backend.name}: operations/s, median of the passes (min-max)",
        ["operation", "threads", "NenjimSaver", baseline, "ratio", "goal >= 1.0x"],
        [
            [
                row.operation,
                str(row.threads),
                row.ours.cell(),
                row.theirs.cell(),
                ratio_text(row.ratio),
                mark(row.ratio >= 1.0),
            ]
            for row in rows
        ],
    )


def _profile(backend: Backend, row: Row, seconds: float) -> str:
    with backend.ours() as ours:
        stats = profile_pass(_workers(ours, row.operation, 1, "profile"), seconds)
    return profile_summary(stats, f"NenjimSaver {row.operation} on {backend.name}, 1 thread")


# --------------------------------------------------------------------------- bytes


class _BigState(TypedDict):
    n: int
    big: Any
    log: Annotated[list[int], operator.add]


def _big_value(kind: str, seed: int) -> Any:
    letters = random.Random(seed)
    text = "".join(letters.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(100_000))
    return text if kind == "str" else [text[i : i + 1000] for i in range(0, len(text), 1000)]


def _hundred_steps(saver: Saver, kind: str) -> None:
    def step(state: _BigState) -> dict[str, Any]:
        n = state["n"] + 1
        update: dict[str, Any] = {"n": n}
        if n % 50 == 0:
            update["big"] = _big_value(kind, n)
        return update

    graph = StateGraph(_BigState)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda s: END if s["n"] >= 100 else "step")
    config: Any = {"configurable": {"thread_id": "big"}, "recursion_limit": 1000}
    start = {"n": 0, "big": _big_value(kind, 0), "log": []}
    out = graph.compile(checkpointer=saver).invoke(start, config, durability="sync")
    assert out["n"] == 100
    assert len(list(saver.list(config))) == 102


def _sqlite_bytes(directory: Path, kind: str) -> tuple[int, int]:
    ours_path = directory / f"bytes-ours-{kind}.db"
    with NenjimSaver.from_conn_string(f"sqlite://{ours_path}") as ours:
        _hundred_steps(ours, kind)
    theirs_path = directory / f"bytes-theirs-{kind}.db"
    with SqliteSaver.from_conn_string(str(theirs_path)) as theirs:
        _hundred_steps(theirs, kind)
    sizes = []
    for path in (ours_path, theirs_path):
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes.append(path.stat().st_size)
    return sizes[0], sizes[1]


def _pg_bytes(kind: str) -> tuple[int, int]:
    with pg_schema("lg_bytes_ours") as schema:
        with NenjimSaver.from_conn_string(pg_store_url(schema)) as ours:
            _hundred_steps(ours, kind)
        ours_bytes = pg_schema_bytes(schema)
    with pg_schema("lg_bytes_theirs") as schema:
        conninfo = make_conninfo(PG_URL, options=f"-csearch_path={schema}")
        with PostgresSaver.from_conn_string(conninfo) as theirs:
            theirs.setup()
            _hundred_steps(theirs, kind)
        theirs_bytes = pg_schema_bytes(schema)
    return ours_bytes, theirs_bytes


def _bytes_table(results: Sequence[tuple[str, str, int, int]]) -> str:
    return table(
        "Bytes stored for a 100-step thread with a large value that rarely changes",
        ["store", "big value", "NenjimSaver", "LangGraph's saver", "ratio", "goal <= 0.5x"],
        [
            [
                store,
                kind,
                f"{ours / 1e6:.2f} MB",
                f"{theirs / 1e6:.2f} MB",
                ratio_text(ours / theirs),
                mark(ours / theirs <= 0.5),
            ]
            for store, kind, ours, theirs in results
        ],
    )


# --------------------------------------------------------------------------- run


def run(options: Options) -> str:
    """Every table of this benchmark, as Markdown."""
    timing = Timing(1, 0.3, 0.1) if options.quick else Timing(3, 1.5, 0.3)
    sections = []
    pg_missing = pg_problem()
    with scratch_dir() as directory:
        backends = [
            Backend(
                "SQLite",
                lambda: _ours_sqlite(directory),
                lambda: _theirs_sqlite(directory),
                _sqlite_settings,
            )
        ]
        if pg_missing is None:
            backends.append(Backend("PostgreSQL", _ours_postgres, _theirs_postgres, _pg_settings))
        else:
            sections.append(f"PostgreSQL rows skipped: {pg_missing}")
        for backend in backends:
            with backend.ours() as ours, backend.theirs() as theirs:
                settings = backend.settings(ours, theirs)
            baseline = "SqliteSaver" if backend.name == "SQLite" else "PostgresSaver"
            rows = _rows(backend, timing)
            sections.append(_rate_table(backend, rows, baseline) + f"\n\n{settings}")
            if options.profile:
                for row in rows:
                    if row.ratio < 1.0 and row.threads == 1:
                        sections.append("```text\n" + _profile(backend, row, 1.0) + "\n```")
        results = []
        for kind in ("str", "list"):
            results.append(("SQLite file", kind, *_sqlite_bytes(directory, kind)))
            if pg_missing is None:
                results.append(("PostgreSQL schema", kind, *_pg_bytes(kind)))
        sections.append(_bytes_table(results))
    return "\n\n".join(sections)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "")
    print(machine_table(), end="\n\n", flush=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(run(options), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
