"""The storage log's projections as earlier builds kept them, until a store is opened.

Earlier builds tracked the storage log's projections in a table of their
own, ``storage_projection_positions`` (a row per generation: its position
``(transaction_id, notification_id)`` and whether it is live), each
generation's rows in a ``storage_projection_<name>_<generation>`` table. A
status reads the live position from there while the store holds no row of
the projection in ``nenjim_projections``. Opening the projection drops those
tables; its fold starts again from the log, which answers the same.
"""

from __future__ import annotations

from typing import Any, cast

from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.follow.schema import has_table, qualified
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session

POSITIONS = "storage_projection_positions"
_ROWS_PREFIX = "storage_projection_"


def legacy_position(session: Session, name: str) -> int | None:
    """How many events of the log the live generation of ``name`` applied, or ``None``."""
    if not has_table(session, POSITIONS):
        return None
    live = session.one(
        f"SELECT transaction_id, notification_id FROM {qualified(session.dialect, POSITIONS)} "
        "WHERE name = ? AND live = 1",
        (name,),
    )
    if live is None:
        return None
    if session.dialect.dense_notification_ids:
        return int(live[1])
    row = session.one(
        "SELECT count(*) FROM {events} "
        "WHERE (transaction_id, notification_id) <= (?::text::xid8, ?)",
        (int(live[0]), int(live[1])),
    )
    return 0 if row is None else int(row[0])


def drop_legacy_projections(backend: Backend) -> None:
    """Drop what earlier builds tracked (nothing on a store that holds none of it)."""
    driver = backend.driver
    if not isinstance(driver, SqlDriver):
        return
    with driver.transaction(None) as session:
        if not has_table(session, POSITIONS):
            return
        if session.dialect.dense_notification_ids:
            found = session.all(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?",
                (len(_ROWS_PREFIX), _ROWS_PREFIX),
            )
        else:
            found = session.all(
                "SELECT tablename FROM pg_tables WHERE schemaname = ? AND left(tablename, ?) = ?",
                (cast(Any, session.dialect).schema, len(_ROWS_PREFIX), _ROWS_PREFIX),
            )
        for (table,) in found:
            session.execute(f"DROP TABLE {qualified(session.dialect, str(table))}")
