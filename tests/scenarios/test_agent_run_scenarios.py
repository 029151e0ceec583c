"""End-to-end scenarios: an Agent run, a crash between steps, two processes racing admission.

Real processes against real SQLite files and PostgreSQL schemas.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.domain.persistence.errors import AgentBusyError
from nenjim.infrastructure.persistence import Persistence

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_run.py"
STEPS = ("root", "admit", "journal", "workflow", "finish")


@pytest.fixture
def store(nenjim_durable_store_url: str) -> str:
    """A fresh durable store URL."""
    return nenjim_durable_store_url


@pytest.fixture
def persistence_on(store: str) -> Iterator[Callable[[], Persistence]]:
    """A Persistence opened on ``store`` by the test itself (after the processes ran)."""
    opened: list[Persistence] = []

    def open_it() -> Persistence:
        opened.append(Persistence.open(store))
        return opened[-1]

    yield open_it
    for p in opened:
        p.close()


def _example(store: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--store", store, "--agent", "agent-under-test", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_example_runs_an_agent_end_to_end(
    store: str, persistence_on: Callable[[], Persistence]
) -> None:
    process = _example(store)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert [line.split(":")[0] for line in out.splitlines()[:5]] == [
        f"committed {step}" for step in STEPS
    ]
    assert out.splitlines()[-1] == "result: completed -> Paris."
    p = persistence_on()
    root = p.agents.load("agent-under-test")
    assert (root.agent_revision, root.journal_position) == (1, 2)
    assert p.journals.head("agent-under-test") == 2
    assert [p.contents.fetch_text(r.content_ref) for r in p.journals.read("agent-under-test")] == [
        "What is the capital of France?",
        "Paris.",
    ]
    assert p.executions.list_active("agent-under-test") == ()
    assert p.workflow_states.load("agent-under-test-workflow")["snapshot"]["phase"] == "answered"


@pytest.mark.parametrize("step", STEPS[:-1])
def test_a_killed_process_leaves_the_last_committed_state_consistent(
    store: str, persistence_on: Callable[[], Persistence], step: str
) -> None:
    process = _example(store, "--pause-after", step)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(f"paused after {step}"):
            break
    else:  # pragma: no cover - the assertion explains a failure
        raise AssertionError(f"the example ended before pausing: {process.stderr.read()}")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    p = persistence_on()
    root = p.agents.load("agent-under-test")
    # The watermark holds for whatever was committed last.
    assert p.assert_agent_watermark(
        agent_id="agent-under-test",
        agent_revision=root.agent_revision,
        journal_position=p.journals.head("agent-under-test"),
    )
    executions = p.executions.list("agent-under-test")
    committed = STEPS.index(step)
    assert len(executions) == (0 if committed < 1 else 1)
    assert p.journals.head("agent-under-test") == (0 if committed < 2 else 2)
    workflow = p.workflow_states.load("agent-under-test-workflow")
    assert (workflow is None) == (committed < 3)
    if committed >= 1:
        assert executions[0].status == "active"  # never finished: admission still held
        with pytest.raises(AgentBusyError):
            p.executions.assert_idle("agent-under-test")


_ADMIT = """
import sys
from nenjim.domain.agents import AgentExecution
from nenjim.infrastructure.persistence import Persistence
from nenjim.domain.persistence.errors import AgentBusyError
p = Persistence.open(sys.argv[1])
root = p.agents.load("contested")
sys.stdin.readline()  # start together
try:
    p.executions.create_active(AgentExecution.start(sys.argv[2], agent_id="contested", base=root))
    print("won")
except AgentBusyError:
    print("busy")
finally:
    p.close()
"""


def test_two_processes_admitting_for_one_agent_exactly_one_wins(
    store: str, persistence_on: Callable[[], Persistence]
) -> None:
    p = persistence_on()
    p.agents.create(AgentRoot.create("contested", definition_id="d", definition_version="1"))
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _ADMIT, store, f"run-{index}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(2)
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outcomes = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        outcomes.append(out.strip())
    assert sorted(outcomes) == ["busy", "won"]
    active = p.executions.list_active("contested")
    assert len(active) == 1
    assert isinstance(active[0], AgentExecution)
