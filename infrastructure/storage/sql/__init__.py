"""The SQL storage driver shared by SQLite and PostgreSQL: records and streams on a log.

Tables (one set per database, or per PostgreSQL schema):

- ``storage_events``: the append-only log, with the columns of the
  ``eventsourcing`` recorder tables (``originator_id``,
  ``originator_version``, ``topic``, ``state``, ``notification_id``).
  Every mutation appends to it in the same transaction: record inserted,
  replaced or deleted (a tombstone), stream entries appended (one event
  each), stream deleted (a tombstone), blob put. Its primary key
  ``(originator_id, originator_version)`` is the optimistic CAS.
- inline projections written in that transaction: ``storage_records``,
  ``storage_stream_heads``, ``storage_stream_ids``, ``storage_blobs``;
- ``storage_generated_indexes``: the catalog's generated indexes;
- ``nenjim_schema``: the schema version (component ``storage``).

Notification ids are unique and increase with insertion, but unlike the
Journal's log they are not gap-free on PostgreSQL: a ``bigserial`` value is
spent by a rolled-back transaction or a lost CAS, and concurrent writers may
commit ids out of order. That is deliberate: numbering without gaps needs a
table-wide lock, which would serialise writers of different agents that
PostgreSQL can otherwise run concurrently. Readers must not treat a gap as
a missing event. (On SQLite, with one writer at a time, they are gap-free.)

Modules: ``dialect`` (what differs between the databases, as an interface;
each database's in ``sqlite_dialect`` and ``postgres_dialect``, imported
only with their driver), ``schema`` (DDL
and generated indexes), ``events`` (the log), ``records``, ``streams``,
``blobs``, ``codec`` (rows back to entries), ``session`` and ``driver``.
The databases' connection and transaction handling live in
``nenjim.infrastructure.sqlite.storage`` and ``nenjim.infrastructure.postgresql.storage``.
"""

from nenjim.infrastructure.storage.sql.driver import SqlDriver

__all__ = ["SqlDriver"]
