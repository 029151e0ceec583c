"""A pooled PostgreSQL connection prepares each statement at its first run and plans it
once, for any parameters (a generic plan): a pool hands a thread each of its connections
in turn, and planning a statement anew at each of its first runs on every connection
cost more than the statement."""

from __future__ import annotations

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import DurableRecord
from nenjim.infrastructure.storage.testing.resources import WORKFLOW_STATES


def test_a_statement_is_prepared_at_its_first_run_with_one_plan_for_any_parameters(
    postgres_backend: PostgresBackend,
) -> None:
    states = postgres_backend.view.records(WORKFLOW_STATES)
    for key in ("a", "b"):
        states.insert(
            key=key, revision=0, attributes={}, record=DurableRecord("t.plan", "0.1", {"k": key})
        )
    with postgres_backend.transaction() as view:
        scope = postgres_backend.current_scope()
        assert scope is not None
        connection = scope.context.connection
        ((mode,),) = connection.execute("SHOW plan_cache_mode").fetchall()
        assert mode == "force_generic_plan"
        before = _prepared_reads(connection)
        assert view.records(WORKFLOW_STATES).read("a") is not None
        after = _prepared_reads(connection)
        assert len(after) == len(before) + 1  # prepared at its first run
        assert view.records(WORKFLOW_STATES).read("b") is not None
        assert _prepared_reads(connection) == after  # and run again as prepared
        ((generic, custom),) = connection.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s",
            (sorted(after - before)[0],),
        ).fetchall()
        assert (generic, custom) == (2, 0)


def _prepared_reads(connection: object) -> set[str]:
    """The names of the statements prepared on ``connection`` that read a records row."""
    rows = connection.execute(  # type: ignore[attr-defined]
        "SELECT name FROM pg_prepared_statements WHERE statement LIKE %s",
        ("SELECT key, revision, attributes%storage_records WHERE resource = $1 AND key = $2",),
    ).fetchall()
    return {str(row[0]) for row in rows}
