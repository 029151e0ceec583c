"""``nenjim storage retain``: policies given on the command line purge what they drop, one
line or one JSON object, the documented exit codes, and never a store created."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from nenjim.cli import main
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage import AppendEntry, DurableRecord, open_backend

OWNER = "owner-1"


def _snapshot(value: str) -> dict[str, object]:
    return {"fields": {"x": value}, "phase": None}


@pytest.fixture
def store(nenjim_durable_store_url: str) -> str:
    """A store with two Workflow states and one agent journal of five entries."""
    persistence = Persistence.open(nenjim_durable_store_url)
    try:
        for name in ("wf-1", "wf-2"):
            persistence.workflow_states.save(name, expected_revision=None, snapshot=_snapshot(name))
    finally:
        persistence.close()
    backend = open_backend(nenjim_durable_store_url, CATALOG)
    try:
        view = backend.view
        root = DurableRecord("test.root", "1.0", {})
        view.records("agent.roots").insert(key=OWNER, revision=0, attributes={}, record=root)
        entries = [
            AppendEntry(id=f"e{n}", record=DurableRecord("test.entry", "1.0", {"n": n}))
            for n in range(5)
        ]
        view.streams("agent.journal").append(stream=OWNER, expected_head=0, entries=entries)
    finally:
        backend.close()
    return nenjim_durable_store_url


def _journal(store: str) -> list[int]:
    backend = open_backend(store, CATALOG)
    try:
        return [
            entry.position for entry in backend.view.streams("agent.journal").read(stream=OWNER)
        ]
    finally:
        backend.close()


def test_keep_last_purges_the_older_entries_of_each_stream(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "retain", "--store", store, "--keep-last", "agent.journal=2"]) == 0

    out = capsys.readouterr().out
    assert out.startswith("retain OK: ")
    assert out.endswith(": purged 1 key(s), 3 event(s)\n")
    assert _journal(store) == [4, 5]
    assert main(["storage", "audit", "--store", store]) == 0


def test_max_age_purges_the_records_last_written_longer_ago(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    time.sleep(1.05)
    persistence = Persistence.open(store)
    try:
        persistence.workflow_states.save("wf-3", expected_revision=None, snapshot=_snapshot("3"))
    finally:
        persistence.close()

    assert (
        main(["storage", "retain", "--store", store, "--max-age", "workflow.states=1s", "--json"])
        == 0
    )

    report = json.loads(capsys.readouterr().out)
    assert [(p["resource"], p["key"], p["events"]) for p in report["purges"]] == [
        ("workflow.states", "wf-1", 1),
        ("workflow.states", "wf-2", 1),
    ]
    assert report["skipped"] == []
    assert set(report) == {"store", "purges", "skipped"}
    persistence = Persistence.open(store)
    try:
        assert persistence.workflow_states.load("wf-3") is not None
    finally:
        persistence.close()


def test_without_policies_nothing_is_purged(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "retain", "--store", store]) == 0
    assert capsys.readouterr().out.endswith(": purged 0 key(s), 0 event(s)\n")
    assert _journal(store) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--keep-last", "no.such=2"], "no resource no.such in the store's catalog"),
        (["--keep-last", "workflow.states=2"], "a records policy is max_age"),
        (["--max-age", "agent.journal=1d"], "stream entries carry no time"),
        (["--max-age", "workflow.states=3x"], "argument --max-age: not a duration: '3x'"),
        (["--keep-last", "agent.journal=0"], "argument --keep-last: keep_last must be"),
        (["--keep-last", "agent.journal=two"], "argument --keep-last: not a count: 'two'"),
        (["--keep-last", "agent.journal"], "expected RESOURCE=VALUE"),
        (
            ["--keep-last", "agent.journal=1", "--keep-last", "agent.journal=2"],
            "a second policy for agent.journal",
        ),
    ],
)
def test_a_policy_refused_is_bad_usage_and_purges_nothing(
    store: str, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "retain", "--store", store, *arguments]) == 2

    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert _journal(store) == [1, 2, 3, 4, 5]


def test_a_missing_store_is_refused_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "missing.db"

    assert main(["storage", "retain", "--store", f"sqlite:{path}"]) == 3

    assert not path.exists()
    assert capsys.readouterr().err.count("\n") == 1


def test_memory_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "retain", "--store", "memory:"]) == 2
    assert "apply retention to" in capsys.readouterr().err
