"""Reading an SQL storage backend's tables directly, inside one of its own transactions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.session import Session


def sql_rows(backend: Backend, template: str, params: Sequence[object] = ()) -> list[Any]:
    """Rows of a statement template (``{events}``, ``{records}``, ...) on the backend's session."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        return session.all(template, params)


def log_stream(backend: Backend, originator: uuid.UUID) -> list[tuple[int, str, dict[str, Any]]]:
    """One log stream's ``(version, topic, state)`` events, in version order."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        rows = session.all(
            "SELECT originator_version, topic, state FROM {events} "
            "WHERE originator_id = ? ORDER BY originator_version",
            (session.dialect.originator(originator),),
        )
    return [
        (int(version), str(topic), events.decode_event(str(topic), state))
        for version, topic, state in rows
    ]
