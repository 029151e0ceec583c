"""``nenjim projections status|rebuild`` go through the registry of projections."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nenjim.admin import projections as projection_admin
from nenjim.cli import main
from nenjim.infrastructure.log import StoreUnavailableError
from nenjim.infrastructure.tracking.projections import MaintainedProjection, ProjectionStatus


@pytest.fixture
def other_projection(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One more projection (of a made-up log): registered by one more entry."""
    rebuilt: list[str] = []

    def status(url: str) -> ProjectionStatus:
        return ProjectionStatus("team-runs", "teams", 2, 5, 3)

    def rebuild(url: str, progress: Any) -> str:
        rebuilt.append(url)
        return "team-runs: 5 rows"

    projections = [
        *projection_admin.PROJECTIONS,
        MaintainedProjection("team-runs", status, rebuild),
    ]
    monkeypatch.setattr(projection_admin, "PROJECTIONS", projections)
    return rebuilt


def _store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    root = tmp_path / "root"
    root.mkdir()
    store = f"sqlite://{tmp_path / 'log.db'}"
    assert main(["journal", "verify", str(root), "--store", store]) == 0
    capsys.readouterr()
    return store


def test_status_lists_every_projection(
    tmp_path: Path, other_projection: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, capsys)
    assert main(["projections", "status", "--store", store, "--json"]) == 0
    assert [p["name"] for p in json.loads(capsys.readouterr().out)["projections"]] == [
        "journal-chains",
        "team-runs",
    ]


def test_rebuild_goes_to_the_projection_of_that_name(
    tmp_path: Path, other_projection: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, capsys)
    assert main(["projections", "rebuild", "team-runs", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("rebuilt team-runs: 5 rows in ")
    assert other_projection == [store]
    assert main(["projections", "rebuild", "nope", "--store", store]) == 2
    assert "known: journal-chains, agent-runs, team-runs" in capsys.readouterr().err


def test_a_projection_whose_log_is_missing_is_left_out_unless_all_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(url: str) -> ProjectionStatus:
        raise StoreUnavailableError(f"{url} holds no storage log")

    projections = [
        *projection_admin.PROJECTIONS,
        MaintainedProjection("x", missing, lambda u, p: ""),
    ]
    monkeypatch.setattr(projection_admin, "PROJECTIONS", projections)
    store = _store(tmp_path, capsys)
    assert [s.name for s in projection_admin.statuses(store)] == ["journal-chains"]
    assert projection_admin.rebuild_all(store) == ("journal-chains: 0 revisions of 0 artifacts",)
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    with pytest.raises(StoreUnavailableError, match="holds no log 'journal_events'"):
        projection_admin.statuses(f"sqlite://{other}")
