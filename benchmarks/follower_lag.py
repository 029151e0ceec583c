"""Followers of the storage log: commit-to-visible lag on PostgreSQL, catch-up rate on SQLite.

Lag: 8 writer threads append Agent runs to one PostgreSQL store (each run is
two events: its insert and its completion, each its own transaction) while
an ``agent-runs`` follower runs in another process (``LISTEN`` wake-ups,
rows and position committed per step). Each writer notes the wall-clock
time right after each commit returns; the follower notes the time right
after the step that applied the event committed. Same machine, same clock:
the difference is the time from commit to visible in the follower's read
model. Median and p99 over every event.

Catch-up: a SQLite store holding Agent runs; the projection is rebuilt from
the start of the log (events/s), next to merely reading and decoding the
same events from the same table (the baseline, same run).

Run: ``python -m benchmarks.follower_lag [--quick]``;
``python -m benchmarks.follower_lag --follow URL FILE COUNT`` is the follower process.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import (
    REPO,
    Options,
    machine_table,
    median_seconds,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
    rate_text,
    ratio_text,
    scratch_dir,
    table,
)
from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns, run_events
from nenjim.infrastructure.storage.follow.log import START, read_after
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.tracking import follow as follower

WRITERS = 8
FOLLOW_TIMEOUT = 300.0  # seconds the follower process may take to see every event
RUNS = 3
BUDGET_SECONDS = 30.0


def _stamp(execution_id: str, revision: int) -> str:
    return f"{execution_id}/{revision}"


class _StampingFollower:
    """Catches the agent-runs model up and stamps each run revision once its batch committed."""

    def __init__(self, runs: AgentRuns) -> None:
        self.runs = runs
        self.seen: dict[str, float] = {}

    def catch_up(self) -> int:
        return self.runs.catch_up(self._stamp)

    def _stamp(self, task: str, done: int, total: int) -> None:
        now = time.time()
        for run in self.runs.timeline():
            for revision in range(run.revisions):
                self.seen.setdefault(_stamp(run.execution_id, revision), now)

    def pending(self) -> bool:
        return self.runs.pending()


def follow_process(url: str, out: Path, count: int) -> None:
    """The follower process: follow until ``count`` run events were applied, write the stamps."""
    persistence = Persistence.open(url)
    stamping = _StampingFollower(AgentRuns(persistence.backend))
    stamping.catch_up()
    stop = threading.Event()
    deadline = time.monotonic() + FOLLOW_TIMEOUT

    def enough(_: int) -> None:
        if len(stamping.seen) >= count or time.monotonic() > deadline:
            stop.set()

    wakeup = follower.wakeup_for(persistence.backend, stop)
    print("ready", flush=True)
    try:
        follower.follow(stamping, wakeup, stop, poll_interval=0.5, on_applied=enough)
    finally:
        wakeup.close()
        persistence.close()
    out.write_text("".join(f"{key} {at!r}\n" for key, at in stamping.seen.items()))


def _lag(options: Options) -> str:
    problem = pg_problem()
    if problem is not None:
        return f"PostgreSQL skipped: {problem}"
    per_writer = 40 if options.quick else 250
    with pg_schema("follow") as schema, scratch_dir() as scratch:
        url = pg_store_url(schema, pool_size=WRITERS, max_overflow=2)
        persistence = Persistence.open(url)
        roots = [
            persistence.agents.create(AgentRoot.create(f"w{i}", definition_id="bench"))
            for i in range(WRITERS)
        ]
        out = scratch / "seen.txt"
        count = WRITERS * per_writer * 2
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.follower_lag",
                "--follow",
                url,
                str(out),
                str(count),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the follower process did not start")
        committed: dict[str, float] = {}
        durations: list[float] = []  # each write's call, transaction included
        errors: list[BaseException] = []

        def write(index: int) -> None:
            try:
                for number in range(per_writer):
                    began = time.time()
                    run = persistence.executions.create_active(
                        AgentExecution.start(
                            f"w{index}-{number}", agent_id=f"w{index}", base=roots[index]
                        )
                    )
                    committed[_stamp(run.execution_id, 0)] = saved = time.time()
                    persistence.executions.save(
                        run.execution_id,
                        expected_revision=0,
                        execution=run.evolve(status="completed"),
                    )
                    committed[_stamp(run.execution_id, 1)] = time.time()
                    durations.extend((saved - began, time.time() - saved))
            except BaseException as error:  # reported below
                errors.append(error)

        started = time.perf_counter()
        threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        writing = time.perf_counter() - started
        child.wait(FOLLOW_TIMEOUT + 30)
        child.stdout.close()
        persistence.close()
        if errors:
            raise errors[0]
        seen = {
            key: float(at) for key, at in (line.split() for line in out.read_text().splitlines())
        }
    lags = sorted(seen[key] - at for key, at in committed.items() if key in seen)
    missing = len(committed) - len(lags)
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    rows = [
        [
            f"{WRITERS} writers, follower in another process",
            f"{len(committed):,}",
            f"{len(committed) / writing:,.0f}",
            f"{statistics.median(lags) * 1000:.1f}",
            f"{p99 * 1000:.1f}",
            f"{max(lags) * 1000:.1f}",
            str(missing),
            f"{statistics.median(durations) * 1000:.1f}",
        ]
    ]
    return table(
        "PostgreSQL: commit to visible in an agent-runs follower",
        [
            "setup",
            "events",
            "events/s written",
            "median ms",
            "p99 ms",
            "max ms",
            "not seen",
            "one write, median ms",
        ],
        rows,
    )


def _catch_up(options: Options) -> str:
    agents, runs_each = (50, 20) if options.quick else (250, 40)
    with scratch_dir() as scratch:
        persistence = Persistence.open(f"sqlite://{scratch / 'runs.db'}")
        for agent in range(agents):
            with persistence.transaction() as tx:
                root = tx.agents.create(AgentRoot.create(f"a{agent}", definition_id="bench"))
                for number in range(runs_each):
                    run = tx.executions.create_active(
                        AgentExecution.start(f"a{agent}-{number}", agent_id=f"a{agent}", base=root)
                    )
                    tx.executions.save(
                        run.execution_id,
                        expected_revision=0,
                        execution=run.evolve(status="completed"),
                    )
        driver = persistence.backend.driver
        assert isinstance(driver, SqlDriver)

        def read_and_decode() -> int:
            count, position = 0, START
            while True:
                with driver.transaction(None) as session:
                    page = read_after(session, position, 1000)
                if not page:
                    return count
                run_events(page)
                count, position = count + len(page), page[-1].position

        events = read_and_decode()
        model = AgentRuns(persistence.backend)
        model.catch_up()
        reading = statistics.median(median_seconds(read_and_decode, RUNS, BUDGET_SECONDS))
        rebuilding = statistics.median(median_seconds(model.rebuild, RUNS, BUDGET_SECONDS))
        persistence.close()
    return table(
        f"SQLite: agent-runs catch-up from the start of the log "
        f"({events:,} events, median of {RUNS})",
        ["what", "seconds", "events/s", "vs read + decode"],
        [
            [
                "read + decode the events (baseline)",
                f"{reading:.3f}",
                rate_text(events / reading),
                "1.00x",
            ],
            [
                "**rebuild** (fold, write rows + position per 1,000 events, swap)",
                f"{rebuilding:.3f}",
                rate_text(events / rebuilding),
                ratio_text(reading / rebuilding),
            ],
        ],
    )


def run(options: Options) -> str:
    """Both tables."""
    return _lag(options) + "\n\n" + _catch_up(options)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--follow"]:
        follow_process(args[1], Path(args[2]), int(args[3]))
        return
    options = parse_options(args, "Followers: lag under 8 PostgreSQL writers, catch-up rate")
    print(machine_table(), end="\n\n")
    print(run(options))


if __name__ == "__main__":
    main()
