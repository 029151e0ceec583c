"""A thread is a tree of checkpoints: branches from older checkpoints, as LangGraph's savers
make them, and the race rule that still gives one winner to writers racing from one parent."""

from __future__ import annotations

import operator
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Annotated, Any, TypedDict

import pytest
from checkpoints import checkpoint
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from threads import run_together

from nenjim.langgraph import CheckpointConflictError, NenjimSaver


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]


def _chat_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def reply(state: Chat) -> dict[str, Any]:
        return {"messages": [f"ai:{state['messages'][-1]}"]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


class Approval(TypedDict):
    steps: Annotated[list[str], operator.add]


def _approval_graph(
    saver: BaseCheckpointSaver[Any], gate: Callable[[], None] = lambda: None
) -> Any:
    """plan -> review (interrupts) -> act; ``gate`` runs in review once it has its answer."""

    def plan(state: Approval) -> dict[str, Any]:
        return {"steps": ["plan"]}

    def review(state: Approval) -> dict[str, Any]:
        answer = interrupt("approve?")
        gate()
        return {"steps": [f"review:{answer}"]}

    def act(state: Approval) -> dict[str, Any]:
        return {"steps": ["act"]}

    builder = StateGraph(Approval)
    builder.add_node("plan", plan)
    builder.add_node("review", review)
    builder.add_node("act", act)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review")
    builder.add_edge("review", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=saver)


def _shape(graph: Any, thread: str) -> list[tuple[Any, ...]]:
    """The thread's history without its ids: values, source, step, next and the parent's
    place in the history (newest first)."""
    history = list(graph.get_state_history({"configurable": {"thread_id": thread}}))
    place = {state.config["configurable"]["checkpoint_id"]: i for i, state in enumerate(history)}
    return [
        (
            state.values,
            state.metadata["source"],
            state.metadata["step"],
            state.next,
            None
            if state.parent_config is None
            else place[state.parent_config["configurable"]["checkpoint_id"]],
        )
        for state in history
    ]


def _at(history: list[Any], messages: list[str], source: str) -> Any:
    """The config of the one checkpoint with these messages and source."""
    (found,) = [
        state.config
        for state in history
        if state.values.get("messages") == messages and state.metadata["source"] == source
    ]
    return found


def _chat_scenario(saver: BaseCheckpointSaver[Any]) -> list[tuple[Any, ...]]:
    """Three turns; then the second message is edited and regenerated (new input on an older
    checkpoint), the third edited too, and the first answer replaced by ``update_state`` on an
    older checkpoint and the conversation continued from there."""
    graph = _chat_graph(saver)
    thread = {"configurable": {"thread_id": "chat"}}
    for text in ("hi", "how are you", "bye"):
        graph.invoke({"messages": [text]}, thread)
    history = list(graph.get_state_history(thread))
    after_first_turn = _at(history, ["hi", "ai:hi"], "loop")
    after_second_turn = _at(history, ["hi", "ai:hi", "how are you", "ai:how are you"], "loop")
    edited = graph.invoke({"messages": ["what is new"]}, after_first_turn)
    assert edited["messages"] == ["hi", "ai:hi", "what is new", "ai:what is new"]
    graph.invoke({"messages": ["see you"]}, after_second_turn)
    before_first_answer = _at(history, ["hi"], "loop")  # "hi" read, not answered yet
    updated = graph.update_state(before_first_answer, {"messages": ["hello"]}, as_node="reply")
    graph.invoke({"messages": ["and then"]}, updated)
    assert graph.get_state(thread).values["messages"] == [
        "hi",
        "hello",
        "and then",
        "ai:and then",
    ]
    return _shape(graph, "chat")


def _approval_scenario(saver: BaseCheckpointSaver[Any]) -> list[tuple[Any, ...]]:
    """An approval answered ``yes`` and finished; then answered again on the interrupted
    checkpoint (``Command(resume=...)`` on an older checkpoint)."""
    graph = _approval_graph(saver)
    thread = {"configurable": {"thread_id": "approval"}}
    graph.invoke({"steps": []}, thread)
    interrupted = graph.get_state(thread).config
    assert graph.invoke(Command(resume="yes"), thread)["steps"][-1] == "act"
    graph.invoke(Command(resume="no"), interrupted)
    return _shape(graph, "approval")


@pytest.fixture
def reference(tmp_path: Any) -> Iterator[SqliteSaver]:
    """LangGraph's own ``SqliteSaver``."""
    with sqlite3.connect(tmp_path / "reference.db", check_same_thread=False) as conn:
        yield SqliteSaver(conn)


@pytest.mark.parametrize("scenario", [_chat_scenario, _approval_scenario])
def test_new_input_resume_and_updates_on_older_checkpoints_branch_as_in_sqlite_saver(
    store_url: str, reference: SqliteSaver, scenario: Callable[..., list[tuple[Any, ...]]]
) -> None:
    expected = scenario(reference)
    with NenjimSaver.from_conn_string(store_url) as saver:
        assert scenario(saver) == expected
    sources = [source for _, source, _, _, _ in expected]
    assert sources.count(None) == 0
    roots = [parent for *_, parent in expected if parent is None]
    assert len(roots) == 1  # one tree


def _put(saver: NenjimSaver, parent: str | None, source: str, checkpoint: Checkpoint) -> str:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if parent is not None:
        configurable["checkpoint_id"] = parent
    metadata: CheckpointMetadata = {"source": source, "step": 0, "parents": {}}  # type: ignore[typeddict-item]
    stored = saver.put({"configurable": configurable}, checkpoint, metadata, {})
    checkpoint_id: str = stored["configurable"]["checkpoint_id"]
    return checkpoint_id


@pytest.mark.parametrize("parent_is_newest", [True, False])
def test_writers_racing_from_one_parent_one_wins(store_url: str, parent_is_newest: bool) -> None:
    """Steps racing from the newest checkpoint, or branching from an older one at once: the
    first stored wins, the others are refused and write nothing."""
    racers = 4
    with NenjimSaver.from_conn_string(store_url) as first:
        root = _put(first, None, "input", checkpoint())
        older = _put(first, root, "loop", checkpoint())
        _put(first, older, "loop", checkpoint())
        newest = _put(first, root, "input", checkpoint())  # a branch from the root
        parent = newest if parent_is_newest else older
        savers = [first]
        with (
            nullcontext(None) if store_url == "memory:" else NenjimSaver.from_conn_string(store_url)
        ) as second:
            savers.append(second or first)

            def step(index: int) -> str:
                try:
                    return _put(savers[index % 2], parent, "loop", checkpoint())
                except CheckpointConflictError as conflict:
                    return f"conflict: {conflict}"

            outcomes = run_together(step, racers)
        winners = [o for o in outcomes if not o.startswith("conflict")]
        assert len(winners) == 1, outcomes
        assert all("another run advanced the thread" in o for o in outcomes if o not in winners)
        children = [
            t.checkpoint["id"]
            for t in first.list({"configurable": {"thread_id": "t"}})
            if t.parent_config is not None
            and t.parent_config["configurable"]["checkpoint_id"] == parent
        ]
        assert winners[0] in children
        assert len(children) == (1 if parent_is_newest else 2)


class _GatedSaver(NenjimSaver):
    """Holds the puts of one step until as many arrive as the gate waits for: each writer
    has made its checkpoint (LangGraph makes it just before its put) before any is stored."""

    gate: threading.Barrier | None = None
    gated_step = 2

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self.gate is not None and metadata.get("step") == self.gated_step:
            self.gate.wait()
        return super().put(config, checkpoint, metadata, new_versions)


def test_two_graphs_resuming_one_interrupt_at_once_one_wins(store_url: str) -> None:
    """Two runs answer the same question at the same time: both read the interrupted
    checkpoint as the newest, run ``review`` and make their step; one stores it, the other is
    refused, however far the winner has gone on meanwhile (with ``durability="sync"``; see
    the race rule in docs/langgraph.md for LangGraph's default)."""
    with _GatedSaver.from_conn_string(store_url) as first:
        _approval_graph(first).invoke({"steps": []}, {"configurable": {"thread_id": "a"}})
        with (
            nullcontext(None) if store_url == "memory:" else _GatedSaver.from_conn_string(store_url)
        ) as second:
            gate = threading.Barrier(2, timeout=30)
            first.gate = gate
            if second is not None:
                second.gate = gate
            graphs = [_approval_graph(first), _approval_graph(second or first)]

            def resume(index: int) -> str:
                try:
                    done = graphs[index].invoke(
                        Command(resume=f"answer-{index}"),
                        {"configurable": {"thread_id": "a"}},
                        durability="sync",  # a step is stored before the run goes on
                    )
                    return str(done["steps"])
                except CheckpointConflictError as conflict:
                    return f"conflict: {conflict}"

            outcomes = run_together(resume, 2)
            first.gate = None
        winners = [o for o in outcomes if not o.startswith("conflict")]
        assert len(winners) == 1, outcomes
        state = _approval_graph(first).get_state({"configurable": {"thread_id": "a"}})
        assert str(state.values["steps"]) == winners[0]
        assert len(list(first.list({"configurable": {"thread_id": "a"}}))) == 5
