"""Storage declarations of the Team domain (catalog rows of ``team.*``).

The one place in :mod:`domain.teams` that knows the storage layer.
"""

from __future__ import annotations

from infrastructure.storage import Resource

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
