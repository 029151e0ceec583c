"""PostgreSQL store URLs, checked whole before anything connects (imports psycopg).

A PostgreSQL URL is a libpq connection URI: every libpq parameter
(``sslmode``, ``connect_timeout``, ``application_name``, ``host=/socket/dir``,
...) is handed to psycopg's conninfo parser, which refuses unknown ones. Our
own options are taken out of the query first: ``schema`` (default
``public``, created when missing), ``pool_size`` and ``max_overflow``. Absent
from the URL, the host is ``127.0.0.1``, the port 5432, the user
``postgres`` and ``connect_timeout`` 10 seconds; a database name is required.

Refused, as ``UnsupportedStoreError``: a parameter given twice; a query
value that contradicts the database, host, port, user or password written
before the ``?``; a database or user name over 63 bytes (the server would
cut it, and two URLs would open one store); a schema name
:func:`~nenjim.infrastructure.store.urls.schema_problem` refuses; an integer
parameter that is not a plain decimal within :data:`INTEGERS`' bounds.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import SplitResult, parse_qsl, quote, urlencode, urlsplit, urlunsplit

from psycopg import Error as PsycopgError
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from nenjim.infrastructure.store.urls import (
    NAME_BYTES,
    POSTGRES_CONNINFO,
    UnsupportedStoreError,
    redact,
    schema_problem,
)

_OUR_OPTIONS = {
    "schema": "POSTGRES_SCHEMA",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
}
_DEFAULTS = {"host": "127.0.0.1", "port": "5432", "user": "postgres", "connect_timeout": "10"}
# What the URL says before its "?", which its query must not contradict.
_AUTHORITY = ("dbname", "host", "port", "user", "password")

INTEGERS = {
    # A pool opens pool_size connections at once; a server allows 100 by default.
    "pool_size": (1, 100),
    "max_overflow": (0, 100),
    "connect_timeout": (1, 3600),  # seconds
    "tcp_user_timeout": (0, 3_600_000),  # milliseconds
    "keepalives": (0, 1),
    "keepalives_idle": (0, 86_400),  # seconds
    "keepalives_interval": (0, 86_400),  # seconds
    "keepalives_count": (0, 1_000),
}
"""The integer parameters (ours and libpq's) and their inclusive bounds."""


def postgres_env(url: str) -> dict[str, str]:
    """The ``eventsourcing`` environment of the PostgreSQL store at ``url``, checked."""

    def invalid(reason: str) -> UnsupportedStoreError:
        return UnsupportedStoreError(f"invalid PostgreSQL URL {redact(url)!r}: {reason}")

    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    repeated = [key for key, count in Counter(key for key, _ in query).items() if count > 1]
    if repeated:
        raise invalid(f"{repeated[0]} is given more than once")
    ours = {key: value for key, value in query if key in _OUR_OPTIONS}
    libpq = [(key, value) for key, value in query if key not in _OUR_OPTIONS]
    try:
        written = _libpq_dict(parts._replace(query=""))
        params = _libpq_dict(parts._replace(query=urlencode(libpq, quote_via=quote)))
    except PsycopgError as error:
        raise invalid(" ".join(str(error).split())) from None  # libpq ends lines with "\n"
    for key, value in libpq:
        if key in _AUTHORITY and key in written and written[key] != value:
            shown = "" if key == "password" else f" {written[key]!r}"
            raise invalid(f"?{key}= contradicts the {key}{shown} the URL names before '?'")
    if not params.get("dbname"):
        raise invalid("no database name")
    for key in ("dbname", "user"):
        if len(params.get(key, "").encode()) > NAME_BYTES:
            raise invalid(f"{key} is longer than {NAME_BYTES} bytes (PostgreSQL would cut it)")
    for key, value in _DEFAULTS.items():
        params.setdefault(key, value)
    for port in params["port"].split(","):
        if port and not _within(port, 1, 65_535):
            raise invalid(f"port must be an integer from 1 to 65535, not {port!r}")
    for key, (least, most) in INTEGERS.items():
        number = ours.get(key, params.get(key))
        if number is not None and not _within(number, least, most):
            raise invalid(f"{key} must be an integer from {least} to {most}, not {number!r}")
    schema = ours.get("schema")
    if schema is not None and (problem := schema_problem(schema)) is not None:
        raise invalid(problem)
    return {
        POSTGRES_CONNINFO: make_conninfo(**params),
        # eventsourcing's factory insists on these keys; the conninfo above is what connects.
        "POSTGRES_DBNAME": params["dbname"],
        "POSTGRES_HOST": params["host"],
        "POSTGRES_PORT": params["port"],
        "POSTGRES_USER": params["user"],
        "POSTGRES_PASSWORD": params.get("password", ""),
        "POSTGRES_CONNECT_TIMEOUT": params["connect_timeout"],
        "POSTGRES_POOL_SIZE": "4",
        "POSTGRES_MAX_OVERFLOW": "12",
        "ORIGINATOR_ID_TYPE": "uuid",
        **{_OUR_OPTIONS[key]: value for key, value in ours.items()},
    }


def _libpq_dict(parts: SplitResult) -> dict[str, str]:
    """What libpq reads in the URI (its percent-encoding undone), as strings."""
    return {key: str(value) for key, value in conninfo_to_dict(urlunsplit(parts)).items()}


def _within(value: str, least: int, most: int) -> bool:
    """``value`` is ASCII decimal digits (no sign, no exponent) for an integer in bounds."""
    # Ten digits at most: no integer of a thousand digits is parsed to be refused.
    digits = value.isascii() and value.isdigit() and len(value) <= 10
    return digits and least <= int(value) <= most
