"""Benchmark: ``NenjimSaver.list(limit=1)`` on a thread of 10 checkpoints and of 5,000.

``list`` of one thread and namespace with a ``limit`` reads the thread's stream
from its head (docs/langgraph.md), so it should cost what it returns, not what
the thread holds: the line compares the median time of ``list(config,
limit=1)`` (the newest checkpoint, with its pending writes) on both threads,
on a SQLite file and on a PostgreSQL schema when the server answers. Goal:
the 5,000-checkpoint thread within 2x the 10-checkpoint one.

Run: ``python -m benchmarks.langgraph_list [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import Checkpoint
from langgraph.checkpoint.base.id import uuid6

from benchmarks.common import (
    machine_table,
    mark,
    median_seconds,
    pg_problem,
    pg_schema,
    pg_store_url,
    ratio_text,
    scratch_dir,
    table,
)
from nenjim.langgraph import NenjimSaver

SIZES = (10, 5_000)
GOAL = 2.0


def _config(thread: str, checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _grow(saver: NenjimSaver, thread: str, count: int) -> None:
    parent = None
    for step in range(count):
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {"count": step},
            "channel_versions": {"count": f"{step + 1:032}.0"},
            "versions_seen": {},
            "updated_channels": ["count"],
        }
        metadata: Any = {"source": "loop", "step": step, "parents": {}}
        stored = saver.put(_config(thread, parent), checkpoint, metadata, {"count": step + 1})
        parent = stored["configurable"]["checkpoint_id"]
        saver.put_writes(stored, [("count", step + 1)], f"task-{step}")


def _line(store: str, url: str, runs: int) -> list[str]:
    with NenjimSaver.from_conn_string(url) as saver:
        medians = []
        for size in SIZES:
            thread = f"thread-{size}"
            _grow(saver, thread, size)
            config = _config(thread)

            def newest(config: Any = config) -> None:
                found = list(saver.list(config, limit=1))
                assert len(found) == 1

            newest()
            medians.append(statistics.median(median_seconds(newest, runs, budget=10.0)))
    ratio = medians[1] / medians[0]
    return [
        store,
        f"{medians[0] * 1e3:.2f}",
        f"{medians[1] * 1e3:.2f}",
        ratio_text(ratio),
        mark(ratio <= GOAL),
    ]


@contextmanager
def _postgres() -> Iterator[str | None]:
    if pg_problem() is not None:
        yield None
        return
    with pg_schema("list") as schema:
        yield pg_store_url(schema)


def run(runs: int) -> str:
    """The table, as Markdown."""
    rows = []
    with scratch_dir() as directory:
        rows.append(_line("SQLite", f"sqlite:{directory / 'list.db'}", runs))
    with _postgres() as url:
        if url is not None:
            rows.append(_line("PostgreSQL", url, runs))
    header = [
        "store",
        f"{SIZES[0]:,} checkpoints (ms)",
        f"{SIZES[1]:,} checkpoints (ms)",
        "ratio",
        f"<= {GOAL:.0f}x",
    ]
    return table("list(config, limit=1)", header, rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args(argv)
    print(machine_table(), end="\n\n", flush=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(run(20 if args.quick else 200), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
