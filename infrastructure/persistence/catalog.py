"""The resource catalog: every storage resource of Persistence, in composition order.

The domain's values know nothing of storage; this module says where each
kind of value is kept. A backend must be built from these very objects (the
storage layer refuses equal-looking copies). Resource ids are stored in
every row and event: they never change.
"""

from __future__ import annotations

from nenjim.infrastructure.storage import Resource

ROOTS = Resource("agent.roots", "records", guard={"resource": "agent.roots", "via": "key"})
"""Agent roots, keyed by ``agent_id``; each row anchors its own Agent."""

EXECUTIONS = Resource(
    "agent.executions",
    "records",
    attributes={"owner": "string", "active": "boolean"},
    immutable_attributes=("owner",),
    indexes={"owner": ("owner",), "owner_active": ("owner", "active")},
    unique=({"name": "one_active_owner", "fields": ("owner",), "where": {"active": True}},),
    guard={"resource": "agent.roots", "via": "owner"},
)
"""Agent executions, keyed by ``execution_id``; at most one active row per owning Agent."""

JOURNAL = Resource("agent.journal", "streams", guard={"resource": "agent.roots", "via": "stream"})
"""One journal stream per Agent (stream name = ``agent_id``, entry id = ``record_id``)."""

HANDOFFS = Resource("handoff.states", "records", attributes={"active_agent_id": "string"})
"""Handoff states, keyed by ``main_agent_id``."""

CONTENTS = Resource("content.blobs", "blobs", attributes={"canonicalization_version": "integer"})
"""Content-addressed blobs, keyed by ``sha256:<hex>`` of their bytes; no envelope."""

TEAMS = Resource("team.roots", "records", guard={"resource": "team.roots", "via": "key"})
"""Team roots, keyed by ``team_id``; each row anchors its own Team."""

TEAM_EXECUTIONS = Resource(
    "team.executions",
    "records",
    attributes={"owner": "string", "active": "boolean"},
    immutable_attributes=("owner",),
    indexes={"owner": ("owner",), "owner_active": ("owner", "active")},
    unique=({"name": "one_active_owner", "fields": ("owner",), "where": {"active": True}},),
    guard={"resource": "team.roots", "via": "owner"},
)
"""Team executions, keyed by ``team_execution_id``; at most one active row per owning Team."""

WORKFLOWS = Resource("workflow.states", "records")
"""Workflow states, keyed by ``workflow_instance_id``; no attributes and no guard."""

CATALOG: tuple[Resource, ...] = (
    ROOTS,
    EXECUTIONS,
    JOURNAL,
    HANDOFFS,
    CONTENTS,
    TEAMS,
    TEAM_EXECUTIONS,
    WORKFLOWS,
)
"""Every resource, in composition order."""
