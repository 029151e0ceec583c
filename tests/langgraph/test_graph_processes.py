"""A real LangGraph graph with an interrupt, across processes killed with SIGKILL.

``examples/langgraph_approval.py`` (plan -> review, which interrupts -> act)
runs in real processes on SQLite files and PostgreSQL schemas: one process
starts the thread and stops at the question; a second answers it and is
killed inside ``act``; a third resumes the thread from the last checkpoint
and finishes; a fourth forks from the state before the review. The test
process then walks the history and audits the store.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.langgraph_approval import build
from nenjim.cli import main
from nenjim.langgraph import NenjimSaver

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_approval.py"
THREAD = {"configurable": {"thread_id": "approval-1"}}


@pytest.fixture
def store(nenjim_durable_store_url: str) -> str:
    """A fresh durable store URL."""
    return nenjim_durable_store_url


@pytest.fixture
def saver(store: str) -> Iterator[NenjimSaver]:
    """The test's own saver on the store (opened after the processes ran)."""
    with NenjimSaver.from_conn_string(store) as opened:
        yield opened


def _run(store: str, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--store", store, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _killed_in_act(store: str) -> None:
    """``resume yes``, SIGKILLed once the ``act`` node runs (review's checkpoint is committed)."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--store", store, "resume", "yes"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NENJIM_EXAMPLE_STALL": "act"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert json.loads(line) == {"stalled": "act"}, (
            process.stderr.read() if process.stderr else ""
        )
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL


def _history(saver: NenjimSaver) -> list[tuple[int, list[str], list[str]]]:
    return [
        (s.metadata["step"], list(s.next), s.values.get("steps", []))
        for s in build(saver).get_state_history(THREAD)
    ]


def test_a_killed_run_resumes_from_its_last_checkpoint_in_a_new_process(store: str) -> None:
    started = _run(store, "start")
    assert started == [
        {
            "topic": "release",
            "steps": ["plan:release"],
            "approved": False,
            "interrupt": [{"question": "approve release?"}],
        }
    ]
    _killed_in_act(store)

    with NenjimSaver.from_conn_string(store) as after_kill:
        newest = _history(after_kill)[0]
    assert newest == (2, ["act"], ["plan:release", "review:yes"])

    finished = _run(store, "continue")
    assert finished == [
        {"topic": "release", "steps": ["plan:release", "review:yes", "act"], "approved": True}
    ]

    with NenjimSaver.from_conn_string(store) as reopened:
        assert _history(reopened) == [
            (3, [], ["plan:release", "review:yes", "act"]),
            (2, ["act"], ["plan:release", "review:yes"]),
            (1, ["review"], ["plan:release"]),
            (0, ["plan"], []),
            (-1, ["__start__"], []),
        ]

    forked = _run(store, "fork", "no")
    assert forked[0]["interrupt"] == [{"question": "approve release?"}]
    assert forked[1] == {
        "topic": "release",
        "steps": ["plan:release", "review:no", "skip"],
        "approved": False,
    }

    with NenjimSaver.from_conn_string(store) as reopened:
        history = _history(reopened)
        sources = [t.metadata["source"] for t in reopened.list(THREAD)]
    assert history[:3] == [
        (4, [], ["plan:release", "review:no", "skip"]),
        (3, ["act"], ["plan:release", "review:no"]),
        (2, ["review"], ["plan:release"]),
    ]
    assert history[3:] == [
        (3, [], ["plan:release", "review:yes", "act"]),
        (2, ["act"], ["plan:release", "review:yes"]),
        (1, ["review"], ["plan:release"]),
        (0, ["plan"], []),
        (-1, ["__start__"], []),
    ]
    assert sources == ["loop", "loop", "fork", "loop", "loop", "loop", "loop", "input"]
    assert main(["storage", "audit", "--store", store]) == 0
