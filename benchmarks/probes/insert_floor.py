"""The floor under the Storage SPI's SQLite record insert at 1 thread: its own statements, by hand.

Three writers insert one record each per transaction, one operation at a
time in turn (ours, then by hand, then the baseline), so a shared disk whose
``fsync`` time drifts by several times within a second slows all three alike:

- *ours*: ``Records.insert`` on an ``agent.executions`` record guarded by its
  owner's root, as in :mod:`benchmarks.storage`;
- *by hand*: the same transaction the engine runs, sent with ``sqlite3`` on a
  file the engine created (its tables and the resource's indexes): ``BEGIN
  IMMEDIATE``, the engine's own row ``INSERT`` and its log event's ``INSERT``
  (which finds the anchor), ``COMMIT``. Its Python is only what the values of an insert
  cannot do without, with the standard library: the key, its log stream id
  (``uuid.uuid5``), the time, and the event's JSON spliced from the parts that
  every insert of the writer shares (made once, as the payload's JSON is). No
  validation, no layers;
- *baseline*: the hand-written insert of :mod:`benchmarks.storage_raw` (one row,
  one index, no anchor, no log).

The by-hand writer is a floor for the storage format: what the goal's ratio can
reach with the rows and indexes an insert writes, whatever the engine's Python.

Run: ``python -m benchmarks.probes.insert_floor [--quick]`` (also part of
``benchmarks.run_all``).
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from datetime import UTC, datetime
from json.encoder import encode_basestring
from pathlib import Path

from benchmarks.common import Options, parse_options, scratch_dir, table
from benchmarks.storage import OPS, RECORD, _sqlite_store, spi_steps
from benchmarks.storage_raw import sqlite_connect
from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.sqlite.storage import SQLiteBackend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.records import _INSERT_ROW as INSERT_ROW
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS_ID, ROOTS_ID

GOAL = 0.6
ROUNDS = 5
PER_ROUND = 1_000
QUICK_PER_ROUND = 100
WARMUP = 200

Step = Callable[[], object]


class InsertValues:
    """The values of a by-hand insert of a new inactive ``agent.executions`` record of
    ``root``: what every insert of a writer shares is made once; the key, the time and
    the log stream id are made per insert, with the standard library."""

    def __init__(self, root: str) -> None:
        record = RECORD
        self.attributes = json.dumps({"owner": root, "active": False}, separators=(",", ":"))
        self.envelope = (record.record_type, record.format_version, record.payload_json)
        self._head = f'{{"resource":{encode_basestring(EXECUTIONS_ID)},"key":'
        self._attributes = f',"revision":0,"attributes":{self.attributes},"recorded_at":"'
        self._tail = (
            f'","record_type":{encode_basestring(record.record_type)},'
            f'"format_version":{encode_basestring(record.format_version)},'
            f'"payload":{record.payload_json}}}'
        )

    @staticmethod
    def originator(key: str) -> uuid.UUID:
        """The id of record ``key``'s log stream."""
        return uuid.uuid5(events.NAMESPACE, f"records\0{EXECUTIONS_ID}\0{key}")

    def state(self, key: str) -> bytes:
        """The state of the insert's event, as the engine writes it (UTF-8 JSON)."""
        parts = (
            self._head,
            encode_basestring(key),
            self._attributes,
            datetime.now(UTC).isoformat(),
            self._tail,
        )
        return "".join(parts).encode()


@contextmanager
def by_hand(path: Path, root: str) -> Iterator[Step]:
    """Inserts of new ``agent.executions`` records of ``root`` with the engine's statements."""
    dialect = SQLiteDialect()
    insert_row = INSERT_ROW.format(**dialect.tables)
    anchored_event = dialect.append_event_at_anchored_row
    assert anchored_event is not None  # SQLite's insert finds the anchor in the event's INSERT
    insert_event = anchored_event.format(**dialect.tables)
    counter = itertools.count()
    written = InsertValues(root)
    with closing(sqlite_connect(path)) as connection:

        def insert() -> None:
            key = f"{root}/h{next(counter)}"
            originator = str(written.originator(key))
            row = (EXECUTIONS_ID, key, 0, written.attributes, *written.envelope, originator)
            body = written.state(key)
            connection.execute("BEGIN IMMEDIATE")
            try:
                if connection.execute(insert_row, row).rowcount != 1:
                    raise RuntimeError(f"by-hand insert: {key} taken")
                params = (originator, events.RECORD_INSERTED, body, EXECUTIONS_ID, key)
                if connection.execute(insert_event, (*params, ROOTS_ID, root)).rowcount != 1:
                    raise RuntimeError(f"by-hand insert: anchor {root} missing")
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

        yield insert


def rounds(per_round: int) -> list[dict[str, float]]:
    """µs per insert of each writer, one dict per round; operations interleaved one by one."""
    op = next(o for o in OPS if o.name == "insert")
    with scratch_dir() as directory, ExitStack() as stack:
        store = _sqlite_store(directory)
        assert store.raw is not None
        (ours,) = spi_steps(store.ours(stack), op, 1)
        # The by-hand writer's file: made, and its anchor written, by the engine.
        made = store.ours(stack)
        assert isinstance(made, SQLiteBackend)
        spi_steps(made, op, 1)
        hand = stack.enter_context(by_hand(made.path, "ours-0"))
        (raw,) = store.raw(stack, op, 1)
        writers: dict[str, Step] = {"ours": ours, "by hand": hand, "baseline": raw}
        for writer in writers.values():
            for _ in range(WARMUP):
                writer()
        clock = time.perf_counter
        measured = []
        for _ in range(ROUNDS):
            spent = dict.fromkeys(writers, 0.0)
            for _ in range(per_round):
                for name, writer in writers.items():
                    started = clock()
                    writer()
                    spent[name] += clock() - started
            measured.append({name: 1e6 * seconds / per_round for name, seconds in spent.items()})
        return measured


def run(options: Options) -> str:
    """The floor table: every round, then the median round (by the by-hand ratio)."""
    measured = rounds(QUICK_PER_ROUND if options.quick else PER_ROUND)

    def cells(label: str, us: dict[str, float]) -> list[str]:
        ours, hand, raw = us["ours"], us["by hand"], us["baseline"]
        return [
            label,
            f"{ours:,.0f}",
            f"{hand:,.0f}",
            f"{raw:,.0f}",
            f"{raw / ours:.2f}x",
            f"{raw / hand:.2f}x",
        ]

    rows = [cells(f"round {n}", us) for n, us in enumerate(measured, 1)]
    floors = [us["baseline"] / us["by hand"] for us in measured]
    median = measured[floors.index(statistics.median_low(floors))]
    rows.append(cells("median round", median))
    floor = median["baseline"] / median["by hand"]
    header = [
        "SQLite insert, 1 thread",
        "ours µs",
        "same statements by hand µs",
        "baseline µs",
        "ours/baseline",
        "by hand/baseline",
    ]
    gap = median["ours"] - median["by hand"]
    verdict = (
        f"In the median round the engine's own statements, with only the Python of their "
        f"values, reach {floor:.2f}x the baseline ({'over' if floor >= GOAL else 'under'} "
        f"the goal of >= {GOAL}x for ours); ours takes {gap:,.0f} µs an insert more than "
        f"they do: the engine's Python."
    )
    title = "The SQLite insert's floor: the engine's statements by hand (interleaved)"
    return table(title, header, rows) + "\n\n" + verdict


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "insert floor")
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
