"""Store URLs: ``memory:``, ``sqlite:///abs/path.db``, ``sqlite:relative.db``, ``postgresql://...``.

A URL becomes the ``eventsourcing`` environment that opens the store. When no
URL is given, ``NENJIM_STORE_URL`` is read; without it the store is in memory.

This is the one parser of store URLs: the Journal's log and durable state
open stores through it, so both refuse the same URLs, with the same
``UnsupportedStoreError``, before anything is opened or created. An SQLite
URL names one file and takes no parameters (a ``?`` or ``#`` in a file name
is written ``%3F``, ``%23``). PostgreSQL URLs are parsed by
:mod:`nenjim.infrastructure.postgresql.urls`, which needs psycopg (the
``postgres`` extra): nothing here imports it for the other kinds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from nenjim.infrastructure.store.errors import StoreUnavailableError

MEMORY_URL = "memory:"
STORE_URL_VARIABLE = "NENJIM_STORE_URL"
# The libpq conninfo string of a PostgreSQL store (our own environment key).
POSTGRES_CONNINFO = "NENJIM_POSTGRES_CONNINFO"
# The recorders' factories, by topic: eventsourcing imports only the one a URL needs.
POPO_FACTORY = "nenjim.infrastructure.memory.log:ClaimingPOPOFactory"
SQLITE_FACTORY = "nenjim.infrastructure.sqlite.log:ClaimingSQLiteFactory"
POSTGRES_FACTORY = "nenjim.infrastructure.postgresql.log:ClaimingPostgresFactory"
INSTALL_POSTGRES = "PostgreSQL stores need psycopg: pip install 'nenjim[postgres]'"

NAME_BYTES = 63
"""PostgreSQL keeps the first 63 bytes of a name and drops the rest, silently."""

_PASSWORD_PARAMETER = re.compile(r"((?:^|&)password=)[^&]*")
# Plain lowercase identifiers: the same name quoted or not, in SQL and in psql alike.
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]*")


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

    @property
    def display(self) -> str:
        """The URL as messages show it: a password is replaced by ``***``."""
        return redact(self.url)

    @property
    def where(self) -> str:
        """The store as messages name it (a PostgreSQL password is never shown)."""
        if self.kind == "sqlite":
            return f"SQLite store {self.env['SQLITE_DBNAME']}"
        return f"store {self.display}"


def resolve_store_url(url: str | None) -> StoreLocation:
    """Parse ``url`` (``None``: ``$NENJIM_STORE_URL``, else ``memory:``)."""
    if url is None:
        url = os.environ.get(STORE_URL_VARIABLE) or MEMORY_URL
    if url == MEMORY_URL:
        return StoreLocation("memory", url, {"PERSISTENCE_MODULE": POPO_FACTORY})
    if url.startswith("sqlite:"):
        return StoreLocation("sqlite", url, _sqlite_env(url))
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from nenjim.infrastructure.postgresql.urls import postgres_env  # noqa: PLC0415
        except ImportError:
            raise StoreUnavailableError(f"{redact(url)}: {INSTALL_POSTGRES}") from None
        return StoreLocation("postgresql", url, postgres_env(url))
    raise UnsupportedStoreError(
        f"unsupported store URL {redact(url)!r}: expected 'memory:', 'sqlite:///abs/path.db', "
        "'sqlite:relative.db' or 'postgresql://user@host:port/dbname'"
    )


def schema_problem(schema: str) -> str | None:
    """Why ``schema`` cannot name a store's PostgreSQL schema, or ``None`` if it can.

    A schema name is a lowercase letter or ``_``, then lowercase letters,
    digits and ``_``, at most 63 bytes; the names PostgreSQL keeps for itself
    (``pg_...``, ``information_schema``) are refused.
    """
    if schema.startswith("pg_") or schema == "information_schema":
        return f"schema {schema!r} is reserved by PostgreSQL"
    if not _SCHEMA.fullmatch(schema) or len(schema) > NAME_BYTES:
        return (
            f"schema {schema!r} is not a lowercase letter or '_' followed by lowercase "
            f"letters, digits and '_', at most {NAME_BYTES} in all"
        )
    return None


def check_schema(schema: str) -> str:
    """``schema``, if it can name a store's schema (:func:`schema_problem`); else
    ``UnsupportedStoreError``."""
    problem = schema_problem(schema)
    if problem is not None:
        raise UnsupportedStoreError(f"invalid PostgreSQL {problem}")
    return schema


def redact(url: str) -> str:
    """``url`` with its passwords (before the ``@``, and a ``password=`` parameter)
    replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password:
        user, _, host = parts.netloc.rpartition("@")
        name = user.split(":", 1)[0]
        url = urlunsplit(parts._replace(netloc=f"{name}:***@{host}"))
    head, mark, query = url.partition("?")
    return head + mark + _PASSWORD_PARAMETER.sub(r"\1***", query)


def _sqlite_env(url: str) -> dict[str, str]:
    def invalid(reason: str) -> UnsupportedStoreError:
        return UnsupportedStoreError(f"invalid SQLite URL {url!r}: {reason}")

    rest = url.removeprefix("sqlite:")
    if "?" in rest or "#" in rest:
        raise invalid("an SQLite URL takes no parameters (write '?' as %3F, '#' as %23)")
    if rest.startswith("//"):
        if not rest.startswith("///"):
            raise invalid("expected 'sqlite:///absolute/path.db'")
        # sqlite:///abs/path.db; a fourth slash (sqlite:////abs) is tolerated.
        rest = "/" + rest[3:].lstrip("/")
    try:
        name = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        raise invalid("its percent-encoded bytes are not UTF-8") from None
    if "\x00" in name:
        raise invalid("a file name cannot hold a NUL (%00)")
    if name.rpartition("/")[2] in ("", ".", ".."):
        raise invalid("no database file named")
    return {
        "PERSISTENCE_MODULE": SQLITE_FACTORY,
        "SQLITE_DBNAME": str(Path(name).absolute()),
        "SQLITE_LOCK_TIMEOUT": "30",
    }
