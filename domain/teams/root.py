"""``TeamRoot``: the durable identity of one Team."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from nenjim.domain import durable_fields as f
from nenjim.immutable import immutable

TEAM_LIFECYCLE_STATUSES = frozenset({"idle", "active", "closed"})


@immutable
@dataclass(frozen=True, slots=True)
class TeamRoot(f.Revised):
    """The durable root of a Team (record type ``phronomy.team_root``).

    ``team_revision`` is the compare-and-swap revision of the row.
    Timestamps are aware UTC datetimes; ``metadata`` is a deep read-only
    JSON object.
    """

    _revision = "team_revision"
    _fixed = frozenset({"team_id", "created_at"})

    team_id: str = field(metadata=f.checked(f.identifier))
    team_definition_id: str = field(metadata=f.checked(f.text))
    team_definition_version: str = field(metadata=f.checked(f.text))
    team_revision: int = field(metadata=f.checked(f.count))
    lifecycle_status: str = field(metadata=f.checked(f.one_of(TEAM_LIFECYCLE_STATUSES)))
    created_at: datetime = field(metadata=f.checked(f.timestamp))
    updated_at: datetime = field(metadata=f.checked(f.timestamp))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))

    @classmethod
    def create(
        cls,
        team_id: str,
        *,
        definition_id: str,
        definition_version: str = "1",
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Self:
        """A new, idle root at revision 0."""
        now = f.utc_now() if created_at is None else created_at
        return cls(
            team_id=team_id,
            team_definition_id=definition_id,
            team_definition_version=definition_version,
            team_revision=0,
            lifecycle_status="idle",
            created_at=now,
            updated_at=now,
            metadata={} if metadata is None else metadata,
        )
