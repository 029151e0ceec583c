"""Following the PostgreSQL storage log under concurrent writers whose commits are held open.

Sequence ids are taken at insert and commits land in any order, so a
follower that kept "the highest id seen" would pass an event still to
commit. These tests hold writers' transactions open while later writers
commit, and check the follower neither passes nor loses the held events.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import psycopg
import pytest
from eventsourcing.persistence import Tracking

from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.infrastructure.log import RebuildTimeoutError
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns
from nenjim.infrastructure.persistence.storage_log import StorageLog
from nenjim.infrastructure.storage.follow.log import START
from nenjim.infrastructure.tracking import follow as follower
from nenjim.infrastructure.tracking.projections import ProjectionTable, projection_recorder


@pytest.fixture
def persistence(postgres_schema_url: str) -> Iterator[Persistence]:
    opened = Persistence.open(postgres_schema_url)
    yield opened
    opened.close()


def committed_ids(url: str) -> list[int]:
    """Every committed ``notification_id``, read outside the follower."""
    schema = url.split("schema=")[1].split("&", maxsplit=1)[0]
    with psycopg.connect(url.split("?", maxsplit=1)[0]) as connection:
        rows = connection.execute(
            f'SELECT notification_id FROM "{schema}".storage_events ORDER BY 1'
        ).fetchall()
    return [int(row[0]) for row in rows]


def test_the_follower_waits_for_a_held_commit_and_then_delivers_it(
    persistence: Persistence, postgres_schema_url: str
) -> None:
    held_root = persistence.agents.create(AgentRoot.create("held", definition_id="d"))
    later_root = persistence.agents.create(AgentRoot.create("later", definition_id="d"))
    runs = AgentRuns(persistence.backend)
    runs.sync()
    inserted, release = threading.Event(), threading.Event()

    def hold() -> None:
        with persistence.transaction() as tx:
            tx.executions.create_active(AgentExecution.start("h", agent_id="held", base=held_root))
            inserted.set()
            assert release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inserted.wait(30)
        later = persistence.executions.create_active(
            AgentExecution.start("l0", agent_id="later", base=later_root)
        )
        persistence.executions.save(
            "l0", expected_revision=0, execution=later.evolve(status="completed")
        )
        runs.catch_up()
        # The later writer's events are committed with ids above the held one's,
        # yet the follower delivered neither: it may not pass the held transaction.
        assert runs.run("h") is None
        assert runs.run("l0") is None
        assert runs.pending()
        assert runs.position() == 2  # the two roots: nothing at or after the held event
    finally:
        release.set()
        holder.join()
    runs.sync()
    assert [(run.execution_id, run.revisions) for run in runs.timeline()] == [("h", 1), ("l0", 2)]


EVENT_IDS = ProjectionTable(
    "test-event-ids", "event_ids", (("position", "integer"), ("notification_id", "integer"))
)
"""A projection recording each applied event's id once, at its position in log order."""


def test_eight_writers_with_random_held_commits_lose_and_repeat_nothing(
    persistence: Persistence, postgres_schema_url: str
) -> None:
    roots = [
        persistence.agents.create(AgentRoot.create(f"w{index}", definition_id="d"))
        for index in range(8)
    ]
    log = StorageLog(persistence.backend)
    store = projection_recorder(persistence.backend)
    resume, position = START, 0
    done = threading.Event()
    errors: list[BaseException] = []

    def step() -> int:
        nonlocal resume, position
        events = log.read_after(resume, 5)
        if events:
            first = position
            rows = [
                (first + i, event.position.notification_id) for i, event in enumerate(events, 1)
            ]
            position += len(events)
            resume = events[-1].position
            assert store.write(EVENT_IDS, lambda after: rows, Tracking(EVENT_IDS.name, position))
        return len(events)

    def write(index: int) -> None:
        chance = random.Random(index)
        try:
            for number in range(12):
                with persistence.transaction() as tx:
                    started = tx.executions.create_active(
                        AgentExecution.start(
                            f"w{index}-{number}", agent_id=f"w{index}", base=roots[index]
                        )
                    )
                    done.wait(chance.choice((0, 0, 0.001, 0.02)))
                    tx.executions.save(
                        started.execution_id,
                        expected_revision=0,
                        execution=started.evolve(status="completed"),
                    )
        except BaseException as error:  # reported below, never dropped
            errors.append(error)

    writers = [threading.Thread(target=write, args=(index,)) for index in range(8)]
    for writer in writers:
        writer.start()
    while any(writer.is_alive() for writer in writers):
        step()
    for writer in writers:
        writer.join()
    assert not errors
    while step() or position < len(committed_ids(postgres_schema_url)):
        pass
    persisted = store.load(EVENT_IDS)
    assert [row[0] for row in persisted.rows] == list(range(1, position + 1))
    assert sorted(int(row[1] or 0) for row in persisted.rows) == committed_ids(postgres_schema_url)
    assert log.position_at(position) == resume


def test_a_commit_wakes_a_listening_follower_and_a_rollback_does_not(
    persistence: Persistence,
) -> None:
    root = persistence.agents.create(AgentRoot.create("a1", definition_id="d"))
    stop = threading.Event()
    wakeup = follower.wakeup_for(persistence.backend, stop)  # listens from here on
    woken = threading.Event()

    def sleep() -> None:
        wakeup.wait(600)  # far longer than the joins below
        woken.set()

    def roll_back() -> None:
        with persistence.transaction() as tx:
            tx.executions.create_active(AgentExecution.start("r0", agent_id="a1", base=root))
            raise RuntimeError("roll back")

    sleeper = threading.Thread(target=sleep)
    sleeper.start()
    try:
        with pytest.raises(RuntimeError):
            roll_back()
        assert not woken.wait(1)  # no notification: the transaction never committed
        persistence.executions.create_active(AgentExecution.start("r1", agent_id="a1", base=root))
        sleeper.join(120)
        assert woken.is_set()
    finally:
        stop.set()
        sleeper.join(5)
        wakeup.close()


def _older_transaction(url: str) -> psycopg.Connection[tuple[object, ...]]:
    """A connection holding open a transaction that has taken an id (it wrote nothing here:
    any transaction on the server holds the bound back)."""
    connection = psycopg.connect(url.split("?", maxsplit=1)[0])
    connection.execute("SELECT pg_current_xact_id()")
    return connection


def test_a_rebuild_covers_the_events_committed_before_it_behind_an_older_transaction(
    persistence: Persistence, postgres_schema_url: str
) -> None:
    older = _older_transaction(postgres_schema_url)
    root = persistence.agents.create(AgentRoot.create("a1", definition_id="d"))
    persistence.executions.create_active(AgentExecution.start("r1", agent_id="a1", base=root))
    tasks: list[str] = []

    def progress(task: str, done: int, total: int) -> None:
        tasks.append(task)
        if task.endswith("waiting for older transactions"):
            older.rollback()  # ends it once the rebuild waits for it

    try:
        runs = AgentRuns(persistence.backend)
        assert runs.rebuild(progress) == len(committed_ids(postgres_schema_url))
    finally:
        older.close()
    assert "rebuilding agent-runs: waiting for older transactions" in tasks
    assert [run.execution_id for run in runs.timeline()] == ["r1"]


def test_a_rebuild_that_waits_too_long_leaves_the_served_generation(
    persistence: Persistence, postgres_schema_url: str
) -> None:
    runs = AgentRuns(persistence.backend)
    runs.sync()  # the live generation, empty
    older = _older_transaction(postgres_schema_url)
    root = persistence.agents.create(AgentRoot.create("a1", definition_id="d"))
    persistence.executions.create_active(AgentExecution.start("r1", agent_id="a1", base=root))
    try:
        with pytest.raises(RebuildTimeoutError, match="the served generation is unchanged"):
            AgentRuns(persistence.backend).rebuild(timeout=0.05)
    finally:
        older.close()
    assert runs.timeline() == ()
    assert runs.sync() > 0  # the follower goes on from the served generation's position
    assert [run.execution_id for run in runs.timeline()] == ["r1"]
