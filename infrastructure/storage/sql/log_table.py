"""The storage log as a movable log: ``storage_events`` and the tables derived from it."""

from __future__ import annotations

from nenjim.infrastructure.log.transfer import EventTable
from nenjim.infrastructure.storage.sql.dialect import TABLE_NAMES
from nenjim.infrastructure.store.versions import EVENTS_COMPONENT

STORAGE_EVENTS = EventTable(
    log="storage",
    table=TABLE_NAMES["events"],
    version_component=EVENTS_COMPONENT,
    identity_component=None,
    companions=tuple(TABLE_NAMES[name] for name in ("records", "heads", "ids", "blobs")),
    sqlite_id="notification_id",
    sqlite_hex_ids=False,
)
"""Its version row is that of its exported columns; its inline tables are rebuilt from the
events on import (the repair's rewrite)."""
