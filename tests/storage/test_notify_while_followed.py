"""On PostgreSQL a commit that appends storage events notifies only while a follower of
its schema listens: a notifying commit waits for every other notifying commit of the
server to be durable, so writers that nobody follows must not pay for it."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import Backend, DurableRecord
from nenjim.infrastructure.storage.follow.schema import CHANNEL, listening_lock
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES, WORKFLOW_STATES
from nenjim.infrastructure.tracking import follow as follower

KEYS = itertools.count()
QUIET = 0.5
"""Seconds a bare listener waits to conclude that no notification comes."""
TIMEOUT = 20.0


@pytest.fixture
def backend(postgres_backend: PostgresBackend) -> Backend:
    return postgres_backend


@pytest.fixture
def listener(postgres_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A bare ``LISTEN`` on the channel: it hears what writers send, and it is no follower."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"LISTEN {CHANNEL}")
        yield connection


def _write(backend: Backend) -> None:
    key = f"k{next(KEYS)}"
    backend.view.records(WORKFLOW_STATES).insert(
        key=key, revision=0, attributes={}, record=DurableRecord("test.notify", "0.1", {})
    )


def _heard(listener: psycopg.Connection[Any], backend: Backend) -> bool:
    assert isinstance(backend, PostgresBackend)
    return any(notice.payload == backend.schema for notice in listener.notifies(timeout=QUIET))


def test_writers_notify_only_while_a_follower_listens(
    backend: Backend, listener: psycopg.Connection[Any]
) -> None:
    _write(backend)
    assert not _heard(listener, backend)
    stop = threading.Event()
    wakeup = follower.wakeup_for(backend, stop)
    try:
        _write(backend)
        assert _heard(listener, backend)
        with backend.transaction():  # a scope's commit as well as a lone write's
            _write(backend)
        assert _heard(listener, backend)
    finally:
        stop.set()
        wakeup.close()
    _until_released(listener, backend)  # the server ends the follower's session after close
    _write(backend)
    assert not _heard(listener, backend)


def _until_released(connection: psycopg.Connection[Any], backend: Backend) -> None:
    """Wait until no follower of ``backend``'s schema holds the listening lock."""
    assert isinstance(backend, PostgresBackend)
    key, params = listening_lock(backend.schema)
    deadline = time.monotonic() + TIMEOUT
    while connection.execute(f"SELECT pg_try_advisory_lock({key})", params).fetchone() != (True,):
        assert time.monotonic() < deadline, "the follower's lock was not released"
        time.sleep(0.01)
    connection.execute(f"SELECT pg_advisory_unlock({key})", params)


def test_a_store_of_version_3_stops_notifying_unfollowed_commits_once_opened(
    postgres_schema_url: str, listener: psycopg.Connection[Any]
) -> None:
    """The version 3 trigger notified every commit; opening the store replaces it."""
    opened = open_backend(postgres_schema_url, FIXTURE_RESOURCES)
    assert isinstance(opened, PostgresBackend)
    schema = opened.schema
    opened.close()
    with psycopg.connect(postgres_schema_url.split("?", maxsplit=1)[0], autocommit=True) as admin:
        admin.execute(
            f'CREATE OR REPLACE FUNCTION "{schema}".storage_events_notify() RETURNS trigger '
            f"LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA); "
            "RETURN NULL; END $$"
        )
        admin.execute(
            f"UPDATE \"{schema}\".nenjim_schema SET version = 3 WHERE component = 'storage'"
        )
    reopened = open_backend(postgres_schema_url, FIXTURE_RESOURCES)
    try:
        _write(reopened)
        assert not _heard(listener, reopened)
    finally:
        reopened.close()
