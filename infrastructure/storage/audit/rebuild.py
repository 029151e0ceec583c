"""An SQL store filled from an imported storage log: tables first, inline rows from the log last.

An import copies ``storage_events`` row by row into an empty store, inside
one transaction of the caller's. The inline tables are not copied: they are
derived, and :func:`rebuild_inline_tables` writes them from the log with the
repair's own rewrite (every live row is a finding "log says X; table says
no row"), then audits once more. A log that breaks its own rules is refused
(``RepairRefusedError``) and the caller's transaction rolls back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nenjim.infrastructure.storage.audit.repair import RepairReport, repair_session
from nenjim.infrastructure.storage.audit.sessions import SqlStore
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import schema
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import Session


def storage_session(connection: Any, url: str) -> Session:
    """A storage session on the caller's open transaction on the store at ``url``."""
    return Session(connection, SqlStore.from_url(url).dialect)


def create_storage_tables(session: Session, resources: Sequence[Resource], where: str) -> None:
    """The storage tables and the catalog's generated indexes (idempotent; checks the version)."""
    schema.apply(session, Layout(session.dialect, resources), where)


def rebuild_inline_tables(
    session: Session, where: str, resources: Sequence[Resource]
) -> RepairReport:
    """Write every inline row the log implies, then audit; raise to roll the caller back."""
    return repair_session(session, where, resources)
