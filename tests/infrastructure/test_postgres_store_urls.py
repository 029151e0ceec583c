"""PostgreSQL store URLs: libpq parameters, schemas created on demand, failures that say why.

Every schema a test here creates has a random name and is dropped at the end.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nenjim.cli import main
from nenjim.infrastructure.log import LogApplication, StoreUnavailableError, UnsupportedStoreError
from nenjim.infrastructure.storage import UnsupportedBackendError, open_backend
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES


def _with(url: str, *, query: str = "", port: int | None = None, path: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc if port is None else f"{parts.netloc.rsplit(':', 1)[0]}:{port}"
    return urlunsplit(
        parts._replace(netloc=netloc, query=query, path=parts.path if path is None else path)
    )


def _schema_exists(server: str, schema: str) -> bool:
    with psycopg.connect(server) as conn:
        row = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    return row is not None


@pytest.fixture
def new_schema(postgres_url: str) -> Iterator[str]:
    """A schema name that does not exist yet; dropped afterwards if a test made it."""
    name = f"t_new_{uuid.uuid4().hex[:12]}"
    assert not _schema_exists(postgres_url, name)
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_the_log_creates_a_missing_schema(postgres_url: str, new_schema: str) -> None:
    log = LogApplication(_with(postgres_url, query=f"schema={new_schema}&pool_size=1"))
    log.close()
    assert _schema_exists(postgres_url, new_schema)
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(f'SELECT version FROM "{new_schema}".nenjim_schema').fetchone()
    assert row == (1,)


def test_the_storage_backend_creates_a_missing_schema(postgres_url: str, new_schema: str) -> None:
    backend = open_backend(_with(postgres_url, query=f"schema={new_schema}"), FIXTURE_RESOURCES)
    backend.close()
    assert _schema_exists(postgres_url, new_schema)


def test_libpq_parameters_reach_the_connections(postgres_url: str, new_schema: str) -> None:
    name = f"nenjim_{new_schema}"
    query = (
        f"schema={new_schema}&pool_size=1&sslmode=disable&connect_timeout=5&application_name={name}"
    )
    log = LogApplication(_with(postgres_url, query=query))
    backend = open_backend(_with(postgres_url, query=query), FIXTURE_RESOURCES)
    try:
        with log.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
            assert conn.execute("SHOW application_name").fetchone()["application_name"] == name
        with psycopg.connect(postgres_url) as conn:
            count = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchone()
        assert count is not None
        assert count[0] >= 2  # the log's pool and the backend's pool
    finally:
        log.close()
        backend.close()


def test_percent_encoded_parameters_reach_the_connections_as_written(
    postgres_url: str, new_schema: str
) -> None:
    # A space is %20 in a URI; libpq reads "+" literally, so it must stay %20.
    query = f"schema={new_schema}&pool_size=1&options=-c%20statement_timeout%3D4321"
    log = LogApplication(_with(postgres_url, query=query))
    backend = open_backend(_with(postgres_url, query=query), FIXTURE_RESOURCES)
    try:
        with log.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
            assert (
                conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "4321ms"
            )
        with backend.transaction():
            scope = backend.current_scope()
            assert scope is not None
            row = scope.context.connection.execute("SHOW statement_timeout").fetchone()
            assert row[0] == "4321ms"
    finally:
        log.close()
        backend.close()


def test_an_unknown_parameter_is_refused_by_name(postgres_url: str) -> None:
    url = _with(postgres_url, query="schema=s&sslmodus=require")
    with pytest.raises(UnsupportedStoreError, match="sslmodus") as log_error:
        LogApplication(url)
    with pytest.raises(UnsupportedBackendError, match="sslmodus") as storage_error:
        open_backend(url, FIXTURE_RESOURCES)
    for error in (log_error.value, storage_error.value):
        assert not str(error).endswith(("\n", '"\n'))
        assert str(error).endswith('"sslmodus"')


@pytest.mark.parametrize(
    ("change", "cause"),
    [
        ("port", "Connection refused"),
        ("database", 'database "nenjim_no_such_database" does not exist'),
        ("user", 'role "nenjim_no_such_role" does not exist'),
    ],
)
def test_a_connection_failure_names_its_cause(postgres_url: str, change: str, cause: str) -> None:
    if change == "port":
        url = _with(postgres_url, port=_free_port())
    elif change == "database":
        url = _with(postgres_url, path="/nenjim_no_such_database")
    else:
        parts = urlsplit(postgres_url)
        url = urlunsplit(
            parts._replace(netloc="nenjim_no_such_role@" + parts.netloc.rsplit("@", 1)[-1])
        )
    with pytest.raises(
        StoreUnavailableError, match=r"^cannot connect to store postgresql://"
    ) as log_error:
        LogApplication(url)
    with pytest.raises(StoreUnavailableError) as storage_error:
        open_backend(url, FIXTURE_RESOURCES)
    for error in (log_error.value, storage_error.value):
        assert cause in str(error)
        assert "\n" not in str(error)


def test_the_command_line_names_a_refused_connection_in_one_line(
    postgres_url: str, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _with(postgres_url, port=_free_port())
    parts = urlsplit(url)
    url = urlunsplit(parts._replace(netloc=parts.netloc.replace("@", ":secret@", 1)))
    assert main(["journal", "audit", "--store", url]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        "nenjim: error: cannot connect to store postgresql://postgres:***@127.0.0.1:"
    )
    assert "Connection refused" in err
    assert "secret" not in err
    assert err.count("\n") == 1
