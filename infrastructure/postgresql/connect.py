"""One direct connection before a pool opens: a failure names its cause, at once.

A ``psycopg_pool`` pool retries failed connections in the background and
only reports "couldn't get a connection after N sec"; the reason (refused,
unknown database, authentication) goes to a log record. Connecting once,
directly, surfaces libpq's own message instead. This module imports psycopg:
only PostgreSQL stores load it.
"""

from __future__ import annotations

import psycopg

from nenjim.infrastructure.store.errors import StoreUnavailableError


def check_reachable(conninfo: str, where: str) -> None:
    """Connect once with ``conninfo``; if that fails, ``StoreUnavailableError`` naming
    ``where`` (the store as messages show it) and libpq's reason."""
    try:
        psycopg.connect(conninfo, autocommit=True).close()
    except psycopg.Error as error:
        raise StoreUnavailableError(f"cannot connect to {where}: {one_line(error)}") from None


def one_line(error: BaseException) -> str:
    """The error's message with its lines (libpq adds hints on new lines) joined by ``; ``."""
    lines = [line.strip() for line in str(error).splitlines()]
    return "; ".join(line for line in lines if line)
