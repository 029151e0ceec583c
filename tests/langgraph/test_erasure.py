"""Erasure: ``delete_thread``, ``prune`` and ``delete_for_runs`` purge what they remove.

Each checkpoint here carries a unique marker in a small (inline) channel value,
a large (blob, zlib-compressed) one, its metadata and its pending writes (small
and large). After a removal, what it removed reads back nowhere (``get_tuple``,
``list``, ``as_of`` says it was purged) and, on the SQL stores, no table holds
its markers any more (the log ``storage_events`` first: states as stored,
base64-decoded and inflated), while what stays reads back whole and its
markers are still found.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6

from nenjim.langgraph import CheckpointPurgedError, NenjimSaver
from tests.support.erasure import log_holds, tables_holding

PADDING = "y" * 2_000


@pytest.fixture
def saver(store_url: str) -> Iterator[NenjimSaver]:
    """A saver on a fresh store of each kind."""
    with NenjimSaver.from_conn_string(store_url) as opened:
        yield opened


def _config(thread: str, checkpoint_id: str | None = None, ns: str = "") -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _marker(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex}"


def _put(
    saver: NenjimSaver,
    thread: str,
    parent: str | None,
    marker: str,
    *,
    run_id: str = "run",
    ns: str = "",
) -> str:
    """A checkpoint whose values, metadata and pending writes all hold ``marker``."""
    values = {"small": marker, "big": f"{marker}{PADDING}"}
    checkpoint: Checkpoint = {
        "v": 4,
        "id": str(uuid6(clock_seq=-1)),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": values,
        "channel_versions": {"small": marker, "big": marker},
        "versions_seen": {},
        "updated_channels": None,
    }
    metadata: CheckpointMetadata = {
        "source": "input" if parent is None else "loop",
        "step": 0,
        "parents": {},
        "run_id": run_id,
        "note": marker,  # type: ignore[typeddict-unknown-key]
    }
    stored = saver.put(_config(thread, parent, ns), checkpoint, metadata, {"small": 1, "big": 1})
    checkpoint_id: str = stored["configurable"]["checkpoint_id"]
    written = _config(thread, checkpoint_id, ns)
    saver.put_writes(written, [("small", marker), ("big", f"{PADDING}{marker}")], "task")
    return checkpoint_id


def _gone(store_url: str, *markers: str) -> None:
    """On an SQL store: no table holds any of ``markers``."""
    if store_url.startswith("memory:"):
        return
    for marker in markers:
        assert not log_holds(store_url, marker), marker
        assert tables_holding(store_url, marker) == [], marker


def _found(store_url: str, *markers: str) -> None:
    """On an SQL store: the log still holds each of ``markers`` (the scan sees them)."""
    if store_url.startswith("memory:"):
        return
    for marker in markers:
        assert log_holds(store_url, marker), marker


def _reads_back(saver: NenjimSaver, thread: str, checkpoint_id: str, marker: str) -> None:
    found = saver.get_tuple(_config(thread, checkpoint_id))
    assert found is not None
    assert found.checkpoint["channel_values"] == {"small": marker, "big": f"{marker}{PADDING}"}
    assert found.metadata["note"] == marker  # type: ignore[typeddict-item]
    assert sorted(found.pending_writes) == [
        ("task", "big", f"{PADDING}{marker}"),
        ("task", "small", marker),
    ]


def test_delete_thread_purges_checkpoints_writes_and_values(
    saver: NenjimSaver, store_url: str
) -> None:
    gone = [_marker("gone-0"), _marker("gone-1"), _marker("gone-sub")]
    kept = _marker("kept")
    first = _put(saver, "gone", None, gone[0])
    _put(saver, "gone", first, gone[1])
    _put(saver, "gone", None, gone[2], ns="child:1")
    other = _put(saver, "kept", None, kept)
    before = datetime.now(UTC)

    saver.delete_thread("gone")

    assert saver.get_tuple(_config("gone")) is None
    assert list(saver.list(_config("gone"))) == []
    assert saver.get_tuple(_config("gone", ns="child:1")) is None
    with pytest.raises(CheckpointPurgedError):
        saver.as_of(_config("gone"), before)
    _reads_back(saver, "kept", other, kept)
    _gone(store_url, *gone)
    _found(store_url, kept)
    # The thread lives again from nothing.
    again = _put(saver, "gone", None, kept)
    _reads_back(saver, "gone", again, kept)


def test_prune_keep_latest_purges_all_but_the_newest(saver: NenjimSaver, store_url: str) -> None:
    markers = [_marker(f"step-{n}") for n in range(4)]
    ids: list[str] = []
    for marker in markers:
        ids.append(_put(saver, "t", ids[-1] if ids else None, marker))
    kept = _marker("other-thread")
    other = _put(saver, "u", None, kept)

    saver.prune(["t"])

    assert [t.checkpoint["id"] for t in saver.list(_config("t"))] == [ids[-1]]
    _reads_back(saver, "t", ids[-1], markers[-1])
    assert saver.get_tuple(_config("t", ids[0])) is None
    _reads_back(saver, "u", other, kept)
    _gone(store_url, *markers[:-1])
    _found(store_url, markers[-1], kept)
    # The thread goes on from its newest checkpoint.
    following = _put(saver, "t", ids[-1], kept)
    assert saver.get_tuple(_config("t")).checkpoint["id"] == following  # type: ignore[union-attr]


def test_prune_delete_purges_the_threads(saver: NenjimSaver, store_url: str) -> None:
    gone = [_marker("a"), _marker("b")]
    kept = _marker("kept")
    _put(saver, "a", None, gone[0])
    _put(saver, "b", None, gone[1])
    other = _put(saver, "c", None, kept)

    saver.prune(["a", "b"], strategy="delete")

    assert list(saver.list(_config("a"))) == list(saver.list(_config("b"))) == []
    _reads_back(saver, "c", other, kept)
    _gone(store_url, *gone)
    _found(store_url, kept)


@pytest.mark.parametrize("order", ["runs-first", "runs-last", "interleaved"])
def test_delete_for_runs_purges_the_runs_checkpoints_and_keeps_the_others(
    saver: NenjimSaver, store_url: str, order: str
) -> None:
    runs = {
        "runs-first": ["r1", "r1", "r2", "r2"],
        "runs-last": ["r2", "r2", "r1", "r1"],
        "interleaved": ["r1", "r2", "r1", "r2"],
    }[order]
    written: list[tuple[str, str, str]] = []
    for run in runs:
        marker = _marker(run)
        parent = written[-1][0] if written else None
        written.append((_put(saver, "t", parent, marker, run_id=run), run, marker))

    saver.delete_for_runs(["r1"])

    left = [(cp, marker) for cp, run, marker in written if run == "r2"]
    assert [t.checkpoint["id"] for t in saver.list(_config("t"))] == [cp for cp, _ in left][::-1]
    for checkpoint_id, marker in left:
        _reads_back(saver, "t", checkpoint_id, marker)
    newest = saver.get_tuple(_config("t"))
    assert newest is not None
    assert newest.checkpoint["id"] == left[-1][0]
    _gone(store_url, *[marker for _, run, marker in written if run == "r1"])
    _found(store_url, *[marker for _, marker in left])
    # The thread goes on from its newest checkpoint left, and can be pruned and deleted.
    _put(saver, "t", left[-1][0], _marker("after"))
    saver.prune(["t"])
    saver.delete_thread("t")
    _gone(store_url, *[marker for _, _, marker in written])


def test_a_copy_keeps_its_values_when_the_source_is_deleted(
    saver: NenjimSaver, store_url: str
) -> None:
    marker = _marker("copied")
    source = _put(saver, "source", None, marker)
    saver.copy_thread("source", "copy")

    saver.delete_thread("source")

    assert saver.get_tuple(_config("source")) is None
    _reads_back(saver, "copy", source, marker)
    saver.delete_thread("copy")
    _gone(store_url, marker)


def test_the_same_value_in_two_threads_survives_the_delete_of_one(
    saver: NenjimSaver, store_url: str
) -> None:
    marker = _marker("shared")
    first = _put(saver, "one", None, marker)
    second = _put(saver, "two", None, marker)

    saver.delete_thread("one")

    assert saver.get_tuple(_config("one", first)) is None
    _reads_back(saver, "two", second, marker)
    _found(store_url, marker)


def test_a_deleted_checkpoint_id_stays_refused_after_the_purge(saver: NenjimSaver) -> None:
    marker = _marker("refused")
    first = _put(saver, "t", None, marker)
    saver.delete_thread("t")
    again: Checkpoint = {
        "v": 4,
        "id": first,
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }
    metadata: CheckpointMetadata = {"source": "input", "step": -1, "parents": {}}
    with pytest.raises(Exception, match="stored before and deleted since"):
        saver.put(_config("t"), again, metadata, {})
    with pytest.raises(Exception, match="which was deleted"):
        saver.put_writes(_config("t", first), [("late", marker)], "task")
