"""Store URLs: ``memory:``, ``sqlite:///abs/path.db``, ``sqlite:relative.db``, ``postgresql://...``.

A URL becomes the ``eventsourcing`` environment that opens the store. When no
URL is given, ``NENJIM_STORE_URL`` is read; without it the store is in memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

MEMORY_URL = "memory:"
STORE_URL_VARIABLE = "NENJIM_STORE_URL"
_POOL_OPTIONS = {"pool_size": "POSTGRES_POOL_SIZE", "max_overflow": "POSTGRES_MAX_OVERFLOW"}


class UnsupportedStoreError(ValueError):
    """A store URL that names no store this build can open, or is malformed."""


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """Where a log lives: ``kind`` is ``memory``, ``sqlite`` or ``postgresql``."""

    kind: str
    url: str
    env: dict[str, str]

    @property
    def is_durable(self) -> bool:
        """True unless the log lives only in this process."""
        return self.kind != "memory"


def resolve_store_url(url: str | None) -> StoreLocation:
    """Parse ``url`` (``None``: ``$NENJIM_STORE_URL``, else ``memory:``)."""
    if url is None:
        url = os.environ.get(STORE_URL_VARIABLE) or MEMORY_URL
    if url == MEMORY_URL:
        return StoreLocation("memory", url, {"PERSISTENCE_MODULE": "eventsourcing.popo"})
    if url.startswith("sqlite:"):
        return StoreLocation("sqlite", url, _sqlite_env(url))
    if url.startswith(("postgresql://", "postgres://")):
        return StoreLocation("postgresql", url, _postgres_env(url))
    raise UnsupportedStoreError(
        f"unsupported store URL {url!r}: expected 'memory:', 'sqlite:///abs/path.db', "
        "'sqlite:relative.db' or 'postgresql://user@host:port/dbname'"
    )


def _sqlite_env(url: str) -> dict[str, str]:
    rest = url.removeprefix("sqlite:")
    if rest.startswith("//"):
        if not rest.startswith("///"):
            raise UnsupportedStoreError(
                f"invalid SQLite URL {url!r}: expected 'sqlite:///absolute/path.db'"
            )
        # sqlite:///abs/path.db; a fourth slash (sqlite:////abs) is tolerated.
        path = Path("/" + unquote(rest[3:]).lstrip("/"))
    else:
        path = Path(unquote(rest)).absolute()
    if not rest or path.name == "":
        raise UnsupportedStoreError(f"invalid SQLite URL {url!r}: no database file named")
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(path),
        "SQLITE_LOCK_TIMEOUT": "30",
    }


def _postgres_env(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname:
        raise UnsupportedStoreError(f"invalid PostgreSQL URL {url!r}: no database name")
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_POOL_SIZE": "4",
        "POSTGRES_MAX_OVERFLOW": "12",
        "POSTGRES_CONNECT_TIMEOUT": "10",
        "ORIGINATOR_ID_TYPE": "uuid",
    }
    for key, values in parse_qs(parts.query).items():
        if key == "schema":
            env["POSTGRES_SCHEMA"] = values[-1]
        elif key in _POOL_OPTIONS:
            env[_POOL_OPTIONS[key]] = values[-1]
        else:
            raise UnsupportedStoreError(
                f"invalid PostgreSQL URL {url!r}: unknown option {key!r} "
                "(expected schema, pool_size, max_overflow)"
            )
    return env
