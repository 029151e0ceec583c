"""LangGraph's store scenarios, run against NenjimStore on every kind and against LangGraph's
own ``SqliteStore`` and ``PostgresStore`` as references.

Ported from the scenarios of LangGraph's store tests and the ``BaseStore``
docstrings. Where the two references disagree, the test says so
(``DIFFERENCE``), asserts what each does, and nenjim's choice is written in
docs/langgraph.md ("Where LangGraph's stores differ").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.sqlite.aio import AsyncSqliteStore

from nenjim.langgraph import AsyncNenjimStore

NENJIM = ("nenjim-memory", "nenjim-sqlite", "nenjim-postgresql")  # as conftest.py names them
NewStore = Callable[..., BaseStore]


@pytest.fixture
def tick(impl: str) -> float:
    """The time step of the scenarios that wait, in seconds: one second for LangGraph's
    stores (SqliteStore keeps time to the second), a quarter of one for nenjim's (it keeps
    microseconds), so that the waits of the suite stay short. TTLs and waits are multiples."""
    return 0.25 if impl in NENJIM else 1.0


def minutes(seconds: float) -> float:
    """``seconds`` as the TTL minutes LangGraph's stores take."""
    return seconds / 60


def _keys(items: list[Any]) -> set[str]:
    return {item.key for item in items}


# get / put / delete
def test_put_get_and_delete(new_store: NewStore) -> None:
    store = new_store()
    assert store.get(("users", "1"), "prefs") is None
    store.put(("users", "1"), "prefs", {"theme": "dark", "size": 3})
    item = store.get(("users", "1"), "prefs")
    assert isinstance(item, Item)
    assert item.namespace == ("users", "1")
    assert item.key == "prefs"
    assert item.value == {"theme": "dark", "size": 3}
    assert isinstance(item.created_at, datetime)
    assert isinstance(item.updated_at, datetime)
    store.put(("users", "1"), "prefs", {"theme": "light"})
    again = store.get(("users", "1"), "prefs")
    assert again is not None
    assert again.value == {"theme": "light"}
    assert again.updated_at >= item.updated_at
    store.delete(("users", "1"), "prefs")
    assert store.get(("users", "1"), "prefs") is None
    store.delete(("users", "1"), "prefs")  # deleting what is gone does nothing
    store.put(("users", "1"), "prefs", {"theme": "again"})
    back = store.get(("users", "1"), "prefs")
    assert back is not None
    assert back.value == {"theme": "again"}


def test_items_are_apart_by_namespace_and_key(new_store: NewStore) -> None:
    store = new_store()
    store.put(("a",), "k", {"v": 1})
    store.put(("a", "b"), "k", {"v": 2})
    store.put(("a",), "k2", {"v": 3})
    store.put(("A",), "k", {"v": 4})
    assert [
        store.get(ns, k).value["v"]
        for ns, k in [  # type: ignore[union-attr]
            (("a",), "k"),
            (("a", "b"), "k"),
            (("a",), "k2"),
            (("A",), "k"),
        ]
    ] == [1, 2, 3, 4]
    store.delete(("a",), "k")
    assert store.get(("a",), "k") is None
    assert store.get(("a", "b"), "k") is not None


def test_long_namespaces_and_keys(new_store: NewStore) -> None:
    store = new_store()
    namespace = tuple(f"label{i:03}" for i in range(60))
    key = "k" * 600
    store.put(namespace, key, {"v": "long"})
    store.put(namespace, key + "x", {"v": "longer"})
    found = store.get(namespace, key)
    assert found is not None
    assert found.value == {"v": "long"}
    assert found.key == key
    assert _keys(store.search(namespace[:5])) == {key, key + "x"}
    assert store.list_namespaces(prefix=namespace[:2]) == [namespace]
    store.delete(namespace, key)
    assert store.get(namespace, key) is None


def test_unicode_and_nested_values(new_store: NewStore) -> None:
    store = new_store()
    value = {"text": "héllo ✓ 日本", "nested": {"list": [1, 2.5, None, True], "d": {"x": "y"}}}
    store.put(("ü", "名前"), "ключ", value)
    found = store.get(("ü", "名前"), "ключ")
    assert found is not None
    assert found.value == value


def test_update_keeps_created_at(new_store: NewStore, impl: str, tick: float) -> None:
    """DIFFERENCE: SqliteStore's ``INSERT OR REPLACE`` sets ``created_at`` again on every
    put; PostgresStore (and InMemoryStore) keep the first one. nenjim keeps it."""
    store = new_store()
    store.put(("n",), "k", {"v": 1})
    first = store.get(("n",), "k")
    time.sleep(1.1 * tick)
    store.put(("n",), "k", {"v": 2})
    second = store.get(("n",), "k")
    assert first is not None
    assert second is not None
    assert second.updated_at > first.updated_at
    if impl == "ref-sqlite":
        assert second.created_at > first.created_at
    else:
        assert second.created_at == first.created_at


def test_timestamps(new_store: NewStore, impl: str) -> None:
    """DIFFERENCE: SqliteStore gives naive datetimes of one-second resolution (SQLite's
    ``CURRENT_TIMESTAMP``, UTC); PostgresStore aware ones. nenjim gives aware UTC ones."""
    store = new_store()
    before = datetime.now(UTC).replace(microsecond=0)
    store.put(("n",), "k", {"v": 1})
    item = store.get(("n",), "k")
    assert item is not None
    if impl == "ref-sqlite":
        assert item.created_at.tzinfo is None
        assert item.created_at.replace(tzinfo=UTC) >= before
    else:
        assert item.created_at.tzinfo is not None
        assert item.created_at >= before
        assert item.created_at == item.updated_at


# search
def _people(store: BaseStore) -> None:
    store.put(("people", "eu"), "ann", {"name": "ann", "age": 3, "city": "oslo", "vip": True})
    store.put(("people", "eu"), "bob", {"name": "bob", "age": 5, "city": "rome", "vip": False})
    store.put(("people", "us"), "cy", {"name": "cy", "age": 7, "city": "nyc"})
    store.put(("people", "us", "ny"), "di", {"name": "di", "age": 9, "tags": ["a", "b"]})
    store.put(("peoplex",), "ed", {"name": "ed", "age": 5})
    store.put(("pets",), "fi", {"name": "fi", "age": 5, "meta": {"kind": "cat"}})


def test_search_by_namespace_prefix(new_store: NewStore) -> None:
    store = new_store()
    _people(store)
    assert _keys(store.search(("people",))) == {"ann", "bob", "cy", "di"}
    assert _keys(store.search(("people", "us"))) == {"cy", "di"}
    assert _keys(store.search(("people", "us", "ny"))) == {"di"}
    assert _keys(store.search(("people", "u"))) == set()
    assert _keys(store.search((), limit=100)) == {"ann", "bob", "cy", "di", "ed", "fi"}
    found = store.search(("people", "us", "ny"))[0]
    assert found.namespace == ("people", "us", "ny")
    assert found.value["tags"] == ["a", "b"]
    assert found.score is None


def test_search_with_equality_filters(new_store: NewStore) -> None:
    store = new_store()
    _people(store)
    assert _keys(store.search((), filter={"city": "rome"})) == {"bob"}
    assert _keys(store.search((), filter={"age": 5})) == {"bob", "ed", "fi"}
    assert _keys(store.search(("people",), filter={"age": 5})) == {"bob"}
    assert _keys(store.search((), filter={"age": 5, "name": "ed"})) == {"ed"}
    assert _keys(store.search((), filter={"vip": True})) == {"ann"}
    assert _keys(store.search((), filter={"vip": False})) == {"bob"}
    assert _keys(store.search((), filter={"tags": ["a", "b"]})) == {"di"}
    assert _keys(store.search((), filter={"city": "nowhere"})) == set()


def test_an_object_filter_is_operators(new_store: NewStore) -> None:
    """Both references read an object in a filter as operators (``{"meta": {"kind": "cat"}}``
    is ``ValueError: Unsupported operator: kind``), not as equality (InMemoryStore's
    reading); nenjim follows them."""
    store = new_store()
    _people(store)
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.search((), filter={"meta": {"kind": "cat"}})
    # ({"$eq": {"kind": "cat"}} finds "fi" on PostgresStore, nothing on SqliteStore: it
    # compares json_extract's text with orjson's bytes; nenjim compares JSON values.)


def test_search_with_operators(new_store: NewStore) -> None:
    store = new_store()
    _people(store)
    assert _keys(store.search(("people",), filter={"age": {"$gt": 5}})) == {"cy", "di"}
    assert _keys(store.search(("people",), filter={"age": {"$gte": 5}})) == {"bob", "cy", "di"}
    assert _keys(store.search(("people",), filter={"age": {"$lt": 5}})) == {"ann"}
    assert _keys(store.search(("people",), filter={"age": {"$lte": 5}})) == {"ann", "bob"}
    assert _keys(store.search(("people",), filter={"age": {"$eq": 7}})) == {"cy"}
    assert _keys(store.search(("people",), filter={"age": {"$gt": 3, "$lt": 9}})) == {
        "bob",
        "cy",
    }
    assert _keys(store.search(("people",), filter={"city": {"$ne": "oslo"}})) == {"bob", "cy"}
    assert _keys(store.search(("people",), filter={"city": {"$gt": "oslo"}})) == {"bob"}
    assert _keys(store.search(("people",), filter={"name": {"$lte": "bob"}})) == {"ann", "bob"}
    assert _keys(store.search((), filter={"age": {"$gte": 5}, "name": {"$ne": "bob"}})) == {
        "cy",
        "di",
        "ed",
        "fi",
    }


def test_unknown_operator_is_refused(new_store: NewStore) -> None:
    store = new_store()
    _people(store)
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.search((), filter={"age": {"$in": [1, 2]}})


def test_numbers_compare_as_numbers(new_store: NewStore, impl: str) -> None:
    """DIFFERENCE: PostgresStore compares ``$gt``/``$gte``/``$lt``/``$lte`` as text
    (``value->>key > '5'``), so 10 < 5 there; SqliteStore (and InMemoryStore) as numbers.
    nenjim compares numbers as numbers."""
    store = new_store()
    for number in (3, 7, 10, 40):
        store.put(("n",), str(number), {"n": number})
    found = _keys(store.search(("n",), filter={"n": {"$gt": 5}}))
    if impl == "ref-postgres":
        assert found == {"7"}  # "10" and "40" sort before "5" as text
    else:
        assert found == {"7", "10", "40"}


def test_null_equality(new_store: NewStore, impl: str) -> None:
    """DIFFERENCE: a filter ``{"k": None}`` on SqliteStore (``json_extract(...) IS NULL``)
    also matches items without ``k``; on PostgresStore only an explicit null. nenjim
    matches the explicit null only."""
    store = new_store()
    store.put(("n",), "null", {"k": None})
    store.put(("n",), "missing", {"other": 1})
    store.put(("n",), "set", {"k": 1})
    found = _keys(store.search(("n",), filter={"k": None}))
    if impl == "ref-sqlite":
        assert found == {"null", "missing"}
    else:
        assert found == {"null"}


def test_ne_skips_items_without_the_field(new_store: NewStore) -> None:
    store = new_store()
    store.put(("n",), "a", {"k": "x"})
    store.put(("n",), "b", {"k": "y"})
    store.put(("n",), "c", {"other": "x"})
    assert _keys(store.search(("n",), filter={"k": {"$ne": "x"}})) == {"b"}


def test_search_pagination(new_store: NewStore) -> None:
    store = new_store()
    for i in range(7):
        store.put(("page",), f"k{i}", {"i": i})
    pages = [store.search(("page",), limit=3, offset=offset) for offset in (0, 3, 6, 9)]
    assert [len(page) for page in pages] == [3, 3, 1, 0]
    keys = [item.key for page in pages for item in page]
    assert sorted(keys) == [f"k{i}" for i in range(7)]
    assert len(store.search(("page",))) == 7  # the default limit is 10
    assert store.search(("page",), limit=0) == []


@pytest.mark.waits
def test_search_returns_newest_first(new_store: NewStore, tick: float) -> None:
    store = new_store()
    store.put(("order",), "old", {"v": 1})
    time.sleep(1.1 * tick)
    store.put(("order",), "new", {"v": 2})
    assert [item.key for item in store.search(("order",))] == ["new", "old"]
    time.sleep(1.1 * tick)
    store.put(("order",), "old", {"v": 3})
    assert [item.key for item in store.search(("order",))] == ["old", "new"]


def test_semantic_query_without_index(new_store: NewStore, impl: str) -> None:
    """DIFFERENCE from the brief's assumption, and nenjim's choice: without ``index=`` both
    references ignore ``query`` (they return the filter's items, newest first). nenjim
    refuses it: a semantic search that silently is not one is a wrong answer."""
    store = new_store()
    store.put(("docs",), "a", {"text": "hello"})
    if impl in NENJIM:
        with pytest.raises(NotImplementedError, match="semantic search"):
            store.search(("docs",), query="greeting")
    else:
        assert _keys(store.search(("docs",), query="greeting")) == {"a"}


# list_namespaces
def _tree(store: BaseStore) -> None:
    for namespace in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]:
        store.put(namespace, "k", {"v": 1})


def test_list_namespaces(new_store: NewStore) -> None:
    store = new_store()
    _tree(store)
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("admin", "users", "789"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a",)) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(max_depth=2, prefix=("users",)) == [
        ("users", "123"),
        ("users", "456"),
    ]
    assert store.list_namespaces(prefix=("nothing",)) == []


def test_list_namespaces_with_wildcards(new_store: NewStore) -> None:
    store = new_store()
    _tree(store)
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("*", "users")) == [("admin", "users", "789")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b", "*", "*")) == [
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
    ]
    assert store.list_namespaces(prefix=("a", "b", "d", "*", "*")) == []


def test_list_namespaces_pagination(new_store: NewStore) -> None:
    store = new_store()
    for i in range(12):
        store.put(("ns", f"{i:02}"), "k", {"v": i})
    assert store.list_namespaces(limit=5) == [("ns", f"{i:02}") for i in range(5)]
    assert store.list_namespaces(limit=5, offset=10) == [("ns", "10"), ("ns", "11")]
    assert store.list_namespaces(max_depth=1, limit=5) == [("ns",)]
    assert store.list_namespaces(max_depth=1, offset=1) == []


def test_list_namespaces_of_deleted_items(new_store: NewStore) -> None:
    store = new_store()
    store.put(("gone",), "k", {"v": 1})
    store.put(("kept",), "k", {"v": 1})
    store.delete(("gone",), "k")
    assert store.list_namespaces() == [("kept",)]


# namespace validation
def test_namespace_validation(new_store: NewStore) -> None:
    store = new_store()
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("a", ""), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("a", 1), "k", {"v": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        store.get(("a.b",), "k")
    with pytest.raises(InvalidNamespaceError):
        store.search(("a.b",))
    with pytest.raises(InvalidNamespaceError):
        store.delete(("a.b",), "k")
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("a.b",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(suffix=("",))
    # ops given to batch directly are checked too: "a.b" may not address ("a", "b")
    store.put(("a", "b"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", {"v": 2})])
    item = store.get(("a", "b"), "k")
    assert item is not None
    assert item.value == {"v": 1}
    assert store.list_namespaces() == [("a", "b")]


# batch
def test_batch_of_mixed_ops(new_store: NewStore) -> None:
    store = new_store()
    store.put(("batch",), "before", {"v": 0})
    results = store.batch(
        [
            PutOp(("batch",), "new", {"v": 1}),
            GetOp(("batch",), "before"),
            GetOp(("batch",), "new"),
            SearchOp(("batch",), filter=None, limit=10),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("batch",)),)),
            PutOp(("batch",), "before", None),
        ]
    )
    assert results[0] is None
    assert results[5] is None
    # the reads of a batch run before its puts, in both references
    before = results[1]
    assert isinstance(before, Item)
    assert before.value == {"v": 0}
    assert results[2] is None
    assert isinstance(results[3], list)
    assert _keys(results[3]) == {"before"}
    assert results[4] == [("batch",)]
    assert store.get(("batch",), "before") is None
    new = store.get(("batch",), "new")
    assert new is not None
    assert new.value == {"v": 1}


def test_batch_last_put_of_a_key_wins(new_store: NewStore) -> None:
    store = new_store()
    store.batch(
        [
            PutOp(("w",), "k", {"v": 1}),
            PutOp(("w",), "k", {"v": 2}),
            PutOp(("w",), "gone", {"v": 1}),
            PutOp(("w",), "gone", None),
            PutOp(("w",), "back", None),
            PutOp(("w",), "back", {"v": 3}),
        ]
    )
    assert {item.key: item.value["v"] for item in store.search(("w",))} == {"k": 2, "back": 3}


# TTL
def test_ttl_expiry_and_sweep(new_store: NewStore, tick: float) -> None:
    store = new_store(ttl={"default_ttl": None})
    store.put(("ttl",), "short", {"v": 1}, ttl=minutes(tick))
    store.put(("ttl",), "forever", {"v": 2})
    store.put(("ttl",), "long", {"v": 3}, ttl=60)
    assert store.get(("ttl",), "short") is not None
    time.sleep(2.2 * tick)
    assert store.sweep_ttl() == 1  # type: ignore[attr-defined]
    assert store.get(("ttl",), "short") is None
    assert _keys(store.search(("ttl",))) == {"forever", "long"}
    assert store.sweep_ttl() == 0  # type: ignore[attr-defined]


@pytest.mark.waits
def test_default_ttl(new_store: NewStore, tick: float) -> None:
    store = new_store(ttl={"default_ttl": minutes(tick)})
    store.put(("ttl",), "default", {"v": 1})
    store.put(("ttl",), "none", {"v": 2}, ttl=None)
    time.sleep(2.2 * tick)
    assert store.sweep_ttl() == 1  # type: ignore[attr-defined]
    assert _keys(store.search(("ttl",))) == {"none"}


@pytest.mark.waits
def test_put_without_ttl_drops_an_earlier_ttl(new_store: NewStore, tick: float) -> None:
    store = new_store()
    store.put(("ttl",), "k", {"v": 1}, ttl=minutes(tick))
    store.put(("ttl",), "k", {"v": 2}, ttl=None)
    time.sleep(2.2 * tick)
    assert store.sweep_ttl() == 0  # type: ignore[attr-defined]
    assert store.get(("ttl",), "k") is not None


@pytest.mark.waits
def test_ttl_refresh_on_read(new_store: NewStore, impl: str, tick: float) -> None:
    """A read (get, search) moves the expiry to now + the TTL; ``refresh_ttl=False`` does not.

    DIFFERENCE (a quirk of fractional TTLs): PostgresStore keeps ``ttl_minutes`` in an
    ``INT`` column, so refreshing a TTL under a minute (four time steps here) makes the
    item expire at once; SqliteStore and nenjim keep the fraction."""
    store = new_store(ttl={"refresh_on_read": True})
    for key in ("read", "searched", "unread", "read-no-refresh"):
        store.put(("ttl", key), key, {"v": key}, ttl=minutes(4 * tick))
    time.sleep(2.5 * tick)
    assert store.get(("ttl", "read"), "read") is not None
    assert store.get(("ttl", "read-no-refresh"), "read-no-refresh", refresh_ttl=False)
    assert _keys(store.search(("ttl", "searched"))) == {"searched"}
    time.sleep(2.7 * tick)  # past the first expiry, not past the refreshed one
    if impl == "ref-postgres":
        assert store.sweep_ttl() == 4  # type: ignore[attr-defined]
        return
    assert store.sweep_ttl() == 2  # type: ignore[attr-defined]
    assert _keys(store.search(("ttl",), refresh_ttl=False)) == {"read", "searched"}


def test_expired_items_before_the_sweep(new_store: NewStore, impl: str, tick: float) -> None:
    """DIFFERENCE: with ``omit_expired`` PostgresStore hides expired items not swept yet;
    SqliteStore has no such option and returns them until the sweep. nenjim hides them."""
    store = new_store(ttl={"omit_expired": True})
    store.put(("ttl",), "short", {"v": 1}, ttl=minutes(tick))
    store.put(("ttl",), "kept", {"v": 2})
    store.put(("ttl", "gone"), "gone", {"v": 3}, ttl=minutes(tick))
    time.sleep(2.2 * tick)
    found = store.get(("ttl",), "short")
    if impl == "ref-sqlite":
        assert found is not None
        assert _keys(store.search(("ttl",))) == {"short", "kept", "gone"}
    else:
        assert found is None
        assert _keys(store.search(("ttl",))) == {"kept"}
    if impl in NENJIM:  # a listing reads each row for its expiry, not the keys alone
        assert store.list_namespaces(prefix=("ttl",)) == [("ttl",)]
    assert store.sweep_ttl() == 2  # type: ignore[attr-defined]
    assert store.get(("ttl",), "short") is None


@pytest.mark.waits
def test_ttl_sweeper_thread(new_store: NewStore, tick: float) -> None:
    store = new_store(ttl={"sweep_interval_minutes": 1})
    future = store.start_ttl_sweeper(sweep_interval_minutes=minutes(tick))  # type: ignore[attr-defined]
    try:
        store.put(("ttl",), "short", {"v": 1}, ttl=minutes(tick))
        deadline = time.monotonic() + 10
        while store.get(("ttl",), "short", refresh_ttl=False) is not None:
            assert time.monotonic() < deadline, "the sweeper did not purge the expired item"
            time.sleep(0.2 * tick)
    finally:
        assert store.stop_ttl_sweeper(timeout=5)  # type: ignore[attr-defined]
    assert future is not None


# async
async def _async_scenario(store: BaseStore) -> None:
    await store.aput(("async", "1"), "a", {"v": 1})
    await store.aput(("async", "2"), "b", {"v": 2})
    item = await store.aget(("async", "1"), "a")
    assert item is not None
    assert item.value == {"v": 1}
    assert _keys(await store.asearch(("async",), filter={"v": {"$gte": 2}})) == {"b"}
    assert await store.alist_namespaces(prefix=("async",)) == [("async", "1"), ("async", "2")]
    await store.adelete(("async", "1"), "a")
    assert await store.aget(("async", "1"), "a") is None
    results = await store.abatch([GetOp(("async", "2"), "b"), PutOp(("async", "2"), "c", {})])
    assert isinstance(results[0], Item)
    assert results[1] is None


def test_the_async_api(new_store: NewStore, impl: str, tmp_path: Path) -> None:
    """The a-methods (SqliteStore has none: its async twin, AsyncSqliteStore, stands in)."""
    if impl != "ref-sqlite":
        asyncio.run(_async_scenario(new_store()))
        return

    async def reference() -> None:
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "async.db")) as store:
            await store.setup()
            await _async_scenario(store)

    asyncio.run(reference())


def test_async_nenjim_store(nenjim_new_store: Callable[[str], str]) -> None:
    url = nenjim_new_store("sqlite")

    async def scenario() -> None:
        async with AsyncNenjimStore.from_conn_string(url, ttl={"default_ttl": None}) as store:
            await store.setup()
            await _async_scenario(store)
            await store.aput(("async", "ttl"), "short", {"v": 1}, ttl=minutes(0.25))
            await asyncio.sleep(0.55)
            assert await store.sweep_ttl() == 1
            task = await store.start_ttl_sweeper(sweep_interval_minutes=1)
            assert not task.done()
            assert await store.stop_ttl_sweeper(timeout=2)
        with pytest.raises(NotImplementedError, match="semantic search"):
            async with AsyncNenjimStore.from_conn_string(url, index={"dims": 3}):
                pass

    asyncio.run(scenario())
