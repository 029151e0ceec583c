"""``nenjim storage audit|repair`` after purges: the audit is OK, and a repair of an edited row
rebuilds it from a log holding stubs and markers."""

from __future__ import annotations

import sqlite3
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from nenjim.cli import main
from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.catalog import CONTENTS, EXECUTIONS, WORKFLOWS

AGENT = "agent-1"


@pytest.fixture
def store(nenjim_durable_store_url: str) -> str:
    """A store with an Agent whose run, content blob and a Workflow state were purged."""
    url = nenjim_durable_store_url
    persistence = Persistence.open(url)
    try:
        root = persistence.agents.create(AgentRoot.create(AGENT, definition_id="d"))
        persistence.executions.create_active(
            AgentExecution.start("run-1", agent_id=AGENT, base=root)
        )
        blob = persistence.contents.put_text("hello")
        for key in ("wf", "kept"):
            persistence.workflow_states.save(
                key, expected_revision=None, snapshot={"fields": {}, "phase": None}
            )
        view = persistence.backend.view
        assert view.records(EXECUTIONS).purge(key="run-1") is not None
        assert view.blobs(CONTENTS).purge(key=blob) is not None
        assert view.records(WORKFLOWS).purge(key="wf") is not None
    finally:
        persistence.close()
    return url


def _execute(url: str, sql: str) -> None:
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            conn.execute(sql)
        return
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(sql)


def test_a_store_after_purges_audits_ok(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "audit", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("audit OK: ")
    assert main(["storage", "repair", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("repair: nothing to do: ")


def test_an_edited_row_after_purges_is_repaired(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _execute(store, "UPDATE storage_records SET revision = 7 WHERE key = 'kept'")
    assert main(["storage", "audit", "--store", store]) == 1
    capsys.readouterr()

    assert main(["storage", "repair", "--store", store]) == 0
    assert main(["storage", "audit", "--store", store]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("audit OK: ")
