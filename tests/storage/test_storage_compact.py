"""``nenjim storage compact`` leaves no byte of purged rows in any file of the store.

A purge is simulated the low-level way: the records are deleted (their inline rows go,
their log keeps a tombstone), then the ``state`` of every event that carried their
payload is overwritten in place with a direct database connection. The disk scan
(``tests/support/disk_scan.py``) must find the payload's marker before the compaction,
and nowhere after it; the surviving records read back equal and the store still audits
clean.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from disk_scan import (
    await_older_transactions,
    connection_url,
    relation_bytes,
    sqlite_bytes,
    sqlite_size,
)

from nenjim.cli import main
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage import Backend, DurableRecord, open_backend
from nenjim.infrastructure.store.urls import resolve_store_url

RESOURCE = "workflow.states"  # a records resource of the catalog `storage audit` checks
PURGED, KEPT = 200, 10


@dataclass
class PurgedStore:
    url: str
    backend: Backend
    marker: str
    kept: dict[str, DurableRecord]

    def scan(self) -> bytes:
        """Every byte the store keeps on disk."""
        if self.url.startswith("sqlite:"):
            return sqlite_bytes(_sqlite_path(self.url))
        return relation_bytes(self.url, _schema(self.url))


def _sqlite_path(url: str) -> Path:
    return Path(resolve_store_url(url).env["SQLITE_DBNAME"])


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


def _payload(marker: str, index: int) -> dict[str, Any]:
    # About 1 kB of incompressible text; one record's payload is large enough for TOAST.
    filler = secrets.token_hex(4000 if index == 0 else 500)
    return {"text": f"{marker}-{index}", "filler": filler, "tail": marker}


def _purge(url: str, marker: str, keys: list[str]) -> int:
    """Delete the inline rows of ``keys`` and overwrite, in place, the ``state`` of every
    event that holds ``marker``: the marker becomes zeros of its length (the state still
    decodes, so the log keeps its rules). The number of events overwritten."""
    blank = "0" * len(marker)
    if url.startswith("sqlite:"):
        with sqlite3.connect(_sqlite_path(url)) as conn:
            conn.executemany(
                "DELETE FROM storage_records WHERE resource = ? AND key = ?",
                [(RESOURCE, key) for key in keys],
            )
            rows = conn.execute("SELECT notification_id, state FROM storage_events").fetchall()
            hits = [(bytes(state), nid) for nid, state in rows if marker.encode() in bytes(state)]
            conn.executemany(
                "UPDATE storage_events SET state = ? WHERE notification_id = ?",
                [(state.replace(marker.encode(), blank.encode()), nid) for state, nid in hits],
            )
        return len(hits)
    with psycopg.connect(connection_url(url), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{_schema(url)}"')
        with conn.transaction():
            conn.execute(
                "DELETE FROM storage_records WHERE resource = %s AND key = ANY(%s)",
                (RESOURCE, keys),
            )
            rows = conn.execute(
                "SELECT originator_id, originator_version, state FROM storage_events"
            ).fetchall()
            hits = [row for row in rows if marker.encode() in bytes(row[2])]
            with conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE storage_events SET state = %s "
                    "WHERE originator_id = %s AND originator_version = %s",
                    [
                        (bytes(state).replace(marker.encode(), blank.encode()), oid, version)
                        for oid, version, state in hits
                    ],
                )
        return len(hits)


@pytest.fixture
def purged(nenjim_durable_store_url: str) -> Iterator[PurgedStore]:
    url = nenjim_durable_store_url
    backend = open_backend(url, CATALOG)
    marker = uuid.uuid4().hex
    records = backend.view.records(RESOURCE)
    purged_keys = [f"purged-{index}" for index in range(PURGED)]
    for index, key in enumerate(purged_keys):
        record = DurableRecord("note", "0.1", _payload(marker, index))
        records.insert(key=key, revision=1, attributes={}, record=record)
    kept = {
        f"kept-{index}": DurableRecord("note", "0.1", {"text": f"kept {index}", "n": index})
        for index in range(KEPT)
    }
    for key, record in kept.items():
        records.insert(key=key, revision=1, attributes={}, record=record)
    for key in purged_keys:
        records.delete(key=key, expected_revision=1)
    assert _purge(url, marker, purged_keys) == PURGED  # each insert's event
    try:
        yield PurgedStore(url, backend, marker, kept)
    finally:
        backend.close()


def test_compact_leaves_no_byte_of_purged_rows_on_disk(
    purged: PurgedStore, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = purged.marker.encode()
    before = purged.scan()
    assert marker in before  # the scan can see the marker: its absence later means something
    sqlite_before = sqlite_size(_sqlite_path(purged.url)) if purged.url.startswith("sqlite:") else 0

    await_older_transactions(purged.url)
    assert main(["storage", "compact", "--store", purged.url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    after = purged.scan()
    assert marker not in after
    assert len(after) < len(before)
    assert report["bytes_after"] < report["bytes_before"]
    if purged.url.startswith("sqlite:"):
        path = _sqlite_path(purged.url)
        assert report["bytes_before"] == sqlite_before
        assert report["bytes_after"] == sqlite_size(path) == path.stat().st_size
        assert Path(f"{path}-wal").stat().st_size == 0  # truncated, not just checkpointed
    # The survivors read back equal, through the backend that stayed open meanwhile.
    records = purged.backend.view.records(RESOURCE)
    for key, record in purged.kept.items():
        entry = records.read(key)
        assert entry is not None
        assert entry.record == record
    assert records.read("purged-0") is None
    assert main(["storage", "audit", "--store", purged.url]) == 0
    assert capsys.readouterr().out.startswith("audit OK: ")


def test_the_scan_reads_postgresql_relation_files_through_the_server_and_from_disk(
    nenjim_new_store: Any,
) -> None:
    url = nenjim_new_store("postgresql")
    backend = open_backend(url, CATALOG)
    marker = uuid.uuid4().hex
    try:
        backend.view.records(RESOURCE).insert(
            key="k",
            revision=1,
            attributes={},
            record=DurableRecord("note", "0.1", _payload(marker, 0)),
        )
    finally:
        backend.close()
    through_server = relation_bytes(url, _schema(url), via="server")
    from_disk = relation_bytes(url, _schema(url), via="files")
    assert marker.encode() in through_server
    assert through_server == from_disk


def test_on_sqlite_compact_rewrites_pages_freed_without_secure_delete(
    nenjim_new_store: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows removed with ``secure_delete`` off leave their bytes in the database file's
    freed pages (the default of most SQLite builds; Debian's zeroes them): the checkpoint
    alone keeps them, ``VACUUM`` is what drops them."""
    url = nenjim_new_store("sqlite")
    path = _sqlite_path(url)
    backend = open_backend(url, CATALOG)
    marker = uuid.uuid4().hex
    try:
        for index in range(PURGED):
            record = DurableRecord("note", "0.1", _payload(marker, index))
            backend.view.records(RESOURCE).insert(
                key=f"purged-{index}", revision=1, attributes={}, record=record
            )
    finally:
        backend.close()
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("PRAGMA secure_delete = OFF")
        conn.execute("DELETE FROM storage_records")
        conn.execute("UPDATE storage_events SET state = zeroblob(length(state))")
        assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    conn.close()
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert marker.encode() in path.read_bytes()  # in the main file's freed pages

    assert main(["storage", "compact", "--store", url]) == 0
    line = capsys.readouterr().out
    assert line.startswith(f"compact OK: SQLite database {path}: ")
    assert marker.encode() not in sqlite_bytes(path)
