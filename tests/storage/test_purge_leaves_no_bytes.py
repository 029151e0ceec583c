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
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from disk_scan import relation_bytes, sqlite_bytes

from nenjim.cli import main
from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    DurableRecord,
    Resource,
    open_backend,
)
from nenjim.infrastructure.storage.audit import audit_store, compact_store
from nenjim.infrastructure.store.urls import resolve_store_url
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
    states = [base64.b64decode(line["state"]) for line in lines if line["kind"] == "event"]
    # A blob's bytes are in base64 inside its state.
    data = [base64.b64decode(json.loads(state).get("data", "")) for state in states]
    return b"\n".join([text, *states, *data])


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

    compact_store(url)

    found = {
        "disk": marker.encode() in _disk(url),
        "export": marker.encode() in _export(url, tmp_path / "after.export"),
    }
    assert found == ({"disk": False, "export": False} if purge else {"disk": True, "export": True})
    assert audit_store(url, RESOURCES).ok
