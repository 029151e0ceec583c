"""Benchmark: ``NenjimStore`` against LangGraph's own ``SqliteStore`` and ``PostgresStore``.

Operations, one thread, each one call of the store:

- ``put``: a new item (a memory of ~200 bytes with a ``kind`` and a
  ``score``) in one of 20 user namespaces ``("users", "u<i>", "memories")``;
- ``get``: one item of a store of ``N`` items, by namespace and key;
- ``search``: ``search(("users", "u<i>"), filter={"kind": "fact", "score":
  {"$gte": 50}}, limit=10)`` over the same store (each user has ``N/20``
  items, half of them facts), ``N/4`` searches a pass (at 2,000 items, 500:
  over a tenth of a second each, where 100 searches took 20-50 ms and a
  pass's rate moved by up to 2x between passes).

On SQLite, both stores on a fresh file each, ours measured right before
theirs in the same run; ``SqliteStore`` on its own connection
(``from_conn_string``), nenjim on its default SQLite settings (WAL,
``synchronous=FULL``). On PostgreSQL (the loopback server of
``benchmarks.common``), each on a fresh schema: ``PostgresStore`` on one
autocommit connection (``from_conn_string``), nenjim on its default pool.
Each cell is operations per second, the median of ``--runs`` passes; the
ratio is ours over theirs (above 1: nenjim faster).

Run: ``python -m benchmarks.langgraph_store [--quick] [--runs 3] [--databases sqlite,postgresql]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
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
from nenjim.langgraph import NenjimStore

USERS = 20
OPERATIONS = ("put", "get", "search")


def _value(index: int) -> dict[str, Any]:
    return {
        "text": f"memory {index}: " + "the user likes green tea and long walks " * 4,
        "kind": "fact" if index % 2 else "preference",
        "score": index % 100,
    }


def _namespace(index: int) -> tuple[str, ...]:
    return ("users", f"u{index % USERS}", "memories")


@contextmanager
def _ours(directory: Path) -> Iterator[BaseStore]:
    with NenjimStore.from_conn_string(f"sqlite:{directory / 'nenjim.db'}") as store:
        yield store


@contextmanager
def _theirs(directory: Path) -> Iterator[BaseStore]:
    with SqliteStore.from_conn_string(str(directory / "langgraph.db")) as store:
        store.setup()
        yield store


@contextmanager
def _ours_postgres(_: Path) -> Iterator[BaseStore]:
    with (
        pg_schema("store_ours") as schema,
        NenjimStore.from_conn_string(pg_store_url(schema)) as store,
    ):
        yield store


@contextmanager
def _theirs_postgres(_: Path) -> Iterator[BaseStore]:
    with pg_schema("store_theirs") as schema:
        conninfo = make_conninfo(PG_URL, options=f"-csearch_path={schema}")
        with PostgresStore.from_conn_string(conninfo) as store:
            store.setup()
            yield store


DATABASES = {
    "sqlite": ("SQLite", "SqliteStore", _ours, _theirs),
    "postgresql": ("PostgreSQL", "PostgresStore", _ours_postgres, _theirs_postgres),
}


def _rate(count: int, action: Callable[[int], object]) -> float:
    start = time.perf_counter()
    for index in range(count):
        action(index)
    return count / (time.perf_counter() - start)


def _pass(open_store: Callable[[Path], Any], items: int) -> dict[str, float]:
    with scratch_dir() as directory, open_store(directory) as store:
        rates = {"put": _rate(items, lambda i: store.put(_namespace(i), f"k{i}", _value(i)))}
        rates["get"] = _rate(items, lambda i: store.get(_namespace(i), f"k{(i * 7) % items}"))
        searches = max(items // 4, 20)
        rates["search"] = _rate(
            searches,
            lambda i: store.search(
                ("users", f"u{i % USERS}"),
                filter={"kind": "fact", "score": {"$gte": 50}},
                limit=10,
            ),
        )
        return rates


def run(items: int, runs: int, database: str = "sqlite") -> str:
    """The table of medians and ratios on ``database`` (``sqlite`` or ``postgresql``)."""
    title, baseline_name, open_ours, open_theirs = DATABASES[database]
    ours: dict[str, list[float]] = {name: [] for name in OPERATIONS}
    theirs: dict[str, list[float]] = {name: [] for name in OPERATIONS}
    for _ in range(runs):
        for name, rate in _pass(open_ours, items).items():
            ours[name].append(rate)
        for name, rate in _pass(open_theirs, items).items():
            theirs[name].append(rate)
    rows = []
    for name in OPERATIONS:
        mine, baseline = statistics.median(ours[name]), statistics.median(theirs[name])
        rows.append([name, f"{mine:,.0f}", f"{baseline:,.0f}", ratio_text(mine / baseline)])
    return table(
        f"{title}, {items} items, {USERS} users: operations/s, median of {runs}",
        ["operation", "NenjimStore", baseline_name, "ratio"],
        rows,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the machine and the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="500 items instead of 2,000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--databases", default="sqlite,postgresql", help="comma-separated")
    options = parser.parse_args(argv)
    databases = [name for name in options.databases.split(",") if name]
    for name in databases:
        if name not in DATABASES:
            raise SystemExit(f"unknown database {name!r}: use {', '.join(DATABASES)}")
    if "postgresql" in databases and (problem := pg_problem()) is not None:
        raise SystemExit(problem)
    print(machine_table(), end="\n\n", flush=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for name in databases:
        print(run(500 if options.quick else 2_000, options.runs, name), end="\n\n", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
