"""The floor under the Storage SPI's PostgreSQL insert and 1-entry append at 8 threads.

For each operation, three writers of 8 threads each, every thread on its own
root (``ours-<n>``), as in :mod:`benchmarks.storage`; their timed passes
alternate (ours, by hand, baseline, ours, ...), so a swing in the machine's
load hits all three alike:

- *ours*: ``Records.insert`` of an ``agent.executions`` record guarded by its
  owner's root, or ``Streams.append`` of one entry to the root's journal
  stream, through the engine;
- *by hand*: the one statement the engine sends for that write, sent alone (a
  transaction of its own, as the engine sends it) by psycopg on one connection
  per thread, on a schema the engine created (its tables, the resource's
  indexes, the followers' trigger). Its Python is only what the values of the
  write cannot do without, with the standard library: the key or the entry id,
  the log stream id (``uuid.uuid5``), the time, and the event's JSON spliced
  from the parts every write of the thread shares. No validation, no pool, no
  layers;
- *baseline*: the hand-written SQL of :mod:`benchmarks.storage_raw` (one row and
  one index for an insert, one head row and one entry for an append; no anchor,
  no log).

With 8 writers on a 2-core machine, client and server share both cores: the
by-hand ratio is what the rows and indexes the engine writes leave for any
client, whatever the engine's Python.

Run: ``python -m benchmarks.probes.postgres_floor [--quick]`` (also part of
``benchmarks.run_all``).
"""

from __future__ import annotations

import itertools
import statistics
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from json.encoder import encode_basestring
from typing import Any

import psycopg

from benchmarks.common import PG_URL, Options, Step, Timing, parse_options, pg_problem, run_pass
from benchmarks.common import table as render_table
from benchmarks.probes.insert_floor import InsertValues
from benchmarks.storage import OPS, RECORD, Op, _pg_store, spi_steps
from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS_ID, JOURNAL_ID, ROOTS_ID

GOAL = 0.6
THREADS = 8
FULL = Timing(runs=5, seconds=0.6, warmup=0.2)
QUICK = Timing(runs=1, seconds=0.15, warmup=0.05)
WRITERS = ("ours", "by hand", "baseline")


def _hand_insert(
    connection: psycopg.Connection[Any], text: str, root: str, dialect: PostgresDialect
) -> Step:
    """New records of ``root``, each with the engine's one statement, sent alone."""
    values = InsertValues(root)
    attributes = dialect.json(values.attributes)  # the text as written, sent as jsonb
    envelope = values.envelope
    topic = events.RECORD_INSERTED
    numbers = itertools.count()

    def insert() -> bool:
        key = f"{root}/h{next(numbers)}"
        originator = values.originator(key)
        row = (EXECUTIONS_ID, key, 0, attributes, *envelope, originator)
        params = (ROOTS_ID, root, *row, originator, topic, values.state(key))
        ((inserted, written, anchored),) = connection.execute(text, params).fetchall()
        if (inserted, written, anchored) != (1, 1, 1):
            raise RuntimeError(f"by-hand insert of {key}: {inserted}, {written}, {anchored}")
        return True

    return insert


def _hand_append(
    connection: psycopg.Connection[Any], text: str, root: str, dialect: PostgresDialect
) -> Step:
    """One entry at a time to the journal stream ``root`` (guarded by the root of that
    name), with the engine's one statement, sent alone."""
    stream = root
    originator = uuid.uuid5(events.NAMESPACE, f"streams\0{JOURNAL_ID}\0{stream}")
    head_text = (
        f'{{"resource":{encode_basestring(JOURNAL_ID)},'
        f'"stream":{encode_basestring(stream)},"position":'
    )
    tail = (
        f',"record_type":{encode_basestring(RECORD.record_type)},'
        f'"format_version":{encode_basestring(RECORD.format_version)},'
        f'"payload":{RECORD.payload_json}}}'
    )
    topic = events.STREAM_ENTRY_APPENDED
    heads = [0]

    def append() -> bool:
        head = heads[0]
        moved = head + 1
        entry_id = f"e{moved}"
        body = "".join((head_text, str(moved), ',"id":', encode_basestring(entry_id), tail))
        params = (
            *(ROOTS_ID, root),
            *(JOURNAL_ID, stream, head, moved, moved, head),
            *(JOURNAL_ID, stream, [entry_id], moved),
            *(originator, topic, [moved], [body.encode()], moved),
        )
        ((current, entered, written, anchored),) = connection.execute(text, params).fetchall()
        if (current, entered, written, anchored) != (moved, [entry_id], 1, 1):
            raise RuntimeError(f"by-hand append to {stream} at {head}: {current}, {written}")
        heads[0] = moved
        return True

    return append


@contextmanager
def by_hand(
    backend: PostgresBackend, op: Op, threads: int = THREADS, conninfo: str = PG_URL
) -> Iterator[list[Step]]:
    """One by-hand writer per thread on ``backend``'s schema (on the server of
    ``conninfo``), whose roots ``ours-<n>`` exist."""
    dialect = PostgresDialect(backend.schema)
    if op.kind == "insert":
        template, make = dialect.insert_guarded_row, _hand_insert
    else:
        template, make = dialect.append_guarded_rows_alone, _hand_append
    text = dialect.sql(template)
    with ExitStack() as stack:
        steps = []
        for index in range(threads):
            connection = psycopg.connect(conninfo, autocommit=True, connect_timeout=5)
            stack.callback(connection.close)
            steps.append(make(connection, text, f"ours-{index}", dialect))
        yield steps


def measure(op: Op, timing: Timing) -> list[dict[str, float]]:
    """Operations per second of each writer, one dict per round of alternating passes."""
    store = _pg_store()
    assert store.raw is not None
    with ExitStack() as stack:
        ours = spi_steps(store.ours(stack), op, THREADS)
        made = store.ours(stack)
        assert isinstance(made, PostgresBackend)
        spi_steps(made, op, THREADS)  # the roots the by-hand writers write under
        hand = stack.enter_context(by_hand(made, op))
        writers: dict[str, Sequence[Step]] = {
            "ours": ours,
            "by hand": hand,
            "baseline": store.raw(stack, op, THREADS),
        }
        for steps in writers.values():
            run_pass(steps, timing.warmup)
        return [
            {name: run_pass(steps, timing.seconds).rate for name, steps in writers.items()}
            for _ in range(timing.runs)
        ]


def _median(rounds: list[dict[str, float]], name: str) -> float:
    return statistics.median(measured[name] for measured in rounds)


def run(options: Options) -> str:
    """The floor table of the insert and the 1-entry append, and what it says."""
    problem = pg_problem()
    if problem:
        return f"PostgreSQL floor skipped: {problem}"
    timing = QUICK if options.quick else FULL
    rows: list[list[str]] = []
    verdicts: list[str] = []
    wanted = [op for op in OPS if op.name in ("insert", "append1")]
    for op in wanted:
        rounds = measure(op, timing)
        ours, hand, raw = (_median(rounds, name) for name in WRITERS)
        rows.append(
            [
                op.label,
                f"{ours:,.0f}",
                f"{hand:,.0f}",
                f"{raw:,.0f}",
                f"{ours / raw:.2f}x",
                f"{hand / raw:.2f}x",
                f"{ours / hand:.2f}x",
            ]
        )
        verdicts.append(
            f"{op.label}: the engine's own statement, with only the Python of its values, "
            f"reaches {hand / raw:.2f}x the baseline; ours reaches {ours / raw:.2f}x "
            f"(goal >= {GOAL}x), {ours / hand:.2f}x of the statement by hand."
        )
    header = [
        f"PostgreSQL, {THREADS} threads (median of {timing.runs} passes)",
        "ours ops/s",
        "same statement by hand ops/s",
        "baseline ops/s",
        "ours/baseline",
        "by hand/baseline",
        "ours/by hand",
    ]
    title = "The PostgreSQL writes' floor: the engine's statements by hand (alternating passes)"
    return render_table(title, header, rows) + "\n\n" + "\n".join(verdicts)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "postgres floor")
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
