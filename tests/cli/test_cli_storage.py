"""``nenjim storage audit|repair``: one line per finding, documented exit codes, nothing created.

The store is written through domain Persistence (the catalog the commands audit) and edited
behind its back with plain SQL.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from nenjim.cli import main
from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.domain.persistence.errors import AgentBusyError
from nenjim.infrastructure.persistence import Persistence

AGENT = "agent-1"


@pytest.fixture
def store(nenjim_durable_store_url: str) -> str:
    """A store with one Agent, its active run, a content blob and a Workflow state."""
    url = nenjim_durable_store_url
    persistence = Persistence.open(url)
    try:
        root = persistence.agents.create(
            AgentRoot.create(AGENT, definition_id="d", definition_version="1")
        )
        persistence.executions.create_active(
            AgentExecution.start("run-1", agent_id=AGENT, base=root)
        )
        persistence.contents.put_text("hello")
        persistence.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
        )
    finally:
        persistence.close()
    return url


def _flip_active_off(url: str) -> None:
    """Mark the active run inactive in ``storage_records`` only."""
    sql = "UPDATE storage_records SET attributes = ? WHERE key = ?"
    params = (json.dumps({"owner": AGENT, "active": False}), "run-1")
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            conn.execute(sql, params)
        return
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(sql.replace("?", "%s"), params)


def _second_run(url: str) -> None:
    persistence = Persistence.open(url)
    try:
        root = persistence.agents.load(AGENT)
        persistence.executions.create_active(
            AgentExecution.start("run-2", agent_id=AGENT, base=root)
        )
    finally:
        persistence.close()


def test_a_clean_store_audits_ok(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "audit", "--store", store]) == 0
    out = capsys.readouterr().out
    assert out.startswith("audit OK: ")
    assert "0 findings" in out
    assert main(["storage", "repair", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("repair: nothing to do: ")


def test_the_active_flip_is_reported_repaired_and_admission_holds_again(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _flip_active_off(store)

    assert main(["storage", "audit", "--store", store]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        'storage_records agent.executions["run-1"] attributes: log says '
        '{"active":true,"owner":"agent-1"}; table says {"active":false,"owner":"agent-1"}'
    ]
    error = captured.err.strip()
    assert "\n" not in error
    assert error.startswith("nenjim: error: ")
    assert "1 finding(s)" in error
    assert "nenjim storage repair" in error

    assert main(["storage", "repair", "--store", store]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith('fixed: storage_records agent.executions["run-1"] attributes:')
    assert lines[1].startswith("repaired ")
    assert main(["storage", "audit", "--store", store]) == 0
    capsys.readouterr()
    with pytest.raises(AgentBusyError):
        _second_run(store)


def test_a_repair_refuses_while_the_log_itself_is_inconsistent(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _flip_active_off(store)
    _second_run(store)  # admitted: the flipped table let it in

    assert main(["storage", "repair", "--store", store]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        'storage_events agent.executions unique one_active_owner: live rows "run-1", "run-2" '
        'all hold {"owner":"agent-1"}'
    ]
    assert "repair refused, nothing changed" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert main(["storage", "repair", "--store", store, "--json"]) == 1
    refused = json.loads(capsys.readouterr().err)
    assert (refused["kind"], refused["exit_code"]) == ("audit", 1)
    assert main(["storage", "audit", "--store", store]) == 1  # still there
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_json_output_is_one_object(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    _flip_active_off(store)

    assert main(["storage", "audit", "--store", store, "--json"]) == 1
    captured = capsys.readouterr()
    verdict = json.loads(captured.err)  # one object, as the Journal's audit gives
    assert (verdict["kind"], verdict["exit_code"]) == ("audit", 1)
    assert "1 finding(s)" in verdict["error"]
    report = json.loads(captured.out)
    assert report["ok"] is False
    assert report["repairable"] is True
    assert report["live"] == {"records": 3, "streams": 0, "blobs": 1}
    (finding,) = report["findings"]
    assert finding["source"] == "table"
    assert finding["table"] == "storage_records"
    assert finding["resource"] == "agent.executions"
    assert finding["key"] == "run-1"
    assert finding["field"] == "attributes"
    assert json.loads(finding["log"]) == {"owner": AGENT, "active": True}
    assert json.loads(finding["stored"]) == {"owner": AGENT, "active": False}

    assert main(["storage", "repair", "--store", store, "--json"]) == 0
    repaired = json.loads(capsys.readouterr().out)
    assert repaired["repaired"] is True
    assert repaired["rewritten"] == {"storage_records": 1}
    assert main(["storage", "audit", "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_auditing_a_missing_sqlite_store_fails_in_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.db"
    for command in ("audit", "repair"):
        assert main(["storage", command, "--store", f"sqlite://{path}"]) == 3
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"nenjim: error: SQLite store {path} does not exist\n"
    assert not path.exists()


def test_auditing_a_missing_postgres_schema_fails_in_one_line_and_creates_nothing(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_absent_{uuid.uuid4().hex[:12]}"
    url = urlsplit(postgres_url)._replace(query=f"schema={schema}").geturl()
    assert main(["storage", "audit", "--store", url]) == 3
    err = capsys.readouterr().err
    assert err == f"nenjim: error: no storage in PostgreSQL schema {schema!r}: no storage tables\n"
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert found.fetchone() is None


@pytest.mark.parametrize(
    ("where", "cause"),
    [("127.0.0.1:1/postgres", "Connection refused"), ("127.0.0.1:5432/nodb", '"nodb"')],
    ids=["wrong port", "unknown database"],
)
@pytest.mark.parametrize("command", ["audit", "repair"])
def test_a_connection_failure_names_the_store_and_its_cause_in_one_line(
    command: str, where: str, cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://postgres:secret@{where}?schema=s"
    shown = url.replace(":secret@", ":***@")
    assert main(["storage", command, "--store", url]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"nenjim: error: cannot connect to store {shown}: ")
    assert cause in err
    assert "secret" not in err
    assert err.count("\n") == 1
    assert main(["storage", command, "--store", url, "--json"]) == 3
    error = json.loads(capsys.readouterr().err)
    assert error["kind"] == "store"
    assert error["exit_code"] == 3
    assert cause in error["error"]


def test_a_directory_is_no_sqlite_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "audit", "--store", f"sqlite://{tmp_path}"]) == 3
    assert capsys.readouterr().err == f"nenjim: error: SQLite store {tmp_path} is a directory\n"


@pytest.mark.parametrize("url", ["memory:", "mysql://x/y", "sqlite:"])
def test_a_store_url_that_names_no_auditable_store_is_a_usage_error(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "audit", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: argument --store: ")
    assert err.count("\n") == 1
    assert main(["storage", "audit", "--store", url, "--json"]) == 2
    error = json.loads(capsys.readouterr().err)
    assert (error["kind"], error["exit_code"]) == ("usage", 2)
    assert error["error"].startswith("argument --store: ")


def test_the_store_option_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "audit"]) == 2
    assert "--store" in capsys.readouterr().err
