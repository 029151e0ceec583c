"""``get_delta_channel_history``: what a LangGraph ``DeltaChannel`` is rebuilt from.

The first tests are LangGraph's ``delta_channel_history`` and
``delta_channel_reconstruction`` conformance capabilities, which its released
conformance suite (0.0.2) does not carry yet: ported from LangGraph's
repository (``libs/checkpoint-conformance/langgraph/checkpoint/conformance/
spec/test_delta_channel_history.py`` and ``test_delta_channel_reconstruction.py``,
with the chain builder of ``spec/_delta_fixtures.py``), rewritten on the
sync methods. Every test runs on ``NenjimSaver`` over memory, SQLite and
PostgreSQL and on LangGraph's own ``SqliteSaver`` and ``PostgresSaver``, so
what it expects is what the reference savers do; each answer is also held
against ``BaseCheckpointSaver``'s default walk (``get_tuple`` and
``parent_config`` one checkpoint at a time) on the same saver.

Then what the capability leaves out: branches (a fork's history is its own
branch), the newest checkpoint when the config names none, a checkpoint
that is not stored, parents stored after their child (a run delete appends
the kept checkpoints again), the async method, and a real graph on a
``DeltaChannel`` (run, interrupt, resume, fork from an older checkpoint)
whose every state equals the one ``SqliteSaver`` gives.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from postgres_schemas import scratch_schema
from psycopg.conninfo import make_conninfo

from nenjim.langgraph import AsyncNenjimSaver, NenjimSaver

Saver = BaseCheckpointSaver[Any]
NENJIM = ("nenjim-memory", "nenjim-sqlite", "nenjim-postgresql")
REFERENCES = ("ref-sqlite", "ref-postgres")

# Task ids below and above every uuid4, so that task id order disagrees with task path order.
LOWEST_TASK = "00000000-0000-0000-0000-000000000000"
HIGHEST_TASK = "ffffffff-ffff-ffff-ffff-ffffffffffff"


@pytest.fixture
def open_saver(
    nenjim_new_store: Callable[[str], str],
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[Callable[[str], Saver]]:
    """``open_saver(impl)``: a fresh saver of ``impl``, closed after the test."""
    with ExitStack() as stack:

        def new(impl: str) -> Saver:
            if impl in NENJIM:
                url = nenjim_new_store(impl.removeprefix("nenjim-"))
                return stack.enter_context(NenjimSaver.from_conn_string(url))
            if impl == "ref-sqlite":
                path = tmp_path_factory.mktemp("ref-saver") / "saver.db"
                return stack.enter_context(SqliteSaver.from_conn_string(str(path)))
            url = request.getfixturevalue("postgres_url")
            schema = scratch_schema(stack, url)
            conninfo = make_conninfo(url, options=f"-csearch_path={schema}")
            saver = stack.enter_context(PostgresSaver.from_conn_string(conninfo))
            saver.setup()
            return saver

        yield new


@pytest.fixture(params=NENJIM + REFERENCES)
def saver(request: pytest.FixtureRequest, open_saver: Callable[[str], Saver]) -> Saver:
    """A fresh saver of each implementation in turn."""
    return open_saver(str(request.param))


@pytest.fixture(params=NENJIM)
def nenjim_saver(request: pytest.FixtureRequest, open_saver: Callable[[str], Saver]) -> Saver:
    """A fresh ``NenjimSaver`` on each kind of store in turn."""
    return open_saver(str(request.param))


# --------------------------------------------------------------------------- building threads


def _put(
    saver: Saver,
    thread: str,
    parent: RunnableConfig | None,
    values: dict[str, Any],
    *,
    step: int,
    source: str = "loop",
    run_id: str | None = None,
) -> RunnableConfig:
    """Store a checkpoint holding ``values`` (each at a new version) after ``parent``."""
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent is not None:
        configurable["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    versions = dict.fromkeys(values, step + 1)
    checkpoint = Checkpoint(
        v=1,
        id=str(uuid6(clock_seq=-1)),
        ts="",
        channel_values=dict(values),
        channel_versions=dict(versions),
        versions_seen={},
        updated_channels=None,
    )
    metadata: dict[str, Any] = {"source": source, "step": step, "parents": {}}
    if run_id is not None:
        metadata["run_id"] = run_id
    return saver.put(
        {"configurable": configurable}, checkpoint, CheckpointMetadata(**metadata), versions
    )


def _chain(
    saver: Saver,
    *,
    steps: int,
    snapshots: Sequence[int] = (0,),
    channel: str = "ch",
    value: Callable[[int], Any] = lambda step: step,
    thread: str | None = None,
) -> list[RunnableConfig]:
    """A line of ``steps`` checkpoints: a snapshot of ``value(step)`` at the steps in
    ``snapshots``, a write of ``value(step)`` at every other step. Oldest first."""
    thread = thread or str(uuid.uuid4())
    configs: list[RunnableConfig] = []
    for step in range(steps):
        held = {channel: _DeltaSnapshot(value(step))} if step in snapshots else {}
        stored = _put(saver, thread, configs[-1] if configs else None, held, step=step)
        configs.append(stored)
        if step not in snapshots:
            saver.put_writes(stored, [(channel, value(step))], str(uuid.uuid4()))
    return configs


def _history(saver: Saver, config: RunnableConfig, channels: Sequence[str]) -> Any:
    """The saver's answer, checked against the default walk over ``get_tuple``."""
    found = saver.get_delta_channel_history(config=config, channels=channels)
    assert found == BaseCheckpointSaver.get_delta_channel_history(
        saver, config=config, channels=channels
    )
    return found


def _written(history: Any) -> list[Any]:
    return [value for _, _, value in history["writes"]]


def _seed(history: Any) -> Any:
    seed = history["seed"]
    return seed.value if isinstance(seed, _DeltaSnapshot) else seed


# --------------------------------------------------------------------------- the capability


def test_writes_come_oldest_first(saver: Saver) -> None:
    # Snapshot at step 0, writes at 1..4; the head's own write (4) is pending.
    head = _chain(saver, steps=5)[-1]
    history = _history(saver, head, ["ch"])["ch"]
    assert _written(history) == [1, 2, 3]
    assert _seed(history) == 0


def test_the_seed_is_the_nearest_snapshot(saver: Saver) -> None:
    head = _chain(saver, steps=6, snapshots=[0, 3])[-1]
    history = _history(saver, head, ["ch"])["ch"]
    assert _seed(history) == 3
    assert _written(history) == [4]


def test_the_targets_own_writes_are_left_out(saver: Saver) -> None:
    head = _chain(saver, steps=3)[-1]
    saver.put_writes(head, [("ch", "pending")], str(uuid.uuid4()))
    assert _written(_history(saver, head, ["ch"])["ch"]) == [1]


def test_each_channel_stops_at_its_own_seed(saver: Saver) -> None:
    thread, configs = str(uuid.uuid4()), []
    for step in range(5):
        held: dict[str, Any] = {}
        if step == 1:
            held["a"] = _DeltaSnapshot("snapshot a")
        if step == 3:
            held["b"] = _DeltaSnapshot("snapshot b")
        configs.append(_put(saver, thread, configs[-1] if configs else None, held, step=step))
        saver.put_writes(configs[-1], [("a", step), ("b", step)], str(uuid.uuid4()))
    found = _history(saver, configs[-1], ["a", "b"])
    assert (_seed(found["a"]), _written(found["a"])) == ("snapshot a", [1, 2, 3])
    assert (_seed(found["b"]), _written(found["b"])) == ("snapshot b", [3])


def test_no_channels_give_an_empty_answer(saver: Saver) -> None:
    assert _history(saver, _chain(saver, steps=3)[-1], []) == {}


def test_a_walk_to_the_root_without_a_value_has_no_seed(saver: Saver) -> None:
    history = _history(saver, _chain(saver, steps=4, snapshots=[])[-1], ["ch"])["ch"]
    assert "seed" not in history
    assert _written(history) == [0, 1, 2]


def test_a_plain_value_stored_before_the_channel_was_a_delta_is_a_seed(saver: Saver) -> None:
    thread, configs = str(uuid.uuid4()), []
    for step in range(4):
        held = {"ch": [10, 20, 30]} if step == 1 else {}
        configs.append(_put(saver, thread, configs[-1] if configs else None, held, step=step))
        if step != 1:
            saver.put_writes(configs[-1], [("ch", step)], str(uuid.uuid4()))
    history = _history(saver, configs[-1], ["ch"])["ch"]
    assert history["seed"] == [10, 20, 30]
    assert _written(history) == [2]


def test_the_writes_stored_at_the_seed_are_replayed(saver: Saver) -> None:
    # A stored value is the state entering its checkpoint; that checkpoint's writes made
    # its child, so they count. Writes before the seed are in it.
    thread, configs = str(uuid.uuid4()), []
    roles = ["before the seed", "at the seed", "after the seed", "pending at the head"]
    stored_values = {0: [10], 1: [10, 20]}
    for step, role in enumerate(roles):
        held = {"ch": stored_values[step]} if step in stored_values else {}
        configs.append(_put(saver, thread, configs[-1] if configs else None, held, step=step))
        saver.put_writes(configs[-1], [("ch", role)], str(uuid.uuid4()))
    history = _history(saver, configs[-1], ["ch"])["ch"]
    assert history["seed"] == [10, 20]
    assert _written(history) == ["at the seed", "after the seed"]


def test_parallel_tasks_writes_come_in_task_path_order(saver: Saver) -> None:
    configs = _chain(saver, steps=3)
    saver.put_writes(configs[1], [("ch", "second")], LOWEST_TASK, "~pull, 02")
    saver.put_writes(configs[1], [("ch", "first")], HIGHEST_TASK, "~pull, 01")
    assert _written(_history(saver, configs[2], ["ch"])["ch"]) == [1, "first", "second"]


def test_writes_without_a_task_path_come_first(saver: Saver) -> None:
    configs = _chain(saver, steps=3)
    saver.put_writes(configs[1], [("ch", "from a node")], LOWEST_TASK, "~pull, a")
    saver.put_writes(configs[1], [("ch", "from the input")], HIGHEST_TASK)
    assert _written(_history(saver, configs[2], ["ch"])["ch"]) == [
        1,
        "from the input",
        "from a node",
    ]


@pytest.mark.parametrize(
    ("snapshots", "steps", "rebuilt"),
    [([0], 5, [0, 1, 2, 3]), ([0, 3], 6, [3, 4]), ([], 4, [0, 1, 2])],
    ids=["snapshot-at-the-root", "snapshot-mid-chain", "no-snapshot"],
)
def test_a_list_channel_is_rebuilt_from_its_history(
    saver: Saver, snapshots: list[int], steps: int, rebuilt: list[int]
) -> None:
    head = _chain(saver, steps=steps, snapshots=snapshots, value=lambda step: [step])[-1]
    history = _history(saver, head, ["ch"])["ch"]
    value = list(_seed(history)) if "seed" in history else []
    for written in _written(history):
        value += written
    assert value == rebuilt


# --------------------------------------------------------------------------- beyond it


def test_a_fork_reads_its_own_branch_not_the_checkpoints_stored_between(saver: Saver) -> None:
    main = _chain(saver, steps=5, value=lambda step: f"main {step}")
    thread = main[0]["configurable"]["thread_id"]
    fork = _put(saver, thread, main[2], {}, step=3, source="fork")
    saver.put_writes(fork, [("ch", "fork 3")], str(uuid.uuid4()))
    head = _put(saver, thread, fork, {}, step=4, source="loop")
    assert _written(_history(saver, head, ["ch"])["ch"]) == ["main 1", "main 2", "fork 3"]
    assert _written(_history(saver, main[-1], ["ch"])["ch"]) == ["main 1", "main 2", "main 3"]


def test_a_config_without_a_checkpoint_id_reads_the_newest(saver: Saver) -> None:
    configs = _chain(saver, steps=4)
    newest = {"configurable": {"thread_id": configs[0]["configurable"]["thread_id"]}}
    assert _history(saver, newest, ["ch"]) == _history(saver, configs[-1], ["ch"])
    assert _written(_history(saver, newest, ["ch"])["ch"]) == [1, 2]


def test_a_checkpoint_not_stored_has_no_history(saver: Saver) -> None:
    configs = _chain(saver, steps=3)
    unknown: RunnableConfig = {
        "configurable": {**configs[0]["configurable"], "checkpoint_id": str(uuid6(clock_seq=-1))}
    }
    assert _history(saver, unknown, ["ch", "other"]) == {
        "ch": {"writes": []},
        "other": {"writes": []},
    }
    no_thread: RunnableConfig = {"configurable": {"thread_id": "never written"}}
    assert _history(saver, no_thread, ["ch"]) == {"ch": {"writes": []}}


def test_a_long_thread_is_read_past_the_first_windows(saver: Saver) -> None:
    configs = _chain(saver, steps=120)
    history = _history(saver, configs[-1], ["ch"])["ch"]
    assert _written(history) == list(range(1, 119))


def test_a_fork_from_far_back_skips_the_branch_stored_between(saver: Saver) -> None:
    # The fork's ancestors span the whole main branch in id order: its writes lie between.
    main = _chain(saver, steps=40, value=lambda step: f"main {step}")
    thread = main[0]["configurable"]["thread_id"]
    fork = [_put(saver, thread, main[2], {}, step=3, source="fork")]
    for step in range(4, 7):
        saver.put_writes(fork[-1], [("ch", f"fork {step - 1}")], str(uuid.uuid4()))
        fork.append(_put(saver, thread, fork[-1], {}, step=step))
    assert _written(_history(saver, fork[-1], ["ch"])["ch"]) == [
        "main 1",
        "main 2",
        "fork 3",
        "fork 4",
        "fork 5",
    ]


def test_writes_under_keys_too_long_to_store_are_read(saver: Saver) -> None:
    # A key over 512 bytes is stored as its digest: a task id that long, and a thread id that
    # long (every key of the thread then), still give their writes, in order.
    configs = _chain(saver, steps=4)
    saver.put_writes(configs[1], [("ch", "long task")], "t" * 600, "~pull, 01")
    assert _written(_history(saver, configs[-1], ["ch"])["ch"]) == [1, "long task", 2]
    long_thread = _chain(saver, steps=4, thread="thread " + "x" * 480)
    assert _written(_history(saver, long_thread[-1], ["ch"])["ch"]) == [1, 2]


def test_parents_stored_after_their_child_are_found(nenjim_saver: Saver) -> None:
    # A run delete purges what it removes and appends the checkpoints kept before it again,
    # after their children: the walk then finds the parents by their live rows.
    saver, thread = nenjim_saver, str(uuid.uuid4())
    kept = []
    for step in range(3):
        kept.append(_put(saver, thread, kept[-1] if kept else None, {}, step=step, run_id="kept"))
        saver.put_writes(kept[-1], [("ch", step)], str(uuid.uuid4()))
    side = _put(saver, thread, kept[0], {}, step=1, source="fork", run_id="gone")
    saver.put_writes(side, [("ch", "side")], str(uuid.uuid4()))
    head = _put(saver, thread, kept[-1], {}, step=3, source="fork", run_id="kept")
    before = _history(saver, head, ["ch"])
    saver.delete_for_runs(["gone"])
    assert saver.get_tuple(side) is None
    assert _history(saver, head, ["ch"]) == before
    assert _written(before["ch"]) == [0, 1, 2]


def test_the_async_method_answers_as_the_sync_one(nenjim_new_store: Callable[[str], str]) -> None:
    url = nenjim_new_store("sqlite")

    async def both() -> tuple[Any, Any]:
        async with AsyncNenjimSaver.from_conn_string(url) as saver:
            head = _chain(saver, steps=6, snapshots=[0, 2])[-1]
            found = await saver.aget_delta_channel_history(config=head, channels=["ch"])
            return found, saver.get_delta_channel_history(config=head, channels=["ch"])

    found, sync = asyncio.run(both())
    assert found == sync
    assert _written(found["ch"]) == [3, 4]


# --------------------------------------------------------------------------- a real graph


def _append(state: list[str], batches: Sequence[list[str]]) -> list[str]:
    return state + [message for batch in batches for message in batch]


class Chat(TypedDict):
    messages: Annotated[list[str], DeltaChannel(_append, snapshot_frequency=3)]


def _chat_graph(saver: Saver) -> Any:
    """agent -> review (interrupts for an answer) -> end, every message on a DeltaChannel."""

    def agent(state: Chat) -> dict[str, Any]:
        return {"messages": [f"ai:{state['messages'][-1]}"]}

    def review(state: Chat) -> dict[str, Any]:
        return {"messages": [f"review:{interrupt('approve?')}"]}

    builder = StateGraph(Chat)
    builder.add_node("agent", agent)
    builder.add_node("review", review)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver)


def _conversation(saver: Saver) -> list[Any]:
    """Three turns with an interrupt each, then a fork from the first review, resumed; every
    state of the thread (without ids), newest first."""
    graph = _chat_graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "chat"}}
    for turn in range(3):
        graph.invoke({"messages": [f"user:{turn}"]}, config)
        graph.invoke(Command(resume=f"yes {turn}"), config)
    first_review = next(
        state
        for state in graph.get_state_history(config)
        if state.values.get("messages") == ["user:0", "ai:user:0"] and state.next == ("review",)
    )
    forked = graph.update_state(first_review.config, {"messages": ["user:edited"]})
    graph.invoke(None, forked)
    graph.invoke(Command(resume="forked"), config)
    return [
        (state.values, state.next, state.metadata["source"], state.metadata["step"])
        for state in graph.get_state_history(config)
    ]


def test_a_graph_on_a_delta_channel_reads_as_on_sqlite_saver(
    nenjim_saver: Saver, open_saver: Callable[[str], Saver]
) -> None:
    ours = _conversation(nenjim_saver)
    assert ours == _conversation(open_saver("ref-sqlite"))
    assert ours[0][0]["messages"] == ["user:0", "ai:user:0", "user:edited", "review:forked"]
    assert ours[1][0]["messages"] == ["user:0", "ai:user:0", "user:edited"]
    assert len(ours[2][0]["messages"]) == 9  # the third turn, where the fork left the thread
