"""Where the saver keeps a value: inline as it is below 256 serialized bytes, inline and
zlib-compressed below 1 KiB when that shrinks it by an eighth, otherwise as a blob of
its thread; every form reads back as the value, and a damaged inline value is refused
with its reason."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from checkpoints import checkpoint

from nenjim.infrastructure.langgraph.catalog import THREADS, VALUES, WRITES
from nenjim.infrastructure.langgraph.values import COMPRESSED_INLINE_LIMIT, INLINE_LIMIT
from nenjim.infrastructure.storage import SerializationError
from nenjim.infrastructure.storage.sql import events
from nenjim.langgraph import NenjimSaver


def _compressible(size: int) -> bytes:
    """``size`` bytes zlib shrinks to a fraction (``bytes`` serialize as themselves)."""
    return (b"ab" * size)[:size]


VALUES_BY_FORM = {
    "small": (_compressible(INLINE_LIMIT - 1), "inline"),
    "least compressed": (_compressible(INLINE_LIMIT), "inline-zlib"),
    "most compressed": (_compressible(COMPRESSED_INLINE_LIMIT - 1), "inline-zlib"),
    "mid-sized random": (os.urandom(600), "blob"),
    "least blob": (_compressible(COMPRESSED_INLINE_LIMIT), "blob"),
    "large": ("abc" * 1000, "blob"),
}


def _config(thread: str, checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _put(saver: NenjimSaver, thread: str, values: dict[str, Any]) -> str:
    made = checkpoint(values)
    metadata: Any = {"source": "input", "step": -1, "parents": {}}
    saver.put(_config(thread), made, metadata, made["channel_versions"])
    return made["id"]


@pytest.fixture
def saver(store_url: str) -> Iterator[NenjimSaver]:
    """A saver on a fresh store of each kind."""
    with NenjimSaver.from_conn_string(store_url) as opened:
        yield opened


def _entry_values(saver: NenjimSaver, thread: str) -> dict[str, list[str]]:
    (entry,) = saver.backend.view.streams(THREADS).read(
        stream=json.dumps([thread, ""], separators=(",", ":"))
    )
    values: dict[str, list[str]] = json.loads(entry.record.payload["body"])["values"]
    return values


def test_each_value_is_kept_in_the_form_its_size_and_bytes_call_for(saver: NenjimSaver) -> None:
    values = {name: value for name, (value, _) in VALUES_BY_FORM.items()}
    checkpoint_id = _put(saver, "t", values)
    saver.put_writes(_config("t", checkpoint_id), list(values.items()), "task")

    stored = _entry_values(saver, "t")
    assert {name: ref[0] for name, ref in stored.items()} == {
        name: form for name, (_, form) in VALUES_BY_FORM.items()
    }
    inline = stored["most compressed"][2]
    assert len(inline) < COMPRESSED_INLINE_LIMIT // 4  # compressed, then base64
    (row,) = saver.backend.view.records(WRITES).scan(index=None, equals={})
    written = [ref for _, _, _, ref in json.loads(row.record.payload["body"])["writes"]]
    assert sorted(written) == sorted(stored.values())  # the same references, blobs too
    blob_keys = {key for kind, _, key in stored.values() if kind == "blob"}
    assert len(blob_keys) == 3
    assert all(saver.backend.view.blobs(VALUES).exists(key=key) for key in blob_keys)

    found = saver.get_tuple(_config("t"))
    assert found is not None
    assert found.checkpoint["channel_values"] == values
    assert {channel: value for _, channel, value in found.pending_writes or ()} == values


def test_a_copied_thread_reads_its_inline_values(saver: NenjimSaver) -> None:
    value = _compressible(700)
    _put(saver, "t", {"v": value})
    saver.copy_thread("t", "copy")
    assert _entry_values(saver, "copy")["v"][0] == "inline-zlib"
    found = saver.get_tuple(_config("copy"))
    assert found is not None
    assert found.checkpoint["channel_values"] == {"v": value}


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        (lambda ref: ref, None),
        (lambda ref: [ref[0], ref[1], "*" + ref[2][1:]], "stored inline value is not base64"),
        (
            lambda ref: [ref[0], ref[1], base64.b64encode(b"not zlib").decode()],
            "stored inline value does not inflate",
        ),
        (lambda ref: ["inline-lz4", *ref[1:]], "unknown kind 'inline-lz4'"),
    ],
    ids=["as stored", "not base64", "not zlib", "unknown kind"],
)
def test_a_damaged_inline_value_is_refused_with_its_reason(
    tmp_path: Path, edit: Callable[[list[str]], list[str]], refusal: str | None
) -> None:
    path = tmp_path / "values.db"
    value = _compressible(700)
    with NenjimSaver.from_conn_string(f"sqlite://{path}") as saver:
        _put(saver, "t", {"v": value})
        ref = _entry_values(saver, "t")["v"]
    assert ref[0] == "inline-zlib"
    stream = str(events.entry_stream(THREADS.id, '["t",""]'))
    with sqlite3.connect(path) as conn:
        (state,) = conn.execute(
            "SELECT state FROM storage_events WHERE originator_id = ?", (stream,)
        ).fetchone()
        data = json.loads(state)
        stored = json.dumps(ref, separators=(",", ":"))
        assert stored in data["payload"]["body"]
        edited = json.dumps(edit(ref), separators=(",", ":"))
        data["payload"]["body"] = data["payload"]["body"].replace(stored, edited)
        conn.execute(
            "UPDATE storage_events SET state = ? WHERE originator_id = ?",
            (json.dumps(data).encode("utf-8"), stream),
        )
    with NenjimSaver.from_conn_string(f"sqlite://{path}") as fresh:
        if refusal is None:
            found = fresh.get_tuple(_config("t"))
            assert found is not None
            assert found.checkpoint["channel_values"] == {"v": value}
        else:
            with pytest.raises(SerializationError, match=refusal):
                fresh.get_tuple(_config("t"))
