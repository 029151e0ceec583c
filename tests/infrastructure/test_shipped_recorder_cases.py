"""The ``eventsourcing`` package's own recorder test cases, run against our subclasses.

``ApplicationRecorderTestCase`` checks ids, conflicts, notification paging
and concurrency; ``NonInterleavingNotificationIDsBaseCase`` checks that two
concurrent batches get non-interleaved ids (what a tailing reader needs).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.sqlite import SQLiteDatastore
from eventsourcing.tests.persistence import (
    ApplicationRecorderTestCase,
    NonInterleavingNotificationIDsBaseCase,
)

from nenjim.infrastructure.memory.log import ClaimingMemoryApplicationRecorder
from nenjim.infrastructure.postgresql.log import ClaimingPostgresApplicationRecorder
from nenjim.infrastructure.sqlite.log import ClaimingSQLiteApplicationRecorder


class TestClaimingMemoryRecorder(ApplicationRecorderTestCase[ClaimingMemoryApplicationRecorder]):
    def create_recorder(self) -> ClaimingMemoryApplicationRecorder:
        return ClaimingMemoryApplicationRecorder()

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()


def _join_threads_started_since(before: set[threading.Thread]) -> None:
    """Wait for the shipped cases' reader threads, which they stop but never join.

    Closing a datastore while such a thread is inside ``sqlite3`` crashes the
    interpreter (the eventsourcing notes saw it too), so teardown waits first.
    """
    for thread in set(threading.enumerate()) - before:
        if "read_continuously" not in thread.name:
            continue  # pool workers belong to the datastore and stop when it closes
        thread.join(timeout=10)
        assert not thread.is_alive(), f"thread {thread.name} did not stop"


class _SQLiteCase:
    db_path: Path
    datastore: SQLiteDatastore | None = None

    @pytest.fixture(autouse=True)
    def _database(self, tmp_path: Path) -> Iterator[None]:
        self.db_path = tmp_path / "events.db"
        before = set(threading.enumerate())
        yield
        _join_threads_started_since(before)
        if self.datastore is not None:
            self.datastore.close()

    def create_recorder(self) -> ClaimingSQLiteApplicationRecorder:
        self.datastore = SQLiteDatastore(db_name=str(self.db_path))
        recorder = ClaimingSQLiteApplicationRecorder(self.datastore, name="shipped")
        recorder.create_table()
        return recorder


class TestClaimingSQLiteRecorder(
    _SQLiteCase, ApplicationRecorderTestCase[ClaimingSQLiteApplicationRecorder]
):
    pass


class TestClaimingSQLiteNonInterleaving(_SQLiteCase, NonInterleavingNotificationIDsBaseCase):
    pass


class _PostgresCase:
    schema: str
    url: str
    datastores: list[PostgresDatastore]

    @pytest.fixture(autouse=True)
    def _schema(self, postgres_url: str) -> Iterator[None]:
        self.url = postgres_url
        self.schema = f"t_{uuid.uuid4().hex[:16]}"
        self.datastores = []
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{self.schema}"')
        before = set(threading.enumerate())
        yield
        _join_threads_started_since(before)
        for datastore in self.datastores:
            datastore.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{self.schema}" CASCADE')

    def create_recorder(self) -> ClaimingPostgresApplicationRecorder:
        parts = urlsplit(self.url)
        datastore = PostgresDatastore(
            dbname=parts.path.lstrip("/"),
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password or "",
            schema=self.schema,
            pool_size=2,
            max_overflow=8,
        )
        self.datastores.append(datastore)
        recorder = ClaimingPostgresApplicationRecorder(datastore, name="shipped")
        recorder.create_table()
        return recorder


class TestClaimingPostgresRecorder(
    _PostgresCase, ApplicationRecorderTestCase[ClaimingPostgresApplicationRecorder]
):
    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()


class TestClaimingPostgresNonInterleaving(_PostgresCase, NonInterleavingNotificationIDsBaseCase):
    pass
