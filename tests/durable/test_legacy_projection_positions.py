"""Projections an earlier build tracked in ``storage_projection_positions`` answer the same.

Earlier builds kept the storage log's projections apart from the Journal log's:
positions in ``storage_projection_positions``, rows in a table per generation.
A copy of the fixture storage store (``tests/fixtures/stores/storage.db``),
opened once and given those tables as such a build left them, reports the
same status, and once opened answers what a store that never held them
answers, tracked in ``nenjim_projections`` alone.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import psycopg

from nenjim.admin import projections as projection_admin
from nenjim.domain.agents import AgentRoot
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import AgentRuns
from nenjim.projections.agent_runs import AgentRun

STORES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"

# As the earlier build created them (its live generation 1 of agent-runs).
LEGACY_TABLES = (
    "CREATE TABLE storage_projection_positions (name TEXT NOT NULL, generation INTEGER NOT NULL, "
    "live INTEGER NOT NULL, transaction_id BIGINT NOT NULL, notification_id BIGINT NOT NULL, "
    "PRIMARY KEY (name, generation))",
    "CREATE TABLE storage_projection_agent_runs_1a2b3c_1 (execution_id TEXT PRIMARY KEY, "
    "agent_id TEXT NOT NULL, status TEXT NOT NULL, phase TEXT NOT NULL, "
    "started_at TEXT NOT NULL, updated_at TEXT NOT NULL, ended_at TEXT, terminal_reason TEXT, "
    "revisions INTEGER NOT NULL, deleted INTEGER NOT NULL)",
)


def _copy(tmp_path: Path, name: str) -> tuple[str, Path]:
    path = tmp_path / name
    shutil.copyfile(STORES / "storage.db", path)
    Persistence.open(f"sqlite://{path}").close()  # as the earlier build upgraded it
    return f"sqlite://{path}", path


def _timeline(url: str) -> tuple[AgentRun, ...]:
    persistence = Persistence.open(url)
    try:
        runs = AgentRuns(persistence.backend)
        runs.sync()
        return runs.timeline()
    finally:
        persistence.close()


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(name) for (name,) in rows}


def test_positions_an_earlier_build_tracked_report_the_same_and_move_to_the_one_table(
    tmp_path: Path,
) -> None:
    url, path = _copy(tmp_path, "legacy.db")
    with sqlite3.connect(path) as connection:
        (head,) = connection.execute("SELECT max(notification_id) FROM storage_events").fetchone()
        for statement in LEGACY_TABLES:
            connection.execute(statement)
        connection.execute(
            "INSERT INTO storage_projection_positions VALUES ('agent-runs', 1, 1, 0, ?)", (head,)
        )
    (before,) = projection_admin.statuses(url)
    assert (before.name, before.position, before.head, before.lag) == ("agent-runs", head, head, 0)

    reference_url, _ = _copy(tmp_path, "reference.db")
    assert _timeline(url) == _timeline(reference_url) != ()

    assert not {name for name in _tables(path) if name.startswith("storage_projection")}
    assert projection_admin.statuses(url) == [before]
    with sqlite3.connect(path) as connection:
        tracked = connection.execute(
            "SELECT position FROM nenjim_projections WHERE name = 'agent-runs'"
        ).fetchall()
    assert tracked == [(head,)]


def test_a_postgresql_position_an_earlier_build_tracked_counts_the_events_up_to_it(
    postgres_schema_url: str,
) -> None:
    persistence = Persistence.open(postgres_schema_url)
    try:
        for index in range(3):
            persistence.agents.create(AgentRoot.create(f"a{index}", definition_id="d"))
    finally:
        persistence.close()
    schema = postgres_schema_url.split("schema=")[1].split("&", maxsplit=1)[0]
    with psycopg.connect(postgres_schema_url.split("?", maxsplit=1)[0]) as connection:
        connection.execute(f'SET search_path TO "{schema}"')
        for statement in LEGACY_TABLES:
            connection.execute(statement)
        # Tracked after the second event in log order, as the earlier build stored it.
        connection.execute(
            "INSERT INTO storage_projection_positions SELECT 'agent-runs', 1, 1, "
            "transaction_id::text::bigint, notification_id FROM storage_events "
            "ORDER BY transaction_id, notification_id LIMIT 1 OFFSET 1"
        )
    (before,) = projection_admin.statuses(postgres_schema_url)
    assert (before.position, before.head, before.lag) == (2, 3, 1)
    assert [run.agent_id for run in _timeline(postgres_schema_url)] == []
    (after,) = projection_admin.statuses(postgres_schema_url)
    assert (after.position, after.head, after.lag) == (3, 3, 0)
    with psycopg.connect(postgres_schema_url.split("?", maxsplit=1)[0]) as connection:
        left = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s "
            "AND tablename LIKE 'storage_projection%%'",
            (schema,),
        ).fetchall()
    assert left == []
