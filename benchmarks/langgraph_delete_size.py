"""Benchmark: the size of a store after writing threads, deleting them all, and compacting.

The same workload on ``NenjimSaver`` and on LangGraph's own savers (the
baselines, measured in the same run): ``T`` threads of ``N`` checkpoints each
(a LangGraph-shaped state: ``messages``, four messages of ~130 bytes, new
every step; ``count``, new every step; ``context``, ~2 kB that never
changes; and two pending writes per checkpoint), then ``delete_thread`` of
every thread, then a compaction. Sizes:

- SQLite: the database file after ``PRAGMA wal_checkpoint(TRUNCATE)`` (so the
  WAL is folded in), after the writes, after the deletes, and after the
  compaction: for nenjim ``PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA
  wal_checkpoint(TRUNCATE)`` (what ``nenjim storage compact`` does), for
  ``SqliteSaver`` ``VACUUM``;
- PostgreSQL: the total size of every table of the schema (heap, TOAST and
  indexes, ``pg_total_relation_size``) after each stage, the compaction being
  ``VACUUM FULL`` of every table (both sides).

Each cell is the median of ``--runs`` runs (fresh files and schemas each).
Run: ``python -m benchmarks.langgraph_delete_size [--quick] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from psycopg.conninfo import make_conninfo

from benchmarks.common import (
    PG_URL,
    machine_table,
    pg_problem,
    pg_schema,
    pg_store_url,
    ratio_text,
    scratch_dir,
    table,
)
from nenjim.langgraph import NenjimSaver

Saver = BaseCheckpointSaver[Any]
STAGES = ("after writes", "after delete", "after compaction")
_CONTEXT = {"documents": [{"id": f"doc-{i}", "text": "lorem ipsum " * 15} for i in range(10)]}


@dataclass(frozen=True, slots=True)
class Workload:
    """How much to write: ``threads`` threads of ``checkpoints`` checkpoints each."""

    threads: int
    checkpoints: int


def _version(counter: int) -> str:
    return f"{counter:032}.{0.5:016}"


def _message(index: int) -> dict[str, Any]:
    return {"role": "assistant" if index % 2 else "user", "content": f"message {index} " * 8}


def _write_thread(saver: Saver, thread_id: str, checkpoints: int) -> None:
    parent: str | None = None
    for step in range(checkpoints):
        versions = {"messages": _version(step + 1), "count": _version(step + 1)}
        versions["context"] = _version(1)
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {
                "messages": [_message(step - i) for i in range(4)],
                "count": step,
                "context": _CONTEXT,
            },
            "channel_versions": versions,
            "versions_seen": {"agent": {"messages": versions["messages"]}},
            "updated_channels": ["messages", "count"],
        }
        new_versions = (
            versions
            if step == 0
            else {"messages": versions["messages"]} | {"count": versions["count"]}
        )
        configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
        if parent is not None:
            configurable["checkpoint_id"] = parent
        metadata: Any = {"source": "input" if parent is None else "loop", "step": step - 1}
        stored = saver.put({"configurable": configurable}, checkpoint, metadata, new_versions)
        parent = stored["configurable"]["checkpoint_id"]
        saver.put_writes(
            stored,
            [("messages", [_message(step + 1)]), ("count", step + 1)],
            str(uuid.uuid4()),
            "~__pregel_pull, agent",
        )


def _thread_ids(workload: Workload) -> list[str]:
    return [f"thread-{n}" for n in range(workload.threads)]


def _fill_and_delete(saver: Saver, workload: Workload, measure: Callable[[], int]) -> list[int]:
    for thread_id in _thread_ids(workload):
        _write_thread(saver, thread_id, workload.checkpoints)
    written = measure()
    for thread_id in _thread_ids(workload):
        saver.delete_thread(thread_id)
    assert not list(saver.list(None))
    return [written, measure()]


# --------------------------------------------------------------------------- SQLite


def _sqlite_size(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def _sqlite_run(directory: Path, workload: Workload, ours: bool) -> list[int]:
    path = directory / f"{'ours' if ours else 'theirs'}-{uuid.uuid4().hex}.db"
    if ours:
        with NenjimSaver.from_conn_string(f"sqlite://{path}") as saver:
            sizes = _fill_and_delete(saver, workload, lambda: _sqlite_size(path))
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    else:
        with SqliteSaver.from_conn_string(str(path)) as theirs:
            sizes = _fill_and_delete(theirs, workload, lambda: _sqlite_size(path))
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("VACUUM")
        finally:
            conn.close()
    return [*sizes, _sqlite_size(path)]


# --------------------------------------------------------------------------- PostgreSQL


def _schema_size(schema: str, *, full_vacuum: bool = False) -> int:
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        names = [
            str(row[0])
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
            ).fetchall()
        ]
        total = 0
        for name in names:
            qualified = f'"{schema}"."{name}"'
            if full_vacuum:
                conn.execute(f"VACUUM FULL {qualified}")
            row = conn.execute(
                "SELECT pg_total_relation_size(%s::regclass)", (qualified,)
            ).fetchone()
            total += int(row[0]) if row else 0
    return total


def _pg_run(workload: Workload, ours: bool) -> list[int]:
    with pg_schema("lg_delete_ours" if ours else "lg_delete_theirs") as schema:
        if ours:
            with NenjimSaver.from_conn_string(pg_store_url(schema)) as saver:
                sizes = _fill_and_delete(saver, workload, lambda: _schema_size(schema))
        else:
            conninfo = make_conninfo(PG_URL, options=f"-csearch_path={schema}")
            with PostgresSaver.from_conn_string(conninfo) as theirs:
                theirs.setup()
                sizes = _fill_and_delete(theirs, workload, lambda: _schema_size(schema))
        return [*sizes, _schema_size(schema, full_vacuum=True)]


# --------------------------------------------------------------------------- report


def _medians(runs: Sequence[Sequence[int]]) -> list[float]:
    return [statistics.median(run[stage] for run in runs) for stage in range(len(STAGES))]


def _size(value: float) -> str:
    return f"{value / 1e6:.2f} MB"


def _table(store: str, baseline: str, ours: list[float], theirs: list[float], runs: int) -> str:
    rows = [
        [stage, _size(a), _size(b), ratio_text(a / b) if b else "-"]
        for stage, a, b in zip(STAGES, ours, theirs, strict=True)
    ]
    return table(
        f"{store}: sizes (median of {runs} runs)",
        ["stage", "NenjimSaver", baseline, "ratio"],
        rows,
    )


def run(workload: Workload, runs: int) -> str:
    """Every table, as Markdown."""
    out = [
        f"{workload.threads} threads x {workload.checkpoints} checkpoints "
        f"(2 writes each), then delete_thread of every thread"
    ]
    with scratch_dir() as directory:
        results: dict[bool, list[list[int]]] = {True: [], False: []}
        for _ in range(runs):
            for ours in (True, False):
                results[ours].append(_sqlite_run(directory, workload, ours))
        out.append(
            _table("SQLite", "SqliteSaver", _medians(results[True]), _medians(results[False]), runs)
        )
    problem = pg_problem()
    if problem is not None:
        out.append(f"PostgreSQL skipped: {problem}")
        return "\n\n".join(out)
    results = {True: [], False: []}
    for _ in range(runs):
        for ours in (True, False):
            results[ours].append(_pg_run(workload, ours))
    out.append(
        _table(
            "PostgreSQL", "PostgresSaver", _medians(results[True]), _medians(results[False]), runs
        )
    )
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--runs", type=int, default=None, help="runs per cell (default 3)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default 20)")
    parser.add_argument("--checkpoints", type=int, default=None, help="per thread (default 50)")
    args = parser.parse_args(argv)
    workload = Workload(
        threads=args.threads or (4 if args.quick else 20),
        checkpoints=args.checkpoints or (10 if args.quick else 50),
    )
    runs = args.runs or (1 if args.quick else 3)
    print(machine_table(), end="\n\n", flush=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(run(workload, runs), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
