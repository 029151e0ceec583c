"""``nenjim projections status|rebuild`` go through the registry of families."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nenjim.admin import projections as projection_admin
from nenjim.admin.projections import Family
from nenjim.cli import main
from nenjim.infrastructure.log import StoreUnavailableError


@dataclass(frozen=True)
class _Status:
    name: str
    log: str
    position: int
    head: int
    lag: int


@pytest.fixture
def other_family(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """One more family (a made-up log's): registered by one more entry."""
    rebuilt: list[tuple[str, str]] = []

    def statuses(url: str) -> list[_Status]:
        return [_Status("team-runs", "teams", 2, 5, 3)]

    def rebuild(url: str, name: str, progress: Any) -> str:
        rebuilt.append((url, name))
        return f"{name}: 5 rows"

    families = [*projection_admin.FAMILIES, Family(("team-runs",), statuses, rebuild)]
    monkeypatch.setattr(projection_admin, "FAMILIES", families)
    return rebuilt


def _store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    root = tmp_path / "root"
    root.mkdir()
    store = f"sqlite://{tmp_path / 'log.db'}"
    assert main(["journal", "verify", str(root), "--store", store]) == 0
    capsys.readouterr()
    return store


def test_status_lists_every_family(
    tmp_path: Path, other_family: list[tuple[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, capsys)
    assert main(["projections", "status", "--store", store, "--json"]) == 0
    assert [p["name"] for p in json.loads(capsys.readouterr().out)["projections"]] == [
        "journal-chains",
        "team-runs",
    ]


def test_rebuild_goes_to_the_family_that_names_the_projection(
    tmp_path: Path, other_family: list[tuple[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, capsys)
    assert main(["projections", "rebuild", "team-runs", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("rebuilt team-runs: 5 rows in ")
    assert other_family == [(store, "team-runs")]
    assert main(["projections", "rebuild", "nope", "--store", store]) == 2
    assert "known: journal-chains, agent-runs, team-runs" in capsys.readouterr().err


def test_a_family_whose_log_is_missing_is_left_out_unless_all_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(url: str) -> list[_Status]:
        raise StoreUnavailableError(f"{url} holds no storage log")

    families = [*projection_admin.FAMILIES, Family(("x",), missing, lambda u, n, p: "")]
    monkeypatch.setattr(projection_admin, "FAMILIES", families)
    store = _store(tmp_path, capsys)
    assert [s.name for s in projection_admin.statuses(store)] == ["journal-chains"]
    assert projection_admin.rebuild_all(store) == ("journal-chains: 0 revisions of 0 artifacts",)
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    with pytest.raises(StoreUnavailableError, match="holds no log 'journal_events'"):
        projection_admin.statuses(f"sqlite://{other}")
