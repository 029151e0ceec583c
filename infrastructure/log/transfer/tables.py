"""Where one log's events live, and how each database spells their rows."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class EventTable:
    """One log's events table, in the columns of the ``eventsourcing`` recorder tables.

    ``log`` is the log's name in an export. ``version_component`` is its row
    in ``nenjim_schema`` and ``identity_component`` its row in
    ``nenjim_identity`` (``None``: the log records no owner). ``companions``
    are the tables derived from the events, which an empty store must have
    empty too. On SQLite, ``sqlite_id`` is the column holding the
    notification id and ``sqlite_hex_ids`` says whether originator ids are
    stored as 32 hex digits (the ``eventsourcing`` recorder) or in the
    dashed form. ``schema`` is the PostgreSQL schema (SQLite has none).
    """

    log: str
    table: str
    version_component: str
    identity_component: str | None
    companions: tuple[str, ...]
    sqlite_id: str
    sqlite_hex_ids: bool
    schema: str = "public"

    def in_schema(self, schema: str) -> EventTable:
        """The same log in another PostgreSQL schema."""
        return replace(self, schema=schema)


def application_log(name: str) -> EventTable:
    """The events table of the log a ``LogApplication`` called ``name`` keeps.

    Its claims table is derived from the events (the log's owner re-derives
    it on import); its identity row is the owner's and travels.
    """
    events = f"{name}_events"
    return EventTable(
        log=name,
        table=events,
        version_component=events,
        identity_component=events,
        companions=(f"{name}_claims",),
        sqlite_id="rowid",
        sqlite_hex_ids=True,
    )
