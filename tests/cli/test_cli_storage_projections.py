"""``nenjim projections status|rebuild`` over the storage log: the agent-runs projection."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nenjim.cli import main

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "storage-fixture.log"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """An SQLite store holding the golden storage log (its import rebuilt every projection)."""
    url = f"sqlite://{tmp_path / 'agents.db'}"
    assert _run(capsys, "log", "import", "--store", url, str(GOLDEN))[0] == 0
    return url


def test_status_lists_agent_runs_caught_up_with_the_storage_log(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "projections", "status", "--store", store, "--json")
    assert (code, err) == (0, "")
    rows = {row["name"]: row for row in json.loads(out)["projections"]}
    runs = rows["agent-runs"]
    assert runs["log"] == "storage"
    assert runs["position"] == runs["head"] > 0
    assert runs["lag"] == 0


def test_rebuild_of_agent_runs_names_what_it_rebuilt(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "projections", "rebuild", "agent-runs", "--store", store)
    assert (code, err) == (0, "")
    assert "agent-runs: 4 runs of 2 agents" in out


def test_rebuild_of_an_unknown_projection_names_the_known_ones(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "projections", "rebuild", "agent-walks", "--store", store)
    assert code == 2
    assert "agent-walks" in err
    assert "agent-runs" in err
    assert "journal-chains" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("version", "tracked"), [(2, True), (1, False)])
def test_status_of_a_store_an_older_build_left_reports_what_it_tracked(
    store: str, capsys: pytest.CaptureFixture[str], version: int, tracked: bool
) -> None:
    # As the previous build leaves a store: its schema version, not upgraded yet. From
    # version 2 on, a build follows the log, so its positions count; before, none exist.
    path = store.removeprefix("sqlite://")
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE nenjim_schema SET version = ? WHERE component = 'storage'", (version,)
        )
    code, out, err = _run(capsys, "projections", "status", "--store", store, "--json")
    assert (code, err) == (0, "")
    runs = {row["name"]: row for row in json.loads(out)["projections"]}["agent-runs"]
    assert runs["head"] > 0
    assert runs["position"] == (runs["head"] if tracked else 0)
