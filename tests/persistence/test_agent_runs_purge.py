"""The agent-runs read model after a purge of an execution: the run and every row of it go."""

from __future__ import annotations

from nenjim.infrastructure.persistence.agent_runs import TABLE, AgentRuns
from nenjim.infrastructure.persistence.catalog import EXECUTIONS
from nenjim.infrastructure.tracking.projections import projection_recorder

from .conftest import Store
from .test_agent_runs import run_agent

PURGED = "a1-run0"


def _ids(runs: AgentRuns) -> list[str]:
    return [run.execution_id for run in runs.timeline()]


def _stored_ids(store: Store) -> set[str]:
    """The execution ids of every persisted row (each run's rows, old ones too)."""
    rows = projection_recorder(store.persistence.backend).load(TABLE).rows
    column = [name for name, _ in TABLE.columns].index("execution_id")
    return {str(row[column]) for row in rows}


def test_a_purged_execution_drops_its_run_and_every_row_of_it(store: Store) -> None:
    persistence = store.persistence
    run_agent(persistence, "a1", 2)
    runs = AgentRuns(persistence.backend, batch=2)
    runs.sync()
    assert _ids(runs) == ["a1-run0", "a1-run1"]
    assert PURGED in _stored_ids(store)

    assert persistence.backend.view.records(EXECUTIONS).purge(key=PURGED) is not None
    runs.sync()

    assert _ids(runs) == ["a1-run1"]
    assert runs.run(PURGED) is None
    assert _stored_ids(store) == {"a1-run1"}
    assert _ids(AgentRuns(persistence.backend)) == ["a1-run1"]  # loaded from the rows
    before = runs.timeline()
    runs.rebuild()
    assert runs.timeline() == before
    assert _stored_ids(store) == {"a1-run1"}


def test_a_purge_while_a_rebuild_runs_forgets_the_rows_an_earlier_batch_wrote(
    store: Store,
) -> None:
    persistence = store.persistence
    run_agent(persistence, "a1", 3)
    runs = AgentRuns(persistence.backend, batch=2)
    purged = []

    def purge_once(task: str, done: int, total: int) -> None:
        if not purged:  # the first batch folded the execution's insert
            purged.append(persistence.backend.view.records(EXECUTIONS).purge(key=PURGED))

    runs.rebuild(purge_once)
    runs.sync()

    assert purged[0] is not None
    assert _ids(runs) == ["a1-run1", "a1-run2"]
    assert _stored_ids(store) == {"a1-run1", "a1-run2"}
    assert _ids(AgentRuns(persistence.backend)) == ["a1-run1", "a1-run2"]
