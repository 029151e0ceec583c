"""Benchmark: a 1,000-message thread on a ``DeltaChannel``, nenjim against LangGraph's savers.

A real ``StateGraph`` whose ``messages`` are a ``DeltaChannel`` (LangGraph's
default ``snapshot_frequency``, 100) runs 500 turns on one thread: each turn
sends a user message and one node answers, so the thread ends with 1,000
messages (``--message-chars`` characters of content each). The same
workload runs on ``NenjimSaver`` and on LangGraph's ``SqliteSaver`` (one
SQLite file each) and ``PostgresSaver`` (one schema each).

Measured, per run, on fresh stores:

- bytes on disk: the SQLite file after ``PRAGMA wal_checkpoint(TRUNCATE)``;
  the total size of every table of the schema (heap, TOAST and indexes,
  ``pg_total_relation_size``) after ``VACUUM``;
- the median time (over ``--calls`` calls, the two savers alternating call
  by call) of ``get_tuple`` (the newest checkpoint, no checkpoint id, as
  ``invoke`` and ``get_state`` ask), of ``get_delta_channel_history`` and of
  the graph's ``get_state``, which is both plus the rebuild, at two
  checkpoints: the newest, and the deepest of the last snapshot period (the
  most writes to replay since a snapshot).

Each cell is the median of ``--runs`` runs (3 by default), nenjim and the
baseline alternating run by run. Goal: ≤ 0.5x the baseline's bytes and
≥ 1.0x its speed (a time ratio nenjim ÷ baseline ≤ 1.0x).

Run: ``python -m benchmarks.langgraph_delta [--quick] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from psycopg.conninfo import make_conninfo

from benchmarks.common import (
    PG_URL,
    machine_table,
    mark,
    pg_problem,
    pg_schema,
    pg_schema_bytes,
    pg_store_url,
    ratio_text,
    scratch_dir,
    table,
)
from nenjim.langgraph import NenjimSaver

Saver = BaseCheckpointSaver[Any]
THREAD: Any = {"configurable": {"thread_id": "chat"}}
READS = ("get_tuple", "get_delta_channel_history", "get_state")
PLACES = ("newest", "deepest")


def _append(state: list[dict[str, str]], batches: Sequence[list[dict[str, str]]]) -> Any:
    return state + [message for batch in batches for message in batch]


class Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], DeltaChannel(_append)]


@dataclass(frozen=True, slots=True)
class Workload:
    """``turns`` turns of two messages of ``chars`` characters of content each."""

    turns: int
    chars: int
    calls: int


def _graph(saver: Saver, chars: int) -> Any:
    def reply(state: Chat) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [{"role": "assistant", "content": _content(n, chars)}]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


def _content(n: int, chars: int) -> str:
    return (f"message {n}: " + "lorem ipsum dolor sit amet " * (chars // 27 + 1))[:chars]


def _fill(saver: Saver, workload: Workload) -> Any:
    """Run the turns; the graph."""
    graph = _graph(saver, workload.chars)
    for turn in range(workload.turns):
        message = {"role": "user", "content": _content(2 * turn, workload.chars)}
        graph.invoke({"messages": [message]}, THREAD, durability="sync")
    messages = graph.get_state(THREAD).values["messages"]
    assert len(messages) == 2 * workload.turns, len(messages)
    return graph


def _deepest(saver: Saver) -> Any:
    """Of the newest 150 checkpoints, the one with the most updates since a snapshot."""
    recent = list(saver.list(THREAD, limit=150))

    def depth(item: Any) -> int:
        counters = item.metadata.get("counters_since_delta_snapshot") or {}
        return int(counters.get("messages", (0, 0))[0])

    return max(recent, key=depth).config


@dataclass(slots=True)
class Side:
    """One saver's filled thread, ready to be read."""

    saver: Saver
    graph: Any
    deepest: Any

    def read(self, what: str, place: str) -> Callable[[], object]:
        """The read ``what`` of the checkpoint at ``place``."""
        config = THREAD if place == "newest" else self.deepest
        if what == "get_tuple":
            return lambda: self.saver.get_tuple(config)
        if what == "get_delta_channel_history":
            return lambda: self.saver.get_delta_channel_history(
                config=config, channels=["messages"]
            )
        return lambda: self.graph.get_state(config)


def _alternating(ours: Side, theirs: Side, calls: int) -> dict[tuple[str, str], list[float]]:
    """Median seconds per read and place: ``[ours, theirs]``, the calls alternating."""
    medians: dict[tuple[str, str], list[float]] = {}
    for what in READS:
        for place in PLACES:
            actions = (ours.read(what, place), theirs.read(what, place))
            for action in actions:  # warm both
                action()
            times: list[list[float]] = [[], []]
            for _ in range(calls):
                for side, action in enumerate(actions):
                    started = time.perf_counter()
                    action()
                    times[side].append(time.perf_counter() - started)
            medians[(what, place)] = [statistics.median(t) for t in times]
    return medians


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run: bytes ``[ours, theirs]`` and the read medians."""

    bytes: list[int]
    reads: dict[tuple[str, str], list[float]]


# --------------------------------------------------------------------------- SQLite


def _file_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def _sqlite_run(directory: Path, workload: Workload, number: int) -> RunResult:
    ours_path = directory / f"ours-{number}.db"
    theirs_path = directory / f"theirs-{number}.db"
    with (
        NenjimSaver.from_conn_string(f"sqlite://{ours_path}") as ours,
        SqliteSaver.from_conn_string(str(theirs_path)) as theirs,
    ):
        sides = _filled(ours, theirs, workload, number)
        sizes = [_file_bytes(ours_path), _file_bytes(theirs_path)]
        return RunResult(sizes, _alternating(*sides, workload.calls))


def _filled(ours: Saver, theirs: Saver, workload: Workload, number: int) -> tuple[Side, Side]:
    """Fill both, the one filled first alternating run by run."""
    order = [ours, theirs] if number % 2 == 0 else [theirs, ours]
    graphs = {id(saver): _fill(saver, workload) for saver in order}
    return (
        Side(ours, graphs[id(ours)], _deepest(ours)),
        Side(theirs, graphs[id(theirs)], _deepest(theirs)),
    )


# --------------------------------------------------------------------------- PostgreSQL


@contextmanager
def _postgres_savers() -> Iterator[tuple[Saver, Saver, str, str]]:
    with pg_schema("lg_delta_ours") as ours_schema, pg_schema("lg_delta_theirs") as theirs_schema:
        conninfo = make_conninfo(PG_URL, options=f"-csearch_path={theirs_schema}")
        with (
            NenjimSaver.from_conn_string(pg_store_url(ours_schema)) as ours,
            PostgresSaver.from_conn_string(conninfo) as theirs,
        ):
            theirs.setup()
            yield ours, theirs, ours_schema, theirs_schema


def _pg_run(workload: Workload, number: int) -> RunResult:
    with _postgres_savers() as (ours, theirs, ours_schema, theirs_schema):
        sides = _filled(ours, theirs, workload, number)
        sizes = [pg_schema_bytes(ours_schema), pg_schema_bytes(theirs_schema)]
        return RunResult(sizes, _alternating(*sides, workload.calls))


# --------------------------------------------------------------------------- report


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _table(store: str, baseline: str, results: Sequence[RunResult]) -> str:
    runs = len(results)
    ours_bytes = _median([r.bytes[0] for r in results])
    theirs_bytes = _median([r.bytes[1] for r in results])
    rows = [
        [
            "bytes on disk",
            f"{ours_bytes / 1e6:.2f} MB",
            f"{theirs_bytes / 1e6:.2f} MB",
            ratio_text(ours_bytes / theirs_bytes),
            f"<= 0.5x {mark(ours_bytes / theirs_bytes <= 0.5)}",
        ]
    ]
    for what in READS:
        for place in PLACES:
            ours = _median([r.reads[(what, place)][0] for r in results])
            theirs = _median([r.reads[(what, place)][1] for r in results])
            rows.append(
                [
                    f"{what} ({place})",
                    f"{ours * 1e3:.2f} ms",
                    f"{theirs * 1e3:.2f} ms",
                    ratio_text(ours / theirs),
                    f"<= 1.0x {mark(ours <= theirs)}",
                ]
            )
    return table(
        f"{store}: median of {runs} runs",
        ["measure", "NenjimSaver", baseline, "ratio", "goal"],
        rows,
    )


def run(workload: Workload, runs: int) -> str:
    """Every table, as Markdown."""
    out = [
        f"{workload.turns} turns ({2 * workload.turns} messages of {workload.chars} characters) "
        f"on a DeltaChannel; reads: median of {workload.calls} alternating calls"
    ]
    with scratch_dir() as directory:
        sqlite_results = [_sqlite_run(directory, workload, n) for n in range(runs)]
    out.append(_table("SQLite", "SqliteSaver", sqlite_results))
    problem = pg_problem()
    if problem is not None:
        out.append(f"PostgreSQL skipped: {problem}")
    else:
        pg_results = [_pg_run(workload, n) for n in range(runs)]
        out.append(_table("PostgreSQL", "PostgresSaver", pg_results))
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--runs", type=int, default=None, help="runs per cell (default 3)")
    parser.add_argument("--turns", type=int, default=None, help="turns (default 500)")
    parser.add_argument("--message-chars", type=int, default=400, help="content per message")
    parser.add_argument("--calls", type=int, default=None, help="calls per read (default 30)")
    args = parser.parse_args(argv)
    workload = Workload(
        turns=args.turns or (60 if args.quick else 500),
        chars=args.message_chars,
        calls=args.calls or (5 if args.quick else 30),
    )
    runs = args.runs or (1 if args.quick else 3)
    print(machine_table(), end="\n\n", flush=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(run(workload, runs), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
