"""Every value the repositories accept reads back equal, on every backend; and a store an
earlier build wrote a whole float past 2^53 into (then refused by every read) reads back,
audits clean, repairs, moves and takes new writes.

Canonical JSON writes ``1e16`` as ``10000000000000000``, as it always has: the stored
bytes do not change, the reading does. A whole float within ±(2^53-1) reads back as an
``int`` (equal), every other number as what was written.
"""

from __future__ import annotations

import enum
import io
import itertools
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from json_values import VALUES, same

from nenjim.admin.transfer import export_store, import_store
from nenjim.cli import main as nenjim
from nenjim.domain.agents import AgentRoot
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage.audit import audit_store

from .conftest import Store

VALUE_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    print_blob=True,
)

WF = "wf-poisoned"
PLACEHOLDER = "0.5"
OLD_FORM = "10000000000000000"
"""How every build writes the float 1e16 (the JCS form): plain digits below 1e21."""


def test_every_workflow_value_and_json_content_reads_back_equal(store: Store) -> None:
    persistence = store.persistence
    saved: dict[str, Any] = {}
    # Each call its own instance, so a failing example replayed meets no earlier write.
    numbers = itertools.count()

    @VALUE_SETTINGS
    @given(value=VALUES)
    def save_and_load(value: Any) -> None:
        instance = f"wf-{next(numbers)}"
        persistence.workflow_states.save(
            instance, expected_revision=None, snapshot={"fields": {"v": value}, "phase": None}
        )
        loaded = persistence.workflow_states.load(instance)
        assert loaded is not None
        same(loaded["snapshot"]["fields"]["v"], value)
        (revision,) = persistence.workflow_states.history(instance)
        same(revision.value["fields"]["v"], value)
        same(persistence.contents.fetch_json(persistence.contents.put_json(value)), value)
        saved[instance] = value

    save_and_load()
    if store.durable:
        reopened = store.reopen()
        for instance, value in saved.items():
            loaded = reopened.workflow_states.load(instance)
            assert loaded is not None
            same(loaded["snapshot"]["fields"]["v"], value)


class Level(enum.IntEnum):
    """An integer enum that prints as its name, as applications often define them."""

    LOW = 1

    def __str__(self) -> str:
        return self.name


def test_metadata_holding_an_int_subclass_reads_back_as_its_number(store: Store) -> None:
    """The stored text is the number, not what the subclass prints (which no read could
    parse)."""
    persistence = store.persistence
    persistence.agents.create(
        AgentRoot.create("agent", definition_id="d", metadata={"level": Level.LOW, "big": 1e16})
    )
    loaded = persistence.agents.load("agent")
    assert dict(loaded.metadata) == {"level": 1, "big": 1e16}
    assert type(loaded.metadata["level"]) is int
    assert type(loaded.metadata["big"]) is float


def _execute(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """``sql`` (``?`` placeholders) on a connection of the test's own, outside the engine."""
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            return conn.execute(sql, params).fetchall()
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        cursor = conn.execute(sql.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description else []


def _poison(url: str) -> None:
    """Rewrite the workflow's row and the event that wrote it to hold 1e16 exactly as an
    earlier build stored it (that build refused the store on every read)."""
    ((payload,),) = _execute(url, "SELECT payload FROM storage_records WHERE key = ?", (WF,))
    old_payload = str(payload).replace(PLACEHOLDER, OLD_FORM)
    assert old_payload == (
        '{"snapshot":{"fields":{"nested":[{"x":10000000000000000}],"x":10000000000000000},'
        '"phase":null},"workflow_instance_id":"wf-poisoned","workflow_revision":1}'
    )
    _execute(url, "UPDATE storage_records SET payload = ? WHERE key = ?", (old_payload, WF))
    events = _execute(url, "SELECT notification_id, state FROM storage_events")
    ((notification_id, state),) = [
        (nid, bytes(state)) for nid, state in events if str(payload).encode() in bytes(state)
    ]
    _execute(
        url,
        "UPDATE storage_events SET state = ? WHERE notification_id = ?",
        (state.replace(str(payload).encode(), old_payload.encode()), notification_id),
    )


def test_a_store_holding_a_whole_float_past_2_53_reads_back(
    durable_store: Store,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    durable_store.persistence.workflow_states.save(
        WF,
        expected_revision=None,
        snapshot={"fields": {"x": 0.5, "nested": [{"x": 0.5}]}, "phase": None},
    )
    durable_store.persistence.close()
    url = durable_store.url
    _poison(url)
    expected = {"fields": {"x": 1e16, "nested": [{"x": 1e16}]}, "phase": None}

    persistence = durable_store.reopen()
    loaded = persistence.workflow_states.load(WF)
    assert loaded is not None
    same(loaded["snapshot"], expected)
    (revision,) = persistence.workflow_states.history(WF)
    same(revision.value, expected)

    assert audit_store(url, CATALOG).ok
    assert nenjim(["storage", "audit", "--store", url]) == 0
    assert nenjim(["storage", "repair", "--store", url]) == 0
    capsys.readouterr()

    # It moves: an export imported into the other kind of store reads back the same.
    exported = io.BytesIO()
    export_store(url, exported)
    exported.seek(0)
    if durable_store.kind == "sqlite":
        target = request.getfixturevalue("postgres_schema_url")
    else:
        target = f"sqlite://{tmp_path / 'moved.db'}"
    import_store(target, exported, name="poisoned.jsonl")
    moved = Persistence.open(target)
    try:
        moved_state = moved.workflow_states.load(WF)
        assert moved_state is not None
        same(moved_state["snapshot"], expected)
    finally:
        moved.close()

    # And it takes new writes of what it read.
    assert persistence.workflow_states.save(WF, expected_revision=1, snapshot=expected) == 2
    history = persistence.workflow_states.history(WF)
    assert [entry.revision for entry in history] == [1, 2]
    for entry in history:
        same(entry.value, expected)
    assert audit_store(url, CATALOG).ok
