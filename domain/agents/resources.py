"""Storage declarations of the Agent domain (catalog rows of ``agent.*`` and ``handoff.states``).

The one place in :mod:`domain.agents` that knows the storage layer.
"""

from __future__ import annotations

from infrastructure.storage import Resource

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
