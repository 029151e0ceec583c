"""Store URLs: ``memory:``, ``sqlite:///abs/path.db``, ``sqlite:relative.db``, ``postgresql://...``.

A URL becomes the ``eventsourcing`` environment that opens the store. When no
URL is given, ``NENJIM_STORE_URL`` is read; without it the store is in memory.

This is the one parser of store URLs: the Journal's log and durable state
open stores through it, so both refuse the same URLs, with the same
``UnsupportedStoreError``, before anything is opened or created. Which kind
of store a URL names, and how its URL is read, is the kind's
(:mod:`nenjim.infrastructure.store.kinds`); a kind whose driver is not
installed (PostgreSQL's psycopg, the ``postgres`` extra) is a
``StoreUnavailableError`` saying how to install it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.kinds import StoreKind, kind_of_url, store_kinds

MEMORY_URL = "memory:"
STORE_URL_VARIABLE = "NENJIM_STORE_URL"
# The libpq conninfo string of a PostgreSQL store (our own environment key).
POSTGRES_CONNINFO = "NENJIM_POSTGRES_CONNINFO"

NAME_BYTES = 63
"""PostgreSQL keeps the first 63 bytes of a name and drops the rest, silently."""

_PASSWORD_PARAMETER = re.compile(r"((?:^|&)password=)[^&]*")
# Plain lowercase identifiers: the same name quoted or not, in SQL and in psql alike.
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]*")


class UnsupportedStoreError(ValueError):
    """A store URL that names no store this build can open, or is malformed."""


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """Where a log lives: a store of ``store_kind``, and the settings its URL gives."""

    store_kind: StoreKind
    url: str
    env: dict[str, str]

    @property
    def kind(self) -> str:
        """The name of the store's kind (``memory``, ``sqlite``, ``postgresql``)."""
        return self.store_kind.name

    @property
    def is_durable(self) -> bool:
        """True unless the log lives only in this process."""
        return self.store_kind.durable

    @property
    def display(self) -> str:
        """The URL as messages show it: a password is replaced by ``***``."""
        return redact(self.url)

    @property
    def where(self) -> str:
        """The store as messages name it (a PostgreSQL password is never shown)."""
        return self.store_kind.where.format(**self.env, url=self.display)


def resolve_store_url(url: str | None) -> StoreLocation:
    """Parse ``url`` (``None``: ``$NENJIM_STORE_URL``, else ``memory:``)."""
    if url is None:
        url = os.environ.get(STORE_URL_VARIABLE) or MEMORY_URL
    kind = kind_of_url(url)
    if kind is None:
        examples = [repr(example) for kind in store_kinds() for example in kind.examples]
        raise UnsupportedStoreError(
            f"unsupported store URL {redact(url)!r}: expected "
            f"{', '.join(examples[:-1])} or {examples[-1]}"
        )
    try:
        env = {} if kind.parse_url is None else kind.load(kind.parse_url)(url)
    except ImportError as error:
        if (error.name or "").split(".")[0] not in kind.drivers:
            raise
        raise StoreUnavailableError(f"{redact(url)}: {kind.install}") from None
    return StoreLocation(kind, url, {**env, "PERSISTENCE_MODULE": kind.log_factory})


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
