"""The kit's own fixture resources: neutral copies of the shapes the contract exercises.

They mirror the Agent schema (a self-anchored root, executions guarded through
an immutable ``owner`` attribute with a conditional ``one_active_owner``
constraint, a journal stream guarded through its name), the content blobs, an
unguarded workflow resource and an unrelated ``inventory.items`` resource with
nullable typed attributes. A backend under test receives exactly
:data:`FIXTURE_RESOURCES` (the identical objects) unless a test says otherwise.
"""

from __future__ import annotations

from infrastructure.storage import DurableRecord, Resource

ROOTS_ID = "agent.roots"
EXECUTIONS_ID = "agent.executions"
JOURNAL_ID = "agent.journal"
CONTENT_BLOBS_ID = "content.blobs"
WORKFLOW_STATES_ID = "workflow.states"
INVENTORY_ITEMS_ID = "inventory.items"

OWNER = "owner-1"
"""The owner (an ``agent.roots`` key) most tests write under."""


def roots_resource() -> Resource:
    """``agent.roots``: records anchored to themselves by key."""
    return Resource(ROOTS_ID, "records", guard={"resource": ROOTS_ID, "via": "key"})


def executions_resource() -> Resource:
    """``agent.executions``: at most one active row per owner, guarded by the owner's root."""
    return Resource(
        EXECUTIONS_ID,
        "records",
        attributes={"owner": "string", "active": "boolean"},
        immutable_attributes=("owner",),
        indexes={"owner": ("owner",), "owner_active": ("owner", "active")},
        unique=({"name": "one_active_owner", "fields": ("owner",), "where": {"active": True}},),
        guard={"resource": ROOTS_ID, "via": "owner"},
    )


def journal_resource() -> Resource:
    """``agent.journal``: one stream per owner, guarded by the owner's root."""
    return Resource(JOURNAL_ID, "streams", guard={"resource": ROOTS_ID, "via": "stream"})


def content_blobs_resource() -> Resource:
    """``content.blobs``: write-once blobs with an integer attribute."""
    return Resource(CONTENT_BLOBS_ID, "blobs", attributes={"canonicalization_version": "integer"})


def workflow_states_resource() -> Resource:
    """``workflow.states``: plain records without a guard."""
    return Resource(WORKFLOW_STATES_ID, "records")


def inventory_items_resource() -> Resource:
    """``inventory.items``: nullable indexed ``code`` that is unique when set, typed attributes."""
    return Resource(
        INVENTORY_ITEMS_ID,
        "records",
        attributes={
            "code": "nullable_string",
            "label": "string",
            "quantity": "integer",
            "reserved": "nullable_integer",
            "available": "boolean",
            "flagged": "nullable_boolean",
        },
        indexes={"code": ("code",), "available": ("available",)},
        unique=({"name": "unique_code", "fields": ("code",), "where": {}},),
    )


ROOTS = roots_resource()
EXECUTIONS = executions_resource()
JOURNAL = journal_resource()
CONTENT_BLOBS = content_blobs_resource()
WORKFLOW_STATES = workflow_states_resource()
INVENTORY_ITEMS = inventory_items_resource()

FIXTURE_RESOURCES: tuple[Resource, ...] = (
    ROOTS,
    EXECUTIONS,
    JOURNAL,
    CONTENT_BLOBS,
    WORKFLOW_STATES,
    INVENTORY_ITEMS,
)
"""Every resource the kit registers, in dependency order (anchors first)."""


def opaque_record(payload: dict[str, object] | None = None) -> DurableRecord:
    """An envelope no driver may look into (``unrelated.envelope`` 0.1)."""
    return DurableRecord(
        "unrelated.envelope", "0.1", {"status": "ignored"} if payload is None else payload
    )
