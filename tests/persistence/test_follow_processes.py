"""Followers across processes: a SIGKILL mid-catch-up loses and repeats nothing, and a
follower in one process sees what another process commits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns, run_events
from nenjim.infrastructure.storage.follow.log import START, read_after
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.projections.agent_runs import fold, timeline

from .conftest import Store
from .test_agent_runs import run_agent

ROOT = Path(__file__).resolve().parents[2]

CATCH_UP = """
import sys, time
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns

def progress(task, done, total):
    print(done, flush=True)
    time.sleep(0.01)

persistence = Persistence.open(sys.argv[1])
AgentRuns(persistence.backend, batch=7).catch_up(progress)
print("finished", flush=True)
"""

FOLLOW = """
import sys, threading
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns

persistence = Persistence.open(sys.argv[1])
runs = AgentRuns(persistence.backend)
stop = threading.Event()
wanted = int(sys.argv[2])

def applied(count):
    if len(runs.timeline()) >= wanted:
        print("saw", len(runs.timeline()), flush=True)
        stop.set()

print("ready", flush=True)
runs.follow(stop, poll_interval=0.05, on_applied=applied)
persistence.close()
"""


def child(script: str, *args: str) -> subprocess.Popen[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
        cwd=ROOT,
    )


def expected_timeline(persistence: Persistence) -> tuple[object, ...]:
    """The runs folded from scratch, straight from the log."""
    driver = persistence.backend.driver
    assert isinstance(driver, SqlDriver)
    with driver.transaction(None) as session:
        events = read_after(session, START, 1_000_000)
    return timeline(fold({}, run_events(events)).values())


def test_a_follower_killed_mid_catch_up_resumes_without_loss_or_duplicates(
    durable_store: Store,
) -> None:
    persistence = durable_store.persistence
    for agent in range(10):
        run_agent(persistence, f"a{agent}", 6)  # 130 events: about 19 steps of 7
    process = child(CATCH_UP, durable_store.url)
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "finished" or int(line) >= 35:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    process.stdout.close()
    resumed = AgentRuns(durable_store.reopen().backend, batch=7)
    position = resumed.position()
    assert 35 <= position < 130  # it had committed some steps, not all
    assert resumed.sync() == 130 - position
    assert resumed.timeline() == expected_timeline(durable_store.persistence)
    assert sum(run.revisions for run in resumed.timeline()) == 2 * 60


def test_a_follower_in_another_process_sees_new_commits(durable_store: Store) -> None:
    process = child(FOLLOW, durable_store.url, "3")
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    run_agent(durable_store.persistence, "a1", 2)
    run_agent(durable_store.persistence, "a2", 1)
    assert process.stdout.readline().strip() == "saw 3"
    assert process.wait(60) == 0
    process.stdout.close()
