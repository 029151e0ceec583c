"""The resource catalog: exact declarations, composition order, and use with a backend."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.persistence import catalog, codecs
from nenjim.infrastructure.storage import AppendEntry, Resource, UniqueConstraintError

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

EXECUTION_SHAPE = {
    "attributes": {"owner": "string", "active": "boolean"},
    "immutable_attributes": ("owner",),
    "indexes": {"owner": ("owner",), "owner_active": ("owner", "active")},
    "unique": [{"name": "one_active_owner", "fields": ("owner",), "where": {"active": True}}],
}


def shape(resource: Resource) -> dict[str, object]:
    return {
        "attributes": dict(resource.attributes),
        "immutable_attributes": resource.immutable_attributes,
        "indexes": dict(resource.indexes),
        "unique": [
            {"name": c["name"], "fields": c["fields"], "where": dict(c["where"])}
            for c in resource.unique
        ],
    }


EMPTY: dict[str, object] = {
    "attributes": {},
    "immutable_attributes": (),
    "indexes": {},
    "unique": [],
}


def test_composition_order_and_kinds() -> None:
    assert [(r.id, r.kind) for r in catalog.CATALOG] == [
        ("agent.roots", "records"),
        ("agent.executions", "records"),
        ("agent.journal", "streams"),
        ("handoff.states", "records"),
        ("content.blobs", "blobs"),
        ("team.roots", "records"),
        ("team.executions", "records"),
        ("workflow.states", "records"),
    ]


def test_named_constants_are_the_catalog_objects() -> None:
    named = (
        catalog.ROOTS,
        catalog.EXECUTIONS,
        catalog.JOURNAL,
        catalog.HANDOFFS,
        catalog.CONTENTS,
        catalog.TEAMS,
        catalog.TEAM_EXECUTIONS,
        catalog.WORKFLOWS,
    )
    assert all(a is b for a, b in zip(named, catalog.CATALOG, strict=True))


@pytest.mark.parametrize(
    ("resource", "expected_shape", "guard"),
    [
        (catalog.ROOTS, EMPTY, {"resource": "agent.roots", "via": "key"}),
        (catalog.EXECUTIONS, EXECUTION_SHAPE, {"resource": "agent.roots", "via": "owner"}),
        (catalog.JOURNAL, EMPTY, {"resource": "agent.roots", "via": "stream"}),
        (
            catalog.HANDOFFS,
            {**EMPTY, "attributes": {"active_agent_id": "string"}},
            None,
        ),
        (
            catalog.CONTENTS,
            {**EMPTY, "attributes": {"canonicalization_version": "integer"}},
            None,
        ),
        (catalog.TEAMS, EMPTY, {"resource": "team.roots", "via": "key"}),
        (catalog.TEAM_EXECUTIONS, EXECUTION_SHAPE, {"resource": "team.roots", "via": "owner"}),
        (catalog.WORKFLOWS, EMPTY, None),
    ],
    ids=lambda value: value.id if isinstance(value, Resource) else "",
)
def test_declarations(
    resource: Resource, expected_shape: dict[str, object], guard: dict[str, str] | None
) -> None:
    assert shape(resource) == expected_shape
    assert (None if resource.guard is None else dict(resource.guard)) == guard


def test_value_modules_do_not_load_the_storage_layer() -> None:
    code = (
        "import sys, nenjim.domain.agents, nenjim.domain.teams, nenjim.domain.workflows\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('infrastructure'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class TestWithABackend:
    """The codecs' entries and attributes fit the declared resources."""

    def test_agent_rows_round_trip(self) -> None:
        backend = InMemoryBackend(resources=catalog.CATALOG)
        root = AgentRoot.create("agent-1", definition_id="def", created_at=T0)
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root, created_at=T0)
        view = backend.view
        stored_root = view.records(catalog.ROOTS).insert(
            key=root.agent_id,
            revision=root.agent_revision,
            attributes={},
            record=codecs.encode_agent_root(root),
        )
        stored_run = view.records(catalog.EXECUTIONS).insert(
            key=run.execution_id,
            revision=run.execution_revision,
            attributes=codecs.agent_execution_attributes(run),
            record=codecs.encode_agent_execution(run),
        )
        assert codecs.decode_agent_root(stored_root, agent_id="agent-1") == root
        assert codecs.decode_agent_execution(stored_run, active=True) == run
        second = AgentExecution.start("run-2", agent_id="agent-1", base=root)
        with pytest.raises(UniqueConstraintError):
            view.records(catalog.EXECUTIONS).insert(
                key=second.execution_id,
                revision=0,
                attributes=codecs.agent_execution_attributes(second),
                record=codecs.encode_agent_execution(second),
            )

    def test_journal_entries_round_trip(self) -> None:
        backend = InMemoryBackend(resources=catalog.CATALOG)
        root = AgentRoot.create("agent-1", definition_id="def")
        backend.view.records(catalog.ROOTS).insert(
            key="agent-1", revision=0, attributes={}, record=codecs.encode_agent_root(root)
        )
        records = [
            AgentJournalRecord.create(f"rec-{n}", agent_id="agent-1", kind="message").with_sequence(
                n
            )
            for n in (1, 2)
        ]
        stored = backend.view.streams(catalog.JOURNAL).append(
            stream="agent-1",
            expected_head=0,
            entries=[AppendEntry(r.record_id, codecs.encode_journal_record(r)) for r in records],
        )
        decoded = [codecs.decode_journal_record(e, agent_id="agent-1") for e in stored]
        assert decoded == records

    def test_coordination_rows_round_trip(self) -> None:
        backend = InMemoryBackend(resources=catalog.CATALOG)
        view = backend.view
        team = TeamRoot.create("team-1", definition_id="crew")
        run = TeamExecution.start("team-run-1", team_id="team-1")
        hand = HandoffState.create("main", active_agent_id="main")
        view.records(catalog.TEAMS).insert(
            key="team-1", revision=0, attributes={}, record=codecs.encode_team_root(team)
        )
        stored_run = view.records(catalog.TEAM_EXECUTIONS).insert(
            key=run.team_execution_id,
            revision=0,
            attributes=codecs.team_execution_attributes(run),
            record=codecs.encode_team_execution(run),
        )
        stored_hand = view.records(catalog.HANDOFFS).insert(
            key="main",
            revision=1,
            attributes=codecs.handoff_state_attributes(hand),
            record=codecs.encode_handoff_state(hand),
        )
        stored_flow = view.records(catalog.WORKFLOWS).insert(
            key="wf-1",
            revision=1,
            attributes={},
            record=codecs.encode_workflow_state(
                "wf-1", workflow_revision=1, snapshot={"fields": {"value": 1}, "phase": "pause"}
            ),
        )
        assert codecs.decode_team_execution(stored_run) == run
        assert codecs.decode_handoff_state(stored_hand) == hand
        state = codecs.decode_workflow_state(stored_flow, workflow_instance_id="wf-1")
        assert state.snapshot == {"fields": {"value": 1}, "phase": "pause"}
