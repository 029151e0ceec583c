"""``NenjimSaver`` beyond the conformance suite: races, idempotence, tombstones, history,
content addressing, shared stores, arguments."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from threads import run_together

from nenjim.cli import main
from nenjim.infrastructure.langgraph import checkpoint_log
from nenjim.infrastructure.langgraph.catalog import CATALOG as LANGGRAPH_CATALOG
from nenjim.infrastructure.langgraph.catalog import THREADS, VALUES
from nenjim.infrastructure.langgraph.values import digest, scope_of
from nenjim.infrastructure.persistence import CATALOG, Persistence
from nenjim.infrastructure.storage import ConflictError, SerializationError, open_backend
from nenjim.infrastructure.storage.audit import audit_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.langgraph import (
    AsyncNenjimSaver,
    CheckpointConflictError,
    CheckpointPurgedError,
    NenjimSaver,
)

BIG = "x" * 10_000


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


def _checkpoint(values: dict[str, Any] | None = None, **versions: Any) -> Checkpoint:
    values = values or {}
    return {
        "v": 4,
        "id": str(uuid6(clock_seq=-1)),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": values,
        "channel_versions": versions or dict.fromkeys(values, 1),
        "versions_seen": {},
        "updated_channels": None,
    }


def _meta(source: str = "loop", step: int = 0, **extra: Any) -> CheckpointMetadata:
    return {"source": source, "step": step, "parents": {}, **extra}  # type: ignore[typeddict-item]


def _put(
    saver: NenjimSaver,
    thread: str,
    parent: str | None = None,
    *,
    values: dict[str, Any] | None = None,
    source: str = "loop",
    step: int = 0,
    new: dict[str, Any] | None = None,
    **extra: Any,
) -> str:
    checkpoint = _checkpoint(values)
    versions = checkpoint["channel_versions"] if new is None else new
    stored = saver.put(_config(thread, parent), checkpoint, _meta(source, step, **extra), versions)
    checkpoint_id: str = stored["configurable"]["checkpoint_id"]
    return checkpoint_id


def _ids(saver: NenjimSaver, thread: str) -> list[str]:
    return [t.checkpoint["id"] for t in saver.list(_config(thread))]


# the race rule and racing writers
def test_a_step_that_continues_an_older_checkpoint_is_a_conflict(saver: NenjimSaver) -> None:
    root = _put(saver, "t", source="input", step=-1)
    first = _put(saver, "t", root, step=0)
    with pytest.raises(CheckpointConflictError, match=f"continues checkpoint {root}, but the"):
        _put(saver, "t", root, step=0)
    assert _ids(saver, "t") == [first, root]


def test_roots_forks_and_updates_only_append(saver: NenjimSaver) -> None:
    root = _put(saver, "t", source="input", step=-1)
    step = _put(saver, "t", root)
    fork = _put(saver, "t", root, source="fork", step=1)
    update = _put(saver, "t", root, source="update", step=1)
    second_root = _put(saver, "t", source="input", step=-1)
    assert _ids(saver, "t") == [second_root, update, fork, step, root]
    assert saver.get_tuple(_config("t")).checkpoint["id"] == second_root  # type: ignore[union-attr]


def test_two_writers_racing_on_a_thread_one_wins_none_is_lost(store_url: str) -> None:
    with NenjimSaver.from_conn_string(store_url) as first:
        root = _put(first, "race", source="input", step=-1)
        # Two savers (two backends on SQLite and PostgreSQL), each with the thread cached;
        # a memory: store lives in one saver, raced from two threads.
        other = nullcontext(first) if store_url == "memory:" else None
        with other or NenjimSaver.from_conn_string(store_url) as second:
            assert second.get_tuple(_config("race")) is not None

            def step(index: int) -> str:
                writer = (first, second)[index]
                try:
                    return _put(writer, "race", root, step=0)
                except CheckpointConflictError as conflict:
                    return f"conflict: {conflict}"

            outcomes = run_together(step, 2)
        winners = [o for o in outcomes if not o.startswith("conflict")]
        assert len(winners) == 1, outcomes
        assert "another run advanced the thread" in next(o for o in outcomes if o not in winners)
        assert _ids(first, "race") == [winners[0], root]


def test_many_racing_writers_keep_the_thread_a_chain(store_url: str) -> None:
    """Round after round, writers read the newest checkpoint, then all step from it at once:
    one step per round is stored, and the stored steps form one unbroken chain."""
    writers, rounds = 4, 6
    read = threading.Barrier(writers, timeout=30)
    with NenjimSaver.from_conn_string(store_url) as saver:
        _put(saver, "chain", source="input", step=-1)

        def advance(index: int) -> int:
            done = 0
            for _ in range(rounds):
                newest = saver.get_tuple(_config("chain"))
                assert newest is not None
                read.wait()  # every writer read the same newest checkpoint
                try:
                    _put(saver, "chain", newest.checkpoint["id"], step=index)
                    done += 1
                except CheckpointConflictError:
                    pass
                read.wait()  # every writer put before the next round reads
            return done

        written = sum(run_together(advance, writers))
        assert written == rounds
        tuples = list(saver.list(_config("chain")))
        assert len(tuples) == written + 1
        for newer, older in itertools.pairwise(tuples):
            assert newer.parent_config is not None
            assert newer.parent_config["configurable"]["checkpoint_id"] == older.checkpoint["id"]


# idempotence and write-once ids
def test_putting_the_same_checkpoint_twice_stores_it_once(saver: NenjimSaver) -> None:
    root = _put(saver, "t", source="input", step=-1)
    checkpoint = _checkpoint({"a": 1})
    config, metadata = _config("t", root), _meta(step=0)
    saver.put(config, checkpoint, metadata, {"a": 1})
    saver.put(config, checkpoint, metadata, {"a": 1})
    assert _ids(saver, "t") == [checkpoint["id"], root]
    with pytest.raises(CheckpointConflictError, match="already stored with other content"):
        saver.put(config, checkpoint, _meta(step=7), {"a": 1})


def test_a_deleted_checkpoint_id_is_not_written_again(saver: NenjimSaver) -> None:
    checkpoint = _checkpoint()
    saver.put(_config("t"), checkpoint, _meta(), {})
    saver.delete_thread("t")
    with pytest.raises(CheckpointConflictError, match="stored before and deleted since"):
        saver.put(_config("t"), checkpoint, _meta(), {})
    assert _ids(saver, "t") == []


# pending writes
def test_writes_are_idempotent_and_special_channels_are_replaced(saver: NenjimSaver) -> None:
    checkpoint = _put(saver, "t")
    config = _config("t", checkpoint)
    saver.put_writes(config, [("a", 1), ("b", 2)], "task")
    saver.put_writes(config, [("a", 10), ("b", 20)], "task")
    saver.put_writes(config, [("__error__", "first")], "task")
    saver.put_writes(config, [("__error__", "second")], "task")
    saver.put_writes(config, [("c", 3)], "other", task_path="~b")
    found = saver.get_tuple(config)
    assert found is not None
    assert found.pending_writes == [
        ("task", "__error__", "second"),
        ("task", "a", 1),
        ("task", "b", 2),
        ("other", "c", 3),
    ]


def test_a_write_may_come_before_its_checkpoint_but_not_after_its_delete(
    saver: NenjimSaver,
) -> None:
    early = _checkpoint()
    saver.put_writes(_config("t", early["id"]), [("a", 1)], "task")
    saver.put(_config("t"), early, _meta(), {})
    found = saver.get_tuple(_config("t"))
    assert found is not None
    assert found.pending_writes == [("task", "a", 1)]
    saver.delete_thread("t")
    with pytest.raises(CheckpointConflictError, match="which was deleted"):
        saver.put_writes(_config("t", early["id"]), [("b", 2)], "late")
    assert saver.get_tuple(_config("t")) is None


# values
def test_unchanged_channels_come_from_the_parent_and_are_not_serialized_again(
    saver: NenjimSaver,
) -> None:
    counting = _CountingSerde()
    saver.serde = counting
    root = _put(saver, "t", values={"big": BIG, "n": 0}, source="input", step=-1)
    assert counting.dumped == 2
    checkpoint = _checkpoint({"big": BIG, "n": 1}, big=1, n=2)
    saver.put(_config("t", root), checkpoint, _meta(), {"n": 2})
    assert counting.dumped == 3
    found = saver.get_tuple(_config("t"))
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": BIG, "n": 1}
    assert found.checkpoint["channel_versions"] == {"big": 1, "n": 2}


class _CountingSerde(JsonPlusSerializer):
    def __init__(self) -> None:
        super().__init__()
        self.dumped = 0

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.dumped += 1
        return super().dumps_typed(obj)


def test_a_value_repeated_across_checkpoints_and_writes_is_stored_once_per_thread(
    durable_store_url: str,
) -> None:
    with NenjimSaver.from_conn_string(durable_store_url) as saver:
        parent = _put(saver, "t", values={"big": BIG}, source="input", step=-1)
        saver.put_writes(_config("t", parent), [("big", BIG)], "task")
        for step in range(5):
            checkpoint = _checkpoint({"big": BIG, "n": step}, big=1, n=step + 1)
            saver.put(_config("t", parent), checkpoint, _meta(step=step), {"n": step + 1})
            parent = checkpoint["id"]
        _put(saver, "u", values={"big": BIG}, source="input", step=-1)
        saver.copy_thread("t", "copy")
        report = audit_backend(saver.backend)
        assert report.ok, report.lines()
        # One blob per thread (t, u, and the copy's own): erasing one keeps the others'.
        assert report.live["blobs"] == 3
        copied = saver.get_tuple(_config("copy"))
        assert copied is not None
        assert copied.checkpoint["channel_values"]["big"] == BIG


def test_a_custom_serde_reads_back_what_it_wrote(store_url: str) -> None:
    serde = JsonPlusSerializer(pickle_fallback=True)
    with NenjimSaver.from_conn_string(store_url, serde=serde) as saver:
        value = {1, 2, 3}
        checkpoint = _put(saver, "t", values={"s": value, "big": [BIG]})
        found = saver.get_tuple(_config("t", checkpoint))
        assert found is not None
        assert found.checkpoint["channel_values"] == {"s": value, "big": [BIG]}


# removals and copies
def test_delete_for_runs_and_prune_keep_the_newest_pointer(saver: NenjimSaver) -> None:
    first = _put(saver, "t", source="input", step=-1, run_id="r1")
    second = _put(saver, "t", first, step=0, run_id="r2")
    saver.delete_for_runs(["r2"])
    assert saver.get_tuple(_config("t")).checkpoint["id"] == first  # type: ignore[union-attr]
    third = _put(saver, "t", first, step=1, run_id="r3")
    assert _ids(saver, "t") == [third, first]
    fourth = _put(saver, "t", third, step=2)
    saver.prune(["t"])
    assert _ids(saver, "t") == [fourth]
    assert saver.get_tuple(_config("t", second)) is None


def test_prune_refuses_threads_with_a_delta_channel_and_prunes_nothing(
    saver: NenjimSaver,
) -> None:
    first = _put(saver, "plain", source="input", step=-1)
    _put(saver, "plain", first)
    root = _put(saver, "delta", source="input", step=-1)
    _put(saver, "delta", root, counters_since_delta_snapshot={"ch": [1, 1]})
    with pytest.raises(NotImplementedError, match="'delta'"):
        saver.prune(["plain", "delta"])
    assert len(_ids(saver, "plain")) == 2
    saver.prune(["delta"], strategy="delete")
    assert _ids(saver, "delta") == []


def test_copying_into_a_thread_with_checkpoints_is_refused(saver: NenjimSaver) -> None:
    _put(saver, "source")
    target = _put(saver, "target")
    with pytest.raises(CheckpointConflictError, match="the target has checkpoints"):
        saver.copy_thread("source", "target")
    assert _ids(saver, "target") == [target]


# history beyond LangGraph's view
def test_as_of_tells_purged_checkpoints_from_none_live(saver: NenjimSaver) -> None:
    before_all = datetime.now(UTC)
    first = _put(saver, "t", values={"n": 1}, source="input", step=-1)
    saver.put_writes(_config("t", first), [("__interrupt__", "ask")], "task")
    after_first = datetime.now(UTC)
    second = _put(saver, "t", first, values={"n": 2})
    saver.put_writes(_config("t", second), [("__interrupt__", "again")], "task")
    after_second = datetime.now(UTC)
    saver.prune(["t"])
    after_prune = datetime.now(UTC)

    # The pruned checkpoint is purged; the kept one still answers for its time.
    with pytest.raises(CheckpointPurgedError) as purged:
        saver.as_of(_config("t"), after_first)
    assert (purged.value.checkpoint_id, purged.value.thread_id) == (first, "t")
    assert after_second <= purged.value.removed_at <= after_prune
    kept = saver.as_of(_config("t"), after_second)
    assert kept is not None
    assert (kept.checkpoint["id"], kept.checkpoint["channel_values"]) == (second, {"n": 2})
    assert kept.pending_writes == [("task", "__interrupt__", "again")]
    assert saver.as_of(_config("t", first), after_prune) is None  # not live then

    saver.delete_thread("t")
    assert saver.get_tuple(_config("t")) is None
    assert saver.as_of(_config("t"), before_all) is None  # nothing was live yet
    with pytest.raises(CheckpointPurgedError, match=f"checkpoint {first} of thread 't'"):
        saver.as_of(_config("t", first), after_first)
    with pytest.raises(CheckpointPurgedError) as deleted:
        saver.as_of(_config("t"), after_prune)
    assert deleted.value.checkpoint_id == second
    assert saver.as_of(_config("t"), datetime.now(UTC)) is None
    # A new life of the thread answers again.
    third = _put(saver, "t", values={"n": 3})
    assert saver.as_of(_config("t"), datetime.now(UTC)).checkpoint["id"] == third  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="time zone"):
        saver.as_of(_config("t"), datetime.now())


def test_as_of_gives_a_replaced_write_as_it_was_then(saver: NenjimSaver) -> None:
    checkpoint = _put(saver, "t")
    saver.put_writes(_config("t", checkpoint), [("__error__", "first")], "task")
    between = datetime.now(UTC)
    saver.put_writes(_config("t", checkpoint), [("__error__", "second")], "task")
    assert saver.as_of(_config("t"), between).pending_writes == [  # type: ignore[union-attr]
        ("task", "__error__", "first")
    ]
    later = datetime.now(UTC) + timedelta(seconds=1)
    assert saver.as_of(_config("t"), later).pending_writes == [  # type: ignore[union-attr]
        ("task", "__error__", "second")
    ]


# shared stores and the audit
def test_persistence_and_the_saver_share_one_store_and_the_audit_covers_both(
    durable_store_url: str,
) -> None:
    persistence = Persistence.open(durable_store_url)
    try:
        persistence.contents.put_text("hello")
        with NenjimSaver.from_conn_string(durable_store_url) as saver:
            root = _put(saver, "t", values={"big": BIG}, source="input", step=-1)
            saver.put_writes(_config("t", root), [("a", 1)], "task")
            saver.prune(["t"], strategy="delete")
            _put(saver, "u")
        shared = open_backend(durable_store_url, (*CATALOG, *LANGGRAPH_CATALOG))
        try:
            assert (
                Persistence(shared).contents.fetch_text(persistence.contents.put_text("hello"))
                == "hello"
            )
            assert len(list(NenjimSaver(shared).list(_config("u")))) == 1
            assert audit_backend(shared).ok
        finally:
            shared.close()
    finally:
        persistence.close()
    assert main(["storage", "audit", "--store", durable_store_url]) == 0


def test_the_audit_of_a_store_only_the_saver_wrote_is_clean(durable_store_url: str) -> None:
    with NenjimSaver.from_conn_string(durable_store_url) as saver:
        _put(saver, "t", values={"big": BIG})
    assert main(["storage", "audit", "--store", durable_store_url]) == 0


# the async saver and LangGraph's conventions
def test_the_async_saver_works_from_the_loop_in_both_families(store_url: str) -> None:
    async def scenario() -> list[str]:
        async with AsyncNenjimSaver.from_conn_string(store_url) as saver:
            await saver.setup()
            await saver.setup()
            checkpoint = _checkpoint({"a": 1})
            await saver.aput(_config("t"), checkpoint, _meta(), {"a": 1})
            assert saver.get_tuple(_config("t")) is not None  # sync, on the loop's thread
            return [t.checkpoint["id"] async for t in saver.alist(_config("t"))]

    assert len(asyncio.run(scenario())) == 1


def test_with_allowlist_copies_share_the_store(saver: NenjimSaver) -> None:
    clone = saver.with_allowlist([("some.module", "Class")])
    _put(clone, "t")
    assert len(_ids(saver, "t")) == 1


def test_versions_are_increasing_strings_like_langgraph_savers(saver: NenjimSaver) -> None:
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    assert first.startswith("0" * 31 + "1.")
    assert second.startswith("0" * 31 + "2.")
    assert second > first
    assert saver.get_next_version(5, None).startswith("0" * 30 + "06.")  # type: ignore[arg-type]


def test_list_selects_threads_namespaces_ids_and_metadata(saver: NenjimSaver) -> None:
    a = _put(saver, "a", score=1, flag=True)
    b = _put(saver, "b", score=1.0, flag=1)
    child = saver.put(_config("a", ns="child"), _checkpoint(), _meta(), {})
    everything = {t.checkpoint["id"] for t in saver.list(None)}
    assert {a, b, child["configurable"]["checkpoint_id"]} <= everything
    assert [t.checkpoint["id"] for t in saver.list(None, filter={"flag": True})] == [a]
    assert {t.checkpoint["id"] for t in saver.list(None, filter={"score": 1})} >= {a, b}
    assert len(list(saver.list({"configurable": {"thread_id": "a"}}))) == 2
    assert [t.checkpoint["id"] for t in saver.list(_config("a", a))] == [a]
    assert list(saver.list(_config("a"), limit=0)) == []
    # Where LangGraph's savers differ (docs/langgraph.md): a missing key never matches, not
    # even None (PostgresSaver; SqliteSaver matches it), nested values compare whole
    # (SqliteSaver; PostgresSaver matches a part).
    nested = _put(saver, "c", nested={"x": 1, "y": [1, 2]}, none=None)
    assert list(saver.list(None, filter={"missing": None})) == []
    assert [t.checkpoint["id"] for t in saver.list(None, filter={"none": None})] == [nested]
    assert list(saver.list(None, filter={"nested": {"x": 1}})) == []
    assert [
        t.checkpoint["id"] for t in saver.list(None, filter={"nested": {"y": [1, 2.0], "x": 1}})
    ] == [nested]


def test_bad_arguments_are_refused_before_anything_is_written(saver: NenjimSaver) -> None:
    with pytest.raises(ValueError, match="needs config\\['configurable'\\]\\['thread_id'\\]"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(ValueError, match="contains NUL"):
        _put(saver, "bad\0thread")
    with pytest.raises(TypeError, match="not a single str"):
        saver.prune("t")
    with pytest.raises(ValueError, match="unknown prune strategy"):
        saver.prune(["t"], strategy="keep_some")
    with pytest.raises(TypeError, match="not a single str"):
        saver.delete_for_runs("r1")
    with pytest.raises(ValueError, match="needs config\\['configurable'\\]\\['checkpoint_id'\\]"):
        saver.put_writes(_config("t"), [("a", 1)], "task")
    with pytest.raises(Exception, match="is not JSON"):
        _put(saver, "t", unserializable=object())
    assert list(saver.list(None)) == []


def test_the_saver_is_safe_from_many_threads(saver: NenjimSaver) -> None:
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(index: int) -> None:
        try:
            root = _put(saver, f"t{index}", values={"big": BIG}, source="input", step=-1)
            for step in range(3):
                saver.put_writes(_config(f"t{index}", root), [("n", step)], f"task{step}")
                root = _put(saver, f"t{index}", root, values={"big": BIG, "n": step}, step=step)
        except BaseException as error:
            with lock:
                errors.append(error)
            raise

    run_together(work, 6)
    assert errors == []
    for index in range(6):
        assert len(_ids(saver, f"t{index}")) == 4


# how values are stored
def test_values_are_compressed_when_it_pays_and_checked_against_their_digest(
    tmp_path: Any,
) -> None:
    store = f"sqlite://{tmp_path / 'values.db'}"
    compressible, random_bytes = "abc" * 1000, os.urandom(4000)
    with NenjimSaver.from_conn_string(store) as saver:
        _put(saver, "t", values={"text": compressible, "raw": random_bytes})
        blobs = saver.backend.view.blobs(VALUES)
        encodings = {}
        for name, value in (("text", compressible), ("raw", random_bytes)):
            key = f"{digest(*saver.serde.dumps_typed(value))}@{scope_of('t')}"
            encodings[name] = blobs.fetch(key).attributes["encoding"]
    assert encodings == {"text": "zlib", "raw": "identity"}
    with sqlite3.connect(tmp_path / "values.db") as conn:
        conn.execute(
            "UPDATE storage_blobs SET data = ? WHERE resource = 'langgraph.values' "
            "AND attributes LIKE '%identity%'",
            (os.urandom(len(random_bytes) + 5),),
        )
    with (
        NenjimSaver.from_conn_string(store) as fresh,  # nothing cached
        pytest.raises(SerializationError, match="does not match its digest"),
    ):
        fresh.get_tuple(_config("t"))


def test_damaged_rows_are_refused_by_every_read_after_a_good_one(tmp_path: Any) -> None:
    # Rows are decoded and checked once per text: a row damaged behind the saver's back
    # after it was read is a new text, checked (and refused) on every read.
    path = tmp_path / "damaged.db"
    with NenjimSaver.from_conn_string(f"sqlite://{path}") as saver:
        checkpoint = _put(saver, "t")
        saver.put_writes(_config("t", checkpoint), [("a", 1), ("b", 2)], "task")
        found = saver.get_tuple(_config("t"))
        assert found is not None
        assert [write[1] for write in found.pending_writes or ()] == ["a", "b"]
        assert len(list(saver.list(_config("t")))) == 1
        damages = {
            "revision = -1": "malformed",
            "key = ''": "malformed",
            "payload = '{\"body\": 1}'": "Canonical JSON",
        }
        where = "WHERE resource = 'langgraph.writes'"
        with sqlite3.connect(path) as conn:
            row = conn.execute(f"SELECT key, revision, payload FROM storage_records {where}")
            good = row.fetchone()
        for damage, refusal in damages.items():
            with sqlite3.connect(path) as conn:
                conn.execute(f"UPDATE storage_records SET {damage} {where}")
            for _ in range(2):
                with pytest.raises(SerializationError, match=refusal):
                    saver.get_tuple(_config("t"))
                with pytest.raises(SerializationError, match=refusal):
                    list(saver.list(_config("t")))
            with sqlite3.connect(path) as conn:
                conn.execute(
                    f"UPDATE storage_records SET key = ?, revision = ?, payload = ? {where}", good
                )
            assert saver.get_tuple(_config("t")) == found


def test_a_newest_checkpoint_edited_behind_the_saver_reads_as_edited(tmp_path: Any) -> None:
    # The saver keeps the newest entry it decoded; a read whose stream holds anything else
    # at that position (here the same id, edited) decodes what is stored.
    path = tmp_path / "edited.db"
    with NenjimSaver.from_conn_string(f"sqlite://{path}") as saver:
        _put(saver, "t", step=3)
        found = saver.get_tuple(_config("t"))
        assert found is not None
        assert found.metadata["step"] == 3
        stream = str(events.entry_stream(THREADS.id, '["t",""]'))
        with sqlite3.connect(path) as conn:
            version, state = conn.execute(
                "SELECT originator_version, state FROM storage_events WHERE originator_id = ? "
                "ORDER BY originator_version DESC LIMIT 1",
                (stream,),
            ).fetchone()
            data = json.loads(state)
            assert '"step":3' in data["payload"]["body"]
            data["payload"]["body"] = data["payload"]["body"].replace('"step":3', '"step":7')
            conn.execute(
                "UPDATE storage_events SET state = ? WHERE originator_id = ? "
                "AND originator_version = ?",
                (json.dumps(data).encode("utf-8"), stream, version),
            )
        edited = saver.get_tuple(_config("t"))
        assert edited is not None
        assert edited.metadata["step"] == 7


def test_a_tasks_writes_come_in_langgraphs_order_whatever_order_they_were_stored(
    saver: NenjimSaver,
) -> None:
    # One task's record is read back once per process and its writes put in order once:
    # batches of the same task on other paths, and other tasks, still sort as LangGraph's.
    checkpoint = _put(saver, "t")
    target = _config("t", checkpoint)
    saver.put_writes(target, [("late", 1), ("later", 2)], "task-b", "path-2")
    # Indexes 0 and 1 are stored already (kept); index 2 comes on another path.
    saver.put_writes(target, [("kept", 0), ("kept", 0), ("early", 3)], "task-b", "path-1")
    for _ in range(2):  # one task alone
        found = saver.get_tuple(_config("t"))
        assert found is not None
        assert [write[1] for write in found.pending_writes or ()] == ["early", "late", "later"]
    saver.put_writes(target, [("other", 4)], "task-a", "path-2")
    for _ in range(2):
        found = saver.get_tuple(_config("t"))
        assert found is not None
        assert [write[1] for write in found.pending_writes or ()] == [
            "early",
            "other",
            "late",
            "later",
        ]


def test_a_namespace_of_none_is_the_root_namespace(saver: NenjimSaver) -> None:
    checkpoint = _put(saver, "t")
    found = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": None}})
    assert found is not None
    assert found.config["configurable"] == {
        "thread_id": "t",
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint,
    }


def test_prune_delete_takes_every_listed_thread_in_one_transaction(saver: NenjimSaver) -> None:
    _put(saver, "a")
    _put(saver, "b")
    saver.prune(["a", "b"], strategy="delete")
    assert list(saver.list(None)) == []
    then = saver.as_of(_config("a"), datetime.now(UTC))
    assert then is None


def test_a_write_that_keeps_losing_to_other_writers_is_a_checkpoint_conflict(
    saver: NenjimSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry loop gives up (here at once) on a head another writer moved: the error is the
    saver's own, with the storage conflict as its cause, and nothing is written."""
    monkeypatch.setattr(checkpoint_log, "ATTEMPTS", 1)
    root = _put(saver, "t", source="input", step=-1)  # this saver now knows the head
    other = NenjimSaver(saver.backend)  # another writer, with its own view of the thread
    step = _put(other, "t", root)
    with pytest.raises(CheckpointConflictError, match="kept changing") as refused:
        _put(saver, "t", root, source="fork", step=1)
    assert isinstance(refused.value.__cause__, ConflictError)
    assert not isinstance(refused.value.__cause__, CheckpointConflictError)
    assert _ids(saver, "t") == [step, root]


def test_a_checkpoint_id_put_again_with_other_values_is_refused(saver: NenjimSaver) -> None:
    """LangGraph's savers overwrite; here a checkpoint id is written once, values included."""
    root = _put(saver, "t", source="input", step=-1)
    checkpoint = _checkpoint({"small": 1, "big": BIG}, small=1, big=1)
    config = _config("t", root)
    saver.put(config, checkpoint, _meta(), {"small": 1, "big": 1})
    saver.put(config, checkpoint, _meta(), {"small": 1, "big": 1})  # the very same: a no-op
    saver.put(config, checkpoint, _meta(), {})  # unchanged channels, same values: a no-op
    for other in ({"small": 2, "big": BIG}, {"small": 1, "big": BIG + "y"}, {"small": 1}):
        changed = {**checkpoint, "channel_values": other}
        for new_versions in ({"small": 1, "big": 1}, {}):
            with pytest.raises(CheckpointConflictError, match="already stored with other content"):
                saver.put(config, changed, _meta(), new_versions)
    with pytest.raises(CheckpointConflictError, match="already stored with other content"):
        saver.put(config, checkpoint, _meta(step=5), {})
    stored = saver.get_tuple(_config("t", checkpoint["id"]))
    assert stored is not None
    assert stored.checkpoint["channel_values"] == {"small": 1, "big": BIG}
    assert _ids(saver, "t") == [checkpoint["id"], root]


def test_list_limits_follow_langgraph_savers(saver: NenjimSaver) -> None:
    """A negative limit is no limit (``SqliteSaver``; ``PostgresSaver`` fails in the database),
    ``0`` gives nothing (both)."""
    ids = [_put(saver, "t", source="update", step=step) for step in range(3)]
    assert _ids(saver, "t") == ids[::-1]
    assert [t.checkpoint["id"] for t in saver.list(_config("t"), limit=-1)] == ids[::-1]
    assert [t.checkpoint["id"] for t in saver.list(_config("t"), limit=-5)] == ids[::-1]
    assert list(saver.list(_config("t"), limit=0)) == []
    assert [t.checkpoint["id"] for t in saver.list(_config("t"), limit=1)] == ids[-1:]
    filtered = saver.list(_config("t"), filter={"step": 1}, limit=-1)
    assert [t.checkpoint["id"] for t in filtered] == ids[1:2]


def test_list_from_the_stream_newest_first_selects_what_the_rows_select(
    saver: NenjimSaver,
) -> None:
    """``list`` of one namespace with a limit, ``before`` or a filter reads the stream from its
    head; it gives what reading every live row gives, with ids out of append order and after
    removals."""
    ids = [
        _put(saver, "t", source="update", step=step, run_id=f"r{step % 3}") for step in range(40)
    ]
    for low in ("0", "00000000-0000-6000-8000-000000000001", "1"):  # roots older than the rest
        checkpoint = {**_checkpoint(), "id": low}
        saver.put(_config("t"), checkpoint, _meta("update", step=99, run_id="r0"), {})

    def compare() -> None:
        everything = list(saver.list({"configurable": {"thread_id": "t"}}))  # every row
        all_ids = [t.checkpoint["id"] for t in everything]
        for limit in (None, 1, 2, 7, 100, -1):
            for before in (None, ids[-1], ids[20], "1", "0"):
                for wanted in (None, {"run_id": "r1"}, {"step": 99}):
                    expected = [
                        t.checkpoint["id"]
                        for t in everything
                        if (before is None or t.checkpoint["id"] < before)
                        and (
                            wanted is None or all(t.metadata.get(k) == v for k, v in wanted.items())
                        )
                    ]
                    if limit is not None and limit >= 0:
                        expected = expected[:limit]
                    got = saver.list(
                        _config("t"),
                        limit=limit,
                        before=None if before is None else _config("t", before),
                        filter=wanted,
                    )
                    assert [t.checkpoint["id"] for t in got] == expected, (limit, before, wanted)
        assert all_ids == sorted(all_ids, reverse=True)

    compare()
    saver.delete_for_runs(["r2"])
    compare()
    saver.prune(["t"])
    compare()


def test_a_thread_deleted_while_it_is_read_reads_as_gone(
    saver: NenjimSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer deletes the thread between reading a checkpoint's entry and reading its
    values: ``get_tuple`` and ``list`` answer as after the delete, never with a storage
    ``NotFoundError``."""
    reads = {
        "newest": lambda reader, root: reader.get_tuple(_config("t")),
        "by id": lambda reader, root: reader.get_tuple(_config("t", root)),
        "list": lambda reader, root: list(reader.list(_config("t"))),
        "list limit": lambda reader, root: list(reader.list(_config("t"), limit=1)),
    }
    for name, read in reads.items():
        root = _put(saver, "t", source="input", step=-1, values={"big": BIG})
        reader = NenjimSaver(saver.backend)  # a process that has not read the values yet
        for method in ("get", "select"):
            original = getattr(reader.log, method)

            def then_delete(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                found = _original(*args, **kwargs)
                saver.delete_thread("t")
                return found

            monkeypatch.setattr(reader.log, method, then_delete)
        assert read(reader, root) in (None, []), name


def test_the_newest_read_follows_what_another_saver_wrote_since(durable_store_url: str) -> None:
    # Each saver remembers the thread's newest checkpoint as it last saw it and reads that
    # checkpoint's writes together with the thread's head: what another process wrote
    # since (a newer checkpoint, more writes to the same one) must still be what it reads.
    with (
        NenjimSaver.from_conn_string(durable_store_url) as here,
        NenjimSaver.from_conn_string(durable_store_url) as there,
    ):
        first = _put(here, "t", values={"v": 1})
        here.put_writes(_config("t", first), [("a", 1)], "task-1")
        seen = here.get_tuple(_config("t"))
        assert seen is not None
        assert [w[1:] for w in seen.pending_writes or ()] == [("a", 1)]

        there.put_writes(_config("t", first), [("b", 2)], "task-2")
        again = here.get_tuple(_config("t"))
        assert again is not None
        assert again.checkpoint["id"] == first
        assert sorted(w[1:] for w in again.pending_writes or ()) == [("a", 1), ("b", 2)]

        second = _put(there, "t", first, values={"v": 2}, step=1)
        there.put_writes(_config("t", second), [("c", 3)], "task-3")
        newest = here.get_tuple(_config("t"))
        assert newest is not None
        assert newest.checkpoint["id"] == second
        assert [w[1:] for w in newest.pending_writes or ()] == [("c", 3)]

        by_id = here.get_tuple(_config("t", first))
        assert by_id is not None
        assert sorted(w[1:] for w in by_id.pending_writes or ()) == [("a", 1), ("b", 2)]
        assert here.get_tuple(_config("t", str(uuid6(clock_seq=-1)))) is None
        listed = list(here.list(_config("t")))
        assert [t.checkpoint["id"] for t in listed] == [second, first]
        assert [[w[1:] for w in t.pending_writes or ()] for t in listed] == [
            [("c", 3)],
            [("a", 1), ("b", 2)],
        ]


def test_a_read_by_id_where_the_checkpoint_was_is_checked_by_its_row(
    durable_store_url: str,
) -> None:
    # A saver remembers where it last found a checkpoint and reads the entry there with
    # the checkpoint's row. Another process deletes the thread and writes new checkpoints,
    # one where the remembered checkpoint was: the row says the checkpoint is gone.
    with (
        NenjimSaver.from_conn_string(durable_store_url) as here,
        NenjimSaver.from_conn_string(durable_store_url) as there,
    ):
        root = _put(here, "t", source="input", step=-1)
        first = _put(here, "t", root, values={"v": 1}, step=0)
        _put(here, "t", first, step=1)
        for _ in range(2):  # found by its row, then where it was found
            found = here.get_tuple(_config("t", first))
            assert found is not None
            assert found.checkpoint["channel_values"] == {"v": 1}

        there.delete_thread("t")
        other = _put(there, "t", source="input", step=-1)
        newer = _put(there, "t", other, values={"v": 2}, step=0)
        assert here.get_tuple(_config("t", first)) is None
        found = here.get_tuple(_config("t", newer))
        assert found is not None
        assert found.checkpoint["channel_values"] == {"v": 2}
        # and no checkpoint ever takes its id again, so a live row with that id names its
        # one entry
        again = {**_checkpoint({"v": 3}), "id": first}
        with pytest.raises(CheckpointConflictError, match="written once"):
            there.put(_config("t", newer), again, _meta("loop", 1), {"v": 1})  # type: ignore[arg-type]


def test_what_a_read_returns_is_the_callers_to_change(saver: NenjimSaver) -> None:
    # LangGraph changes the checkpoints it reads; the next read must not see that.
    first = _put(saver, "t", values={"v": [1, 2]}, step=0, nested={"deep": [{"k": "v"}]})
    for _ in range(2):
        found = saver.get_tuple(_config("t", first))
        assert found is not None
        assert found.checkpoint["channel_versions"] == {"v": 1}
        assert found.metadata["nested"] == {"deep": [{"k": "v"}]}  # type: ignore[typeddict-item]
        found.checkpoint["channel_versions"]["v"] = 99
        found.checkpoint["versions_seen"]["x"] = {"y": 1}
        found.metadata["nested"]["deep"][0]["k"] = "changed"  # type: ignore[typeddict-item]
        found.metadata["step"] = 7
        (listed,) = saver.list(_config("t"))
        assert listed.checkpoint["channel_versions"] == {"v": 1}
        assert listed.checkpoint["versions_seen"] == {}
        assert listed.metadata["step"] == 0
        listed.checkpoint["id"] = "changed"
