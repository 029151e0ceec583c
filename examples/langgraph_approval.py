"""A LangGraph approval flow on nenjim's log: plan, ask a human (interrupt), act.

Each command is one process; the thread lives in the store between them::

    python examples/langgraph_approval.py --store sqlite:approval.db start
    python examples/langgraph_approval.py --store sqlite:approval.db resume yes
    python examples/langgraph_approval.py --store sqlite:approval.db history
    python examples/langgraph_approval.py --store sqlite:approval.db fork no

- ``start`` plans and stops at the review, asking its question;
- ``resume ANSWER`` answers it and runs the graph to its end;
- ``continue`` runs a thread interrupted by a crash from its last checkpoint;
- ``history`` prints every state of the thread, newest first;
- ``fork ANSWER`` goes back to the review, asks again and answers ``ANSWER``.

Every step's checkpoint is committed before the next step starts
(``durability="sync"``), so a process killed at any point resumes from the
last step it finished. Each command prints one JSON object per line.
``NENJIM_EXAMPLE_STALL=act`` makes the ``act`` node print ``{"stalled":
"act"}`` and wait, for tests that kill the process there.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sys
import time
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from nenjim.langgraph import NenjimSaver


class State(TypedDict):
    """The thread's state: a topic, the steps taken, and the human's verdict."""

    topic: str
    steps: Annotated[list[str], operator.add]
    approved: bool


def plan(state: State) -> dict[str, Any]:
    """Plan the work."""
    return {"steps": [f"plan:{state['topic']}"]}


def review(state: State) -> dict[str, Any]:
    """Ask a human; the run stops here until ``Command(resume=answer)``."""
    answer = interrupt({"question": f"approve {state['topic']}?"})
    return {"approved": answer == "yes", "steps": [f"review:{answer}"]}


def act(state: State) -> dict[str, Any]:
    """Act on the verdict."""
    if os.environ.get("NENJIM_EXAMPLE_STALL") == "act":
        print(json.dumps({"stalled": "act"}), flush=True)
        time.sleep(3600)
    return {"steps": ["act" if state["approved"] else "skip"]}


def build(saver: NenjimSaver) -> Any:
    """The compiled graph: plan -> review -> act."""
    graph = StateGraph(State)
    graph.add_node("plan", plan)
    graph.add_node("review", review)
    graph.add_node("act", act)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "review")
    graph.add_edge("review", "act")
    graph.add_edge("act", END)
    return graph.compile(checkpointer=saver)


def _show(result: dict[str, Any]) -> dict[str, Any]:
    shown = {key: value for key, value in result.items() if key != "__interrupt__"}
    if "__interrupt__" in result:
        shown["interrupt"] = [item.value for item in result["__interrupt__"]]
    return shown


def main(argv: list[str] | None = None) -> int:
    """Run one command of the approval flow."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="sqlite:approval.db", help="store URL")
    parser.add_argument("--thread", default="approval-1", help="LangGraph thread id")
    parser.add_argument("command", choices=["start", "resume", "continue", "history", "fork"])
    parser.add_argument("answer", nargs="?", default="yes")
    args = parser.parse_args(argv)
    config: Any = {"configurable": {"thread_id": args.thread}}
    with NenjimSaver.from_conn_string(args.store) as saver:
        graph = build(saver)
        if args.command == "start":
            start = {"topic": "release", "steps": [], "approved": False}
            print(json.dumps(_show(graph.invoke(start, config, durability="sync"))))
        elif args.command == "resume":
            result = graph.invoke(Command(resume=args.answer), config, durability="sync")
            print(json.dumps(_show(result)))
        elif args.command == "continue":
            print(json.dumps(_show(graph.invoke(None, config, durability="sync"))))
        elif args.command == "history":
            for snapshot in graph.get_state_history(config):
                step = {"step": snapshot.metadata["step"], "next": list(snapshot.next)}
                print(json.dumps({**step, "steps": snapshot.values.get("steps", [])}))
        else:
            before_review = next(
                s for s in graph.get_state_history(config) if s.next == ("review",)
            )
            asked = graph.invoke(None, before_review.config, durability="sync")
            print(json.dumps(_show(asked)))
            answered = graph.invoke(Command(resume=args.answer), config, durability="sync")
            print(json.dumps(_show(answered)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
