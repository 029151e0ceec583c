"""Store URLs: ``memory:``, ``sqlite:///abs/path.db``, ``sqlite:relative.db``, ``postgresql://...``.

A URL becomes the ``eventsourcing`` environment that opens the store. When no
URL is given, ``NENJIM_STORE_URL`` is read; without it the store is in memory.

A PostgreSQL URL is a libpq connection URI: every libpq parameter
(``sslmode``, ``connect_timeout``, ``application_name``, ``host=/socket/dir``,
...) is handed to psycopg's conninfo parser, which refuses unknown ones. Our
own options are taken out of the query first: ``schema`` (default
``public``, created when missing), ``pool_size`` and ``max_overflow``. Absent
from the URL, the host is ``127.0.0.1``, the port 5432, the user
``postgres`` and ``connect_timeout`` 10 seconds; a database name is required.
Parsing a PostgreSQL URL needs psycopg, which only the ``postgres`` extra
installs: nothing here imports it for the other kinds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from infrastructure.log.errors import StoreUnavailableError

MEMORY_URL = "memory:"
STORE_URL_VARIABLE = "NENJIM_STORE_URL"
# The libpq conninfo string of a PostgreSQL store (our own environment key).
POSTGRES_CONNINFO = "NENJIM_POSTGRES_CONNINFO"
# The recorders' factories, by topic: eventsourcing imports only the one a URL needs.
POPO_FACTORY = "infrastructure.log.popo:ClaimingPOPOFactory"
SQLITE_FACTORY = "infrastructure.log.sqlite:ClaimingSQLiteFactory"
POSTGRES_FACTORY = "infrastructure.log.postgres:ClaimingPostgresFactory"
INSTALL_POSTGRES = "PostgreSQL stores need psycopg: pip install 'nenjim[postgres]'"
_OUR_OPTIONS = {
    "schema": "POSTGRES_SCHEMA",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
}
_DEFAULTS = {"host": "127.0.0.1", "port": "5432", "user": "postgres", "connect_timeout": "10"}


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
        return StoreLocation("postgresql", url, _postgres_env(url))
    raise UnsupportedStoreError(
        f"unsupported store URL {redact(url)!r}: expected 'memory:', 'sqlite:///abs/path.db', "
        "'sqlite:relative.db' or 'postgresql://user@host:port/dbname'"
    )


def redact(url: str) -> str:
    """``url`` with the password of its authority (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{name}:***@{host}"))


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
        "PERSISTENCE_MODULE": SQLITE_FACTORY,
        "SQLITE_DBNAME": str(path),
        "SQLITE_LOCK_TIMEOUT": "30",
    }


def _postgres_env(url: str) -> dict[str, str]:
    try:
        from psycopg import Error as PsycopgError  # noqa: PLC0415 - the postgres extra
        from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415
    except ImportError:
        raise StoreUnavailableError(f"{redact(url)}: {INSTALL_POSTGRES}") from None
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    libpq: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in _OUR_OPTIONS:
            ours[_OUR_OPTIONS[key]] = value
        else:
            libpq.append((key, value))
    # quote, not urlencode's default quote_plus: libpq reads "+" as a plus, not a space.
    query = urlencode(libpq, quote_via=quote)
    try:
        params = conninfo_to_dict(urlunsplit(parts._replace(query=query)))
    except PsycopgError as error:
        reason = " ".join(str(error).split())  # libpq ends its messages with a newline
        raise UnsupportedStoreError(f"invalid PostgreSQL URL {redact(url)!r}: {reason}") from None
    if not params.get("dbname"):
        raise UnsupportedStoreError(f"invalid PostgreSQL URL {redact(url)!r}: no database name")
    for key, value in _DEFAULTS.items():
        params.setdefault(key, value)
    timeout = str(params["connect_timeout"])
    _check_count(url, "connect_timeout", timeout, 1)
    _check_count(url, "pool_size", ours.get("POSTGRES_POOL_SIZE", "1"), 1)
    _check_count(url, "max_overflow", ours.get("POSTGRES_MAX_OVERFLOW", "0"), 0)
    if ours.get("POSTGRES_SCHEMA") == "":
        raise UnsupportedStoreError(f"invalid PostgreSQL URL {redact(url)!r}: empty schema")
    return {
        "PERSISTENCE_MODULE": POSTGRES_FACTORY,
        POSTGRES_CONNINFO: make_conninfo(**{k: str(v) for k, v in params.items()}),
        # eventsourcing's factory insists on these keys; the conninfo above is what connects.
        "POSTGRES_DBNAME": str(params["dbname"]),
        "POSTGRES_HOST": str(params["host"]),
        "POSTGRES_PORT": str(params["port"]),
        "POSTGRES_USER": str(params["user"]),
        "POSTGRES_PASSWORD": str(params.get("password", "")),
        "POSTGRES_CONNECT_TIMEOUT": timeout,
        "POSTGRES_POOL_SIZE": "4",
        "POSTGRES_MAX_OVERFLOW": "12",
        "ORIGINATOR_ID_TYPE": "uuid",
        **ours,
    }


def _check_count(url: str, option: str, value: str, least: int) -> None:
    if not value.isdigit() or int(value) < least:
        raise UnsupportedStoreError(
            f"invalid PostgreSQL URL {redact(url)!r}: {option} must be an integer >= {least}, "
            f"not {value!r}"
        )
