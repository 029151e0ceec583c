"""A store's format and place come from nenjim's own settings, never from the library's.

``eventsourcing`` reads its settings from the process environment as well as
from the application: ``COMPRESSOR_TOPIC``, ``CIPHER_TOPIC`` and
``CIPHER_KEY``, ``PERSISTENCE_MODULE``, ``SQLITE_DBNAME``,
``POSTGRES_SCHEMA``, ``IS_SNAPSHOTTING_ENABLED``, ... and each of them
prefixed with the application's name (``JOURNAL_COMPRESSOR_TOPIC``), which
wins over the value the application passes. A store written under one set
could not be audited, rebuilt or moved without it. Each case below sets
such variables while a store is written and unsets them to read it, and
the other way round: every command succeeds and the store holds what a
store written without them holds.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import psycopg
import pytest
from eventsourcing.cryptography import AESCipher

from nenjim.cli import main
from nenjim.infrastructure.log import LogApplication, resolve_store_url

PROJECT = Path(__file__).resolve().parents[2]
SAMPLE = PROJECT / "data" / "sample" / "journals"

# A variable's value "{elsewhere}" is replaced by another store's place of the same kind.
CASES: dict[str, dict[str, str]] = {
    "compressed": {"COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"},
    "encrypted": {
        "CIPHER_TOPIC": "eventsourcing.cryptography:AESCipher",
        "CIPHER_KEY": AESCipher.create_key(16),
    },
    "compressed, by the application's name": {
        "JOURNAL_COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"
    },
    "another persistence module": {"JOURNAL_PERSISTENCE_MODULE": "eventsourcing.popo"},
    "snapshotting": {"IS_SNAPSHOTTING_ENABLED": "y"},
    "another place": {
        "JOURNAL_SQLITE_DBNAME": "{elsewhere}",
        "JOURNAL_POSTGRES_SCHEMA": "{elsewhere}",
    },
}

# Every setting the library reads (``eventsourcing`` 9.5), plain and with the log's name.
LIBRARY_VARIABLES = [
    "PERSISTENCE_MODULE",
    "INFRASTRUCTURE_FACTORY",
    "FACTORY_TOPIC",
    "TRANSCODER_TOPIC",
    "MAPPER_TOPIC",
    "CIPHER_TOPIC",
    "CIPHER_KEY",
    "COMPRESSOR_TOPIC",
    "IS_SNAPSHOTTING_ENABLED",
    "APPLICATION_RECORDER_TOPIC",
    "TRACKING_RECORDER_TOPIC",
    "PROCESS_RECORDER_TOPIC",
    "AGGREGATE_CACHE_MAXSIZE",
    "AGGREGATE_CACHE_FASTFORWARD",
    "AGGREGATE_CACHE_FASTFORWARD_SKIPPING",
    "DEEPCOPY_FROM_AGGREGATE_CACHE",
    "CREATE_TABLE",
    "SINGLE_ROW_TRACKING",
    "ORIGINATOR_ID_TYPE",
    "SQLITE_DBNAME",
    "SQLITE_LOCK_TIMEOUT",
    "POSTGRES_DBNAME",
    "POSTGRES_HOST",
    "POSTGRES_PORT",
    "POSTGRES_USER",
    "POSTGRES_PASSWORD",
    "POSTGRES_GET_PASSWORD_TOPIC",
    "POSTGRES_CONNECT_TIMEOUT",
    "POSTGRES_CONN_MAX_AGE",
    "POSTGRES_PRE_PING",
    "POSTGRES_MAX_WAITING",
    "POSTGRES_LOCK_TIMEOUT",
    "POSTGRES_POOL_SIZE",
    "POSTGRES_MAX_OVERFLOW",
    "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT",
    "POSTGRES_SCHEMA",
    "POSTGRES_ENABLE_DB_FUNCTIONS",
]


@pytest.fixture(params=["sqlite", "postgresql"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Makes the URL of a new, empty store of one durable kind (dropped afterwards)."""
    schemas: list[str] = []
    server = request.getfixturevalue("postgres_url") if request.param == "postgresql" else ""

    def make() -> str:
        if not server:
            return f"sqlite://{tmp_path / uuid.uuid4().hex}.db"
        schemas.append(f"t_{uuid.uuid4().hex[:16]}")
        return urlunsplit(urlsplit(server)._replace(query=f"schema={schemas[-1]}&pool_size=1"))

    yield make
    if schemas:
        with psycopg.connect(server, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _place(url: str) -> str:
    """What ``{elsewhere}`` stands for: the store's file, or its schema."""
    if url.startswith("sqlite:"):
        return resolve_store_url(url).env["SQLITE_DBNAME"]
    return parse_qs(urlsplit(url).query)["schema"][0]


def _set(monkeypatch: pytest.MonkeyPatch, case: str, elsewhere: str) -> None:
    for variable, value in CASES[case].items():
        monkeypatch.setenv(variable, value.replace("{elsewhere}", elsewhere))


def _unset(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    for variable in CASES[case]:
        monkeypatch.delenv(variable)


def _nenjim(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, (argv, captured.err)
    return captured.out


def _tables(url: str) -> set[str]:
    location = resolve_store_url(url)
    if location.kind == "sqlite":
        with sqlite3.connect(location.env["SQLITE_DBNAME"]) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    else:
        server = urlunsplit(urlsplit(url)._replace(query=""))
        with psycopg.connect(server) as conn:
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (location.env["POSTGRES_SCHEMA"],),
            ).fetchall()
    return {str(row[0]) for row in rows}


def _check_every_reader(
    capsys: pytest.CaptureFixture[str], url: str, imported: str, tmp_path: Path
) -> None:
    """Audit, rebuild, export and import the store at ``url`` (into ``imported``)."""
    assert _nenjim(capsys, "journal", "audit", "--store", url).startswith("audit OK: 45 events")
    _nenjim(capsys, "projections", "rebuild", "journal-chains", "--store", url)
    exported = tmp_path / f"{uuid.uuid4().hex}.log"
    _nenjim(capsys, "log", "export", "--store", url, "--out", str(exported))
    _nenjim(capsys, "log", "import", "--store", imported, str(exported))


def _plain_store(
    capsys: pytest.CaptureFixture[str], new_store: Callable[[], str], tmp_path: Path
) -> set[str]:
    """The tables of a store written and read as the cases' stores are, without the settings."""
    plain = new_store()
    _nenjim(capsys, "journal", "verify", str(SAMPLE), "--store", plain)
    _check_every_reader(capsys, plain, new_store(), tmp_path)
    return _tables(plain)


@pytest.mark.parametrize("case", list(CASES))
def test_a_store_written_under_the_librarys_settings_reads_without_them(
    case: str,
    new_store: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    tables = _plain_store(capsys, new_store, tmp_path)
    url, elsewhere, imported = new_store(), new_store(), new_store()
    _set(monkeypatch, case, _place(elsewhere))
    _nenjim(capsys, "journal", "verify", str(SAMPLE), "--store", url)
    _unset(monkeypatch, case)
    _check_every_reader(capsys, url, imported, tmp_path)
    assert _nenjim(capsys, "journal", "audit", "--store", imported).startswith("audit OK")
    assert _tables(url) == tables


@pytest.mark.parametrize("case", list(CASES))
def test_a_store_written_without_the_librarys_settings_reads_under_them(
    case: str,
    new_store: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    tables = _plain_store(capsys, new_store, tmp_path)
    url, elsewhere, imported = new_store(), new_store(), new_store()
    _nenjim(capsys, "journal", "verify", str(SAMPLE), "--store", url)
    _set(monkeypatch, case, _place(elsewhere))
    _check_every_reader(capsys, url, imported, tmp_path)
    _unset(monkeypatch, case)
    assert _nenjim(capsys, "journal", "audit", "--store", imported).startswith("audit OK")
    assert _tables(url) == tables


def test_the_log_hands_the_library_only_what_its_url_says(
    durable_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = LogApplication(durable_store_url)
    expected = dict(log.env)
    log.close()
    for variable in LIBRARY_VARIABLES:
        for name in (variable, f"LOGAPPLICATION_{variable}"):
            monkeypatch.setenv(name, "set by the environment")
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.popo")
    log = LogApplication(durable_store_url)
    try:
        assert dict(log.env) == expected
    finally:
        log.close()


def test_events_are_stamped_in_utc_whatever_tzinfo_topic_says(tmp_path: Path) -> None:
    # eventsourcing reads TZINFO_TOPIC once, when it is imported: a process of its own.
    store = tmp_path / "log.db"
    environment = {**os.environ, "TZINFO_TOPIC": "datetime:timezone.max"}
    environment.pop("NENJIM_STORE_URL", None)
    root = tmp_path / "root"
    shutil.copytree(SAMPLE, root)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nenjim",
            "journal",
            "verify",
            str(root),
            "--store",
            f"sqlite://{store}",
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        states = [row[0] for row in conn.execute("SELECT state FROM journal_events")]
    assert len(states) == 45
    assert all(b'"timestamp":{"_type_":"datetime_iso","_data_":"' in state for state in states)
    assert all(b'+00:00"}' in state and b"+23:59" not in state for state in states)
