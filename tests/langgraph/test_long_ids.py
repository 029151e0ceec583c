"""Any thread id and namespace LangGraph's savers take: ids whose storage keys would pass the
store's 512-byte limit are stored under a digest, with the full ids kept in the rows."""

from __future__ import annotations

import operator
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from nenjim.cli import main
from nenjim.infrastructure.langgraph.catalog import CHECKPOINTS
from nenjim.langgraph import CheckpointPurgedError, NenjimSaver


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _asking() -> Any:
    """A graph whose one node asks a question (interrupts) and records the answer."""

    def ask(state: State) -> dict[str, Any]:
        return {"steps": [f"answer:{interrupt('go?')}"]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder


def _nested(depth: int, saver: NenjimSaver) -> Any:
    """The asking graph inside ``depth`` levels of subgraphs (each a node of its parent)."""
    builder = _asking()
    for level in range(depth):
        inner = builder.compile()
        builder = StateGraph(State)
        builder.add_node(f"level_{level}_{'n' * 20}", inner)
        builder.add_edge(START, f"level_{level}_{'n' * 20}")
        builder.add_edge(f"level_{level}_{'n' * 20}", END)
    return builder.compile(checkpointer=saver)


def _round_trip(saver: NenjimSaver, graph: Any, thread_id: str) -> None:
    config = {"configurable": {"thread_id": thread_id}}
    asked = graph.invoke({"steps": []}, config)
    assert asked["__interrupt__"][0].value == "go?"
    done = graph.invoke(Command(resume="yes"), config)
    assert done["steps"] == ["answer:yes"]
    tuples = list(saver.list(config))
    assert tuples
    assert {t.config["configurable"]["thread_id"] for t in tuples} == {thread_id}
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in tuples}
    assert graph.get_state(config).values["steps"] == ["answer:yes"]
    listed = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    assert thread_id in listed
    for ns in namespaces:
        scoped = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        newest = saver.get_tuple(scoped)
        assert newest is not None
        assert newest.config["configurable"] == {
            **scoped["configurable"],
            **newest.config["configurable"],
        }
    other = f"{thread_id}-copy"
    saver.copy_thread(thread_id, other)
    assert len(list(saver.list({"configurable": {"thread_id": other}}))) == len(tuples)
    saver.prune([thread_id])
    assert len(list(saver.list(config))) == len(namespaces)
    before_delete = datetime.now(UTC)
    saver.delete_thread(thread_id)
    assert list(saver.list(config)) == []
    with pytest.raises(CheckpointPurgedError):
        saver.as_of(config, before_delete)
    assert saver.as_of({"configurable": {"thread_id": other}}, datetime.now(UTC)) is not None
    assert graph.get_state({"configurable": {"thread_id": other}}).values["steps"] == ["answer:yes"]


@pytest.mark.parametrize(
    ("thread_id", "depth"),
    [
        pytest.param("t" * 400, 1, id="400-characters-in-a-subgraph"),
        pytest.param("线" * 100, 0, id="100-chinese-characters"),
        pytest.param("中" * 1000, 2, id="1000-chinese-characters-in-subgraphs"),
        pytest.param(str(uuid.UUID(int=42)), 8, id="uuid-in-subgraphs-8-deep"),
    ],
)
def test_any_thread_id_and_namespace_work(store_url: str, thread_id: str, depth: int) -> None:
    with NenjimSaver.from_conn_string(store_url) as saver:
        graph = _nested(depth, saver)
        _round_trip(saver, graph, thread_id)
        if depth:
            namespaces = {
                t.config["configurable"]["checkpoint_ns"]
                for t in saver.list({"configurable": {"thread_id": f"{thread_id}-copy"}})
            }
            assert max(ns.count("|") for ns in namespaces) == depth - 1
    if store_url != "memory:":
        assert main(["storage", "audit", "--store", store_url]) == 0


def test_ids_that_fit_keep_their_keys(store_url: str) -> None:
    """Stores written before digests read as before: a key that fits is the ids as JSON."""
    with NenjimSaver.from_conn_string(store_url) as saver:
        _round_trip(saver, _nested(1, saver), "short")
        saver.put(
            {"configurable": {"thread_id": "plain", "checkpoint_ns": ""}},
            {"v": 4, "id": "1", "ts": "", "channel_values": {}, "channel_versions": {}},  # type: ignore[typeddict-item]
            {},
            {},
        )
        with saver.log.reading() as view:
            assert view.records(CHECKPOINTS).read('["plain","","1"]') is not None
