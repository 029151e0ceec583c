"""A purge, then ``storage compact``: no byte of what was purged is left on disk.

Values carrying a unique marker are written to a record, a stream (purged
whole, or its entries before a position) or a blob; they are purged and the
store compacted. Then every byte of the store's files is scanned (SQLite:
the database file and its ``-wal``; PostgreSQL: every relation file of the
schema's tables, their TOAST tables and indexes) and so is an export of the
store: the marker is nowhere. The same writes deleted the ordinary way leave
it in the log, where the same scan finds it. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from disk_scan import await_older_transactions, relation_bytes, sqlite_bytes
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6

from nenjim.cli import main
from nenjim.infrastructure.langgraph.catalog import CATALOG as LANGGRAPH_CATALOG
from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    DurableRecord,
    Resource,
    open_backend,
)
from nenjim.infrastructure.storage.audit import audit_store, compact_store
from nenjim.infrastructure.store.urls import resolve_store_url
from nenjim.langgraph import NenjimSaver
from nenjim.testing.plugin import NewStore

ROWS = Resource("secret.rows", "records")
LOG = Resource("secret.log", "streams")
BLOBS = Resource("secret.blobs", "blobs")
RESOURCES = [ROWS, LOG, BLOBS]


def _record(marker: str, number: int) -> DurableRecord:
    # Random hex around the marker: PostgreSQL would compress a repetitive value,
    # and a compressed value hides its bytes from the scan.
    return DurableRecord(
        "secret.value", "1.0", {"text": f"{secrets.token_hex(64)}{marker}{number}"}
    )


def _write_record(backend: Backend, marker: str) -> Callable[[bool], None]:
    rows = backend.view.records(ROWS)
    rows.insert(key="r", revision=0, attributes={}, record=_record(marker, 0))
    rows.replace(
        key="r", expected_revision=0, next_revision=1, attributes={}, record=_record(marker, 1)
    )
    rows.insert(key="kept", revision=0, attributes={}, record=_record("kept-value", 0))
    return lambda purge: (
        rows.purge(key="r") if purge else rows.delete(key="r"),
        None,
    )[1]


def _write_stream(backend: Backend, marker: str, *, before: int | None) -> Callable[[bool], None]:
    log = backend.view.streams(LOG)
    secret = [AppendEntry(id=f"{marker}-{n}", record=_record(marker, n)) for n in range(3)]
    log.append(stream="s", expected_head=0, entries=secret)
    if before is not None:
        kept = [AppendEntry(id="kept", record=_record("kept-value", 9))]
        log.append(stream="s", expected_head=3, entries=kept)

    def remove(purge: bool) -> None:
        if purge:
            log.purge(stream="s", before=before)
        elif before is None:
            log.delete(stream="s")

    return remove


def _write_blob(backend: Backend, marker: str) -> Callable[[bool], None]:
    blobs = backend.view.blobs(BLOBS)
    data = secrets.token_bytes(64) + marker.encode()
    blobs.put_if_absent(key="b", data=data, attributes={})
    return lambda purge: (blobs.purge(key="b") if purge else None, None)[1]


WRITES: dict[str, Callable[[Backend, str], Callable[[bool], None]]] = {
    "record": _write_record,
    "stream": lambda backend, marker: _write_stream(backend, marker, before=None),
    "stream entries before a position": lambda backend, marker: _write_stream(
        backend, marker, before=4
    ),
    "blob": _write_blob,
}


def _disk(url: str) -> bytes:
    if url.startswith("sqlite:"):
        return sqlite_bytes(Path(resolve_store_url(url).env["SQLITE_DBNAME"]))
    return relation_bytes(url, parse_qs(urlsplit(url).query)["schema"][0])


def _export(url: str, path: Path) -> bytes:
    """The export's bytes, each event's state decoded (an export holds it in base64)."""
    assert main(["log", "export", "--store", url, "--out", str(path)]) == 0
    text = path.read_bytes()
    lines = [json.loads(line) for line in text.splitlines()]
    # A blob put's state holds the blob's bytes as they are, after its JSON header.
    states = [base64.b64decode(line["state"]) for line in lines if line["kind"] == "event"]
    return b"\n".join([text, *states])


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("what", sorted(WRITES))
@pytest.mark.parametrize("purge", [True, False], ids=["purged", "deleted"])
def test_nothing_purged_is_left_on_disk_or_in_an_export(
    kind: str, what: str, purge: bool, nenjim_new_store: NewStore, tmp_path: Path
) -> None:
    url = nenjim_new_store(kind)
    marker = f"erase-me-{secrets.token_hex(8)}"
    backend = open_backend(url, RESOURCES)
    try:
        remove = WRITES[what](backend, marker)
        assert marker.encode() in _export(url, tmp_path / "before.export")
        remove(purge)
    finally:
        backend.close()

    await_older_transactions(url)
    compact_store(url)

    found = {
        "disk": marker.encode() in _disk(url),
        "export": marker.encode() in _export(url, tmp_path / "after.export"),
    }
    assert found == ({"disk": False, "export": False} if purge else {"disk": True, "export": True})
    assert audit_store(url, RESOURCES).ok


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("deleted", [True, False], ids=["deleted", "kept"])
def test_a_deleted_langgraph_thread_is_gone_from_disk_after_compact(
    kind: str, deleted: bool, nenjim_new_store: NewStore
) -> None:
    url = nenjim_new_store(kind)
    marker = f"erase-me-{secrets.token_hex(8)}"
    with NenjimSaver.from_conn_string(url) as saver:
        parent = None
        for step in range(3):
            parent = _put_checkpoint(saver, "thread-1", parent, marker, step)
        _put_checkpoint(saver, "thread-2", None, "kept-value", 0)
        if deleted:
            saver.delete_thread("thread-1")

    await_older_transactions(url)
    compact_store(url)

    assert (marker.encode() in _disk(url)) is not deleted
    assert b"kept-value" in _disk(url)
    assert audit_store(url, [*LANGGRAPH_CATALOG]).ok


def _put_checkpoint(
    saver: NenjimSaver, thread: str, parent: str | None, marker: str, step: int
) -> str:
    """A checkpoint with ``marker`` in its metadata, in a channel value too large to keep
    inline and too random to compress, and in a pending write."""
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if parent is not None:
        configurable["checkpoint_id"] = parent
    checkpoint: Checkpoint = {
        "v": 4,
        "id": str(uuid6(clock_seq=-1)),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {"blob": marker.encode() + secrets.token_bytes(2000)},
        "channel_versions": {"blob": step + 1},
        "versions_seen": {},
        "updated_channels": None,
    }
    metadata: CheckpointMetadata = {
        "source": "loop",
        "step": step,
        "parents": {},
        "note": marker,  # type: ignore[typeddict-unknown-key]
    }
    stored = saver.put({"configurable": configurable}, checkpoint, metadata, {"blob": step + 1})
    written: str = stored["configurable"]["checkpoint_id"]
    saver.put_writes(
        {"configurable": {**configurable, "checkpoint_id": written}}, [("blob", marker)], "task"
    )
    return written
