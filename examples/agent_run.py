"""An Agent run, end to end, on durable state.

    python examples/agent_run.py                      # SQLite file under var/
    python examples/agent_run.py --store postgresql://postgres@127.0.0.1/postgres

Each step is one transaction: create the Agent root, admit an execution,
append journal records that reference stored content, save the Workflow
snapshot, finish the execution (which releases admission). Before every
durable barrier the Agent watermark (root revision + journal position) is
checked inside the same transaction, so a stale writer is refused rather
than merged. ``--pause-after STEP`` stops after a step has committed (the
crash tests kill the process there).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot
from nenjim.infrastructure.persistence import Persistence

STEPS = ("root", "admit", "journal", "workflow", "finish")


def run(store: str, agent_id: str, pause_after: str | None) -> None:
    """Run the five steps against ``store``, printing one line per committed step."""
    persistence = Persistence.open(store)
    try:
        _steps(persistence, agent_id, pause_after)
    finally:
        persistence.close()


def _committed(step: str, pause_after: str | None, detail: str) -> None:
    print(f"committed {step}: {detail}", flush=True)
    if step == pause_after:
        print(f"paused after {step}", flush=True)
        time.sleep(3600)  # the crash test kills the process here


def _steps(p: Persistence, agent_id: str, pause_after: str | None) -> None:
    execution_id = f"{agent_id}-run-1"
    with p.transaction() as tx:
        root = tx.agents.create(
            AgentRoot.create(agent_id, definition_id="example.assistant", definition_version="1")
        )
    _committed("root", pause_after, f"agent {agent_id} at revision {root.agent_revision}")

    with p.transaction() as tx:
        tx.assert_agent_watermark(agent_id=agent_id, agent_revision=0, journal_position=0)
        tx.executions.assert_idle(agent_id)
        run = tx.executions.create_active(
            AgentExecution.start(execution_id, agent_id=agent_id, base=root)
        )
        run = tx.executions.save(
            execution_id, expected_revision=0, execution=run.evolve(status="active")
        )
    _committed("admit", pause_after, f"execution {execution_id} {run.status}")

    with p.transaction() as tx:
        tx.assert_agent_watermark(agent_id=agent_id, agent_revision=0, journal_position=0)
        question = tx.contents.put_text("What is the capital of France?")
        answer = tx.contents.put_text("Paris.")
        records = tx.journals.append(
            agent_id,
            expected_position=0,
            records=[
                AgentJournalRecord.create(
                    f"{agent_id}-r1",
                    agent_id=agent_id,
                    kind="message",
                    content_ref=question,
                    execution_id=execution_id,
                    role="user",
                ),
                AgentJournalRecord.create(
                    f"{agent_id}-r2",
                    agent_id=agent_id,
                    kind="message",
                    content_ref=answer,
                    execution_id=execution_id,
                    role="assistant",
                ),
            ],
        )
        root = tx.agents.save(
            agent_id,
            expected_revision=0,
            root=root.evolve(journal_position=len(records), lifecycle_status="active"),
        )
    _committed(
        "journal",
        pause_after,
        f"{len(records)} journal records, root revision {root.agent_revision}",
    )

    with p.transaction() as tx:
        tx.assert_agent_watermark(
            agent_id=agent_id,
            agent_revision=root.agent_revision,
            journal_position=root.journal_position,
        )
        revision = tx.workflow_states.save(
            f"{agent_id}-workflow",
            expected_revision=None,
            snapshot={"fields": {"question": question, "answer": answer}, "phase": "answered"},
        )
    _committed("workflow", pause_after, f"workflow snapshot at revision {revision}")

    with p.transaction() as tx:
        tx.assert_agent_watermark(
            agent_id=agent_id,
            agent_revision=root.agent_revision,
            journal_position=root.journal_position,
        )
        result = tx.contents.put_text("Paris.")
        done = tx.executions.save(
            execution_id,
            expected_revision=run.execution_revision,
            execution=run.evolve(status="completed", result_ref=result),
        )
        tx.executions.assert_idle(agent_id)  # admission released in the same transaction
    _committed("finish", pause_after, f"execution {execution_id} {done.status}")
    outcome = p.execution_result(execution_id)
    print(f"result: {outcome['status']} -> {outcome['result']}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and run the example."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path("var/agent-run.db")
    parser.add_argument("--store", default=None, help=f"store URL (default: sqlite:{default})")
    parser.add_argument("--agent", default=None, help="agent id (default: a fresh one)")
    parser.add_argument("--pause-after", choices=STEPS, default=None)
    args = parser.parse_args(argv)
    if args.store is None:
        default.parent.mkdir(parents=True, exist_ok=True)
        args.store = f"sqlite:{default}"
    run(args.store, args.agent or f"agent-{uuid.uuid4().hex[:8]}", args.pause_after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
