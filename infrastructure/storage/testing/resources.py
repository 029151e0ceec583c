"""The kit's own fixture resources: neutral copies of the shapes the contract exercises.

They mirror the Agent schema (a self-anchored root, executions guarded through
an immutable ``owner`` attribute with a conditional ``one_active_owner``
constraint, a journal stream guarded through its name), the content blobs, an
unguarded workflow resource and an unrelated ``inventory.items`` resource with
nullable typed attributes. A backend under test receives exactly
:data:`FIXTURE_RESOURCES` (the identical objects) unless a test says otherwise;
the guards contract adds :data:`GUARD_RESOURCES`' three.
"""

from __future__ import annotations

from nenjim.infrastructure.storage import DurableRecord, Resource

ROOTS_ID = "agent.roots"
EXECUTIONS_ID = "agent.executions"
JOURNAL_ID = "agent.journal"
CONTENT_BLOBS_ID = "content.blobs"
WORKFLOW_STATES_ID = "workflow.states"
INVENTORY_ITEMS_ID = "inventory.items"
SETTINGS_ID = "agent.settings"
TIERED_ROOTS_ID = "tiered.roots"
PLAIN_LOG_ID = "plain.log"

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


def settings_resource() -> Resource:
    """``agent.settings``: one row per owner, guarded by the root its own key names."""
    return Resource(
        SETTINGS_ID,
        "records",
        attributes={"theme": "string"},
        indexes={"theme": ("theme",)},
        guard={"resource": ROOTS_ID, "via": "key"},
    )


def tiered_roots_resource() -> Resource:
    """``tiered.roots``: roots anchored to themselves by key, with an indexed attribute."""
    return Resource(
        TIERED_ROOTS_ID,
        "records",
        attributes={"tier": "string"},
        indexes={"tier": ("tier",)},
        guard={"resource": TIERED_ROOTS_ID, "via": "key"},
    )


def plain_log_resource() -> Resource:
    """``plain.log``: streams without a guard."""
    return Resource(PLAIN_LOG_ID, "streams")


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

SETTINGS = settings_resource()
TIERED_ROOTS = tiered_roots_resource()
PLAIN_LOG = plain_log_resource()

GUARD_RESOURCES: tuple[Resource, ...] = (*FIXTURE_RESOURCES, SETTINGS, TIERED_ROOTS, PLAIN_LOG)
"""The fixture resources and one more of each guard kind they lack (a records resource
guarded by another's row its key names, a root with an index, unguarded streams), which
the guards contract registers."""


def opaque_record(payload: dict[str, object] | None = None) -> DurableRecord:
    """An envelope no driver may look into (``unrelated.envelope`` 0.1)."""
    return DurableRecord(
        "unrelated.envelope", "0.1", {"status": "ignored"} if payload is None else payload
    )
