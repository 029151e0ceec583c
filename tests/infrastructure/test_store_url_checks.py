"""Store URLs are checked before anything is opened, by one parser for both halves.

The Journal's log (``LogApplication``) and durable state (``open_backend``)
refuse the same URLs with the same reason, before they connect to a server or
touch a file: nothing is created, nothing hangs, and the command line says
so in one line, exit 2. The PostgreSQL URLs name a database of this module's
own, so that "nothing was created" can be checked there while other suites
share the server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nenjim.cli import main
from nenjim.infrastructure.log import LogApplication, UnsupportedStoreError, resolve_store_url
from nenjim.infrastructure.storage import UnsupportedBackendError, open_backend
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES

# (URL, words the refusal must contain). "{pg}" is the module's database on the suite's
# server ("{auth}" its user, host and port, "{db}" its name), "{tmp}" an empty directory.
BAD_URLS = [
    # ?schema=: PostgreSQL keeps 63 bytes of a name, quoted names keep any character.
    ("{pg}?schema=" + "s" * 64, "schema"),
    ("{pg}?schema=" + "\u00e9" * 32, "schema"),
    ("{pg}?schema=information_schema", "reserved"),
    ("{pg}?schema=pg_catalog", "reserved"),
    ("{pg}?schema=pg_temp_1", "reserved"),
    ("{pg}?schema=Bad-Schema", "schema"),
    ("{pg}?schema=UPPER", "schema"),
    ("{pg}?schema=1st", "schema"),
    ("{pg}?schema=a%00b", "schema"),
    ("{pg}?schema=a%20b", "schema"),
    ("{pg}?schema=", "schema"),
    ("{pg}?schema=one&schema=other", "more than once"),
    # The URL's own database, host, port, user and password, contradicted by its query.
    ("{pg}?dbname=template1", "dbname"),
    ("postgresql://{auth}/{db}?host=localhost", "host"),
    ("postgresql://{auth}/{db}?port=5433", "port"),
    ("postgresql://{auth}/{db}?user=other", "user"),
    ("postgresql://postgres:one@{host}/{db}?password=two", "password"),
    ("postgresql://{host}/", "database"),
    ("postgresql://{host}/" + "d" * 64, "dbname"),
    ("postgresql://" + "u" * 64 + "@{host}/{db}", "user"),
    # Numbers: integers, within bounds, given once.
    ("{pg}?pool_size=1e25", "pool_size"),
    ("{pg}?pool_size=" + "9" * 25, "pool_size"),
    ("{pg}?pool_size=0", "pool_size"),
    ("{pg}?pool_size=101", "pool_size"),
    ("{pg}?pool_size=%EF%BC%95", "pool_size"),  # a full-width digit
    ("{pg}?pool_size=2&pool_size=3", "more than once"),
    ("{pg}?max_overflow=-1", "max_overflow"),
    ("{pg}?max_overflow=101", "max_overflow"),
    ("{pg}?max_overflow=%D9%A3", "max_overflow"),  # an Arabic-Indic digit
    ("{pg}?connect_timeout=0", "connect_timeout"),
    ("{pg}?connect_timeout=3601", "connect_timeout"),
    ("{pg}?connect_timeout=99999999999999999999", "connect_timeout"),
    ("{pg}?connect_timeout=1.5", "connect_timeout"),
    ("{pg}?tcp_user_timeout=-5", "tcp_user_timeout"),
    ("{pg}?keepalives_idle=1e9", "keepalives_idle"),
    ("postgresql://postgres@127.0.0.1:99999/{db}", "port"),
    ("postgresql://postgres@127.0.0.1:0/{db}", "port"),
    # Unknown parameters.
    ("{pg}?sslmodus=require", "sslmodus"),
    ("{pg}?poolsize=2", "poolsize"),
    # SQLite URLs name one file, and nothing else.
    ("sqlite:", "no database file"),
    ("sqlite:///", "no database file"),
    ("sqlite:///{tmp}/", "no database file"),
    ("sqlite:///{tmp}/..", "no database file"),
    ("sqlite:///{tmp}/.", "no database file"),
    ("sqlite://host/x.db", "sqlite:///"),
    ("sqlite:///{tmp}/x.db?mode=ro", "parameters"),
    ("sqlite:///{tmp}/x.db#part", "parameters"),
    ("sqlite:///{tmp}/x%00.db", "NUL"),
    ("sqlite:///{tmp}/x%FF.db", "UTF-8"),
    ("sqlite:x.db?mode=ro", "parameters"),
    # Anything else.
    ("", "unsupported"),
    ("mysql://x/y", "unsupported"),
    ("memory:x", "unsupported"),
]


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[str]:
    """The URL of an empty database of this module's own, dropped at the end."""
    name = f"nenjim_urls_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(urlsplit(postgres_url)._replace(path=f"/{name}", query=""))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _url(template: str, database: str, tmp: Path) -> str:
    parts = urlsplit(database)
    return (
        template.replace("{pg}", database)
        .replace("{auth}", parts.netloc)
        .replace("{host}", parts.netloc.rpartition("@")[2])
        .replace("{db}", parts.path.lstrip("/"))
        .replace("{tmp}", str(tmp).lstrip("/"))
    )


def _contents(database: str) -> set[tuple[str, str]]:
    """Every schema of the database and every object in it, by name."""
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT n.nspname, coalesce(c.relname, '') FROM pg_namespace n "
            "LEFT JOIN pg_class c ON c.relnamespace = n.oid "
            "UNION SELECT n.nspname, p.proname FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace"
        ).fetchall()
    return {(str(schema), str(name)) for schema, name in rows}


@pytest.mark.parametrize(("template", "reason"), BAD_URLS)
def test_both_openers_refuse_a_bad_url_before_opening_anything(
    template: str, reason: str, tmp_path: Path, database: str
) -> None:
    url = _url(template, database, tmp_path)
    before = _contents(database)
    with pytest.raises(UnsupportedStoreError) as parsed:
        resolve_store_url(url)
    with pytest.raises(UnsupportedStoreError) as log:
        LogApplication(url)
    with pytest.raises(UnsupportedBackendError) as backend:
        open_backend(url, FIXTURE_RESOURCES)
    for error in (parsed.value, log.value, backend.value):
        assert reason in str(error)
        assert "\n" not in str(error)
        assert ":one@" not in str(error)
        assert "two" not in str(error)
    assert str(parsed.value) == str(log.value)
    assert str(parsed.value) in str(backend.value)
    assert list(tmp_path.iterdir()) == []
    assert _contents(database) == before


@pytest.mark.parametrize(
    "command",
    [
        ["journal", "audit"],
        ["projections", "status"],
        ["storage", "audit"],
        ["log", "export"],
    ],
)
@pytest.mark.parametrize(
    "template",
    ["{pg}?schema=Bad-Schema", "{pg}?pool_size=1e25", "{pg}?dbname=template1", "sqlite:///{tmp}/"],
)
def test_the_command_line_refuses_a_bad_url_in_one_line_as_bad_usage(
    command: list[str],
    template: str,
    tmp_path: Path,
    database: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = _url(template, database, tmp_path)
    assert main([*command, "--store", url]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "argument --store" in captured.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("query", "key", "value"),
    [
        ("schema=" + "s" * 63, "POSTGRES_SCHEMA", "s" * 63),
        ("schema=_x9", "POSTGRES_SCHEMA", "_x9"),
        ("schema=public", "POSTGRES_SCHEMA", "public"),
        ("schema=pg", "POSTGRES_SCHEMA", "pg"),
        ("pool_size=100&max_overflow=100", "POSTGRES_POOL_SIZE", "100"),
        ("pool_size=1&max_overflow=0", "POSTGRES_MAX_OVERFLOW", "0"),
        ("connect_timeout=3600", "POSTGRES_CONNECT_TIMEOUT", "3600"),
        ("dbname=postgres", "POSTGRES_DBNAME", "postgres"),
        ("host=127.0.0.1&port=5432&user=postgres", "POSTGRES_HOST", "127.0.0.1"),
    ],
)
def test_urls_within_the_rules_are_taken(query: str, key: str, value: str) -> None:
    server = "postgresql://postgres@127.0.0.1:5432/postgres"
    assert resolve_store_url(f"{server}?{query}").env[key] == value


def test_a_database_named_only_in_the_query_is_taken() -> None:
    location = resolve_store_url("postgresql://127.0.0.1:5432?dbname=postgres")
    assert location.env["POSTGRES_DBNAME"] == "postgres"


def test_a_password_in_the_query_is_never_shown(tmp_path: Path) -> None:
    url = "postgresql://postgres@127.0.0.1:5432/postgres?password=hush&schema=Bad"
    with pytest.raises(UnsupportedStoreError) as refused:
        resolve_store_url(url)
    assert "hush" not in str(refused.value)
    assert "password=***" in str(refused.value)


def test_a_question_mark_in_an_sqlite_file_name_is_written_percent_encoded(
    tmp_path: Path,
) -> None:
    location = resolve_store_url(f"sqlite://{tmp_path}/a%3Fb%23c.db")
    assert location.env["SQLITE_DBNAME"] == f"{tmp_path}/a?b#c.db"


@pytest.mark.parametrize("schema", ["Bad-Schema", "s" * 64, "pg_toast", "information_schema"])
def test_the_log_refuses_a_bad_schema_given_in_python(schema: str, database: str) -> None:
    with pytest.raises(UnsupportedStoreError, match="schema"):
        LogApplication(database, schema=schema)
