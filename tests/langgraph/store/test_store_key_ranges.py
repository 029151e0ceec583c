"""The items under a namespace prefix are one range of the Store's keys.

A storage key starts with the JSON text of its namespace's first labels, a long
key included (its first labels that fit, then the digest of the whole text), so
a search or a listing under a prefix scans that range of the primary key and the
Store declares no index. A store made by an earlier build, with the ``p1``..``p3``
indexes and long keys of the form ``sha256:<hex>``, loses the indexes and has its
long keys moved at its next open, and reads on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from nenjim.infrastructure.langgraph.store.catalog import ITEMS, STORE_CATALOG, TTLS
from nenjim.infrastructure.langgraph.store.codec import (
    StoredItem,
    item_attributes,
    prefix_scan,
    storage_key,
    ttl_record,
    utc_now,
)
from nenjim.infrastructure.storage import Resource, open_backend
from nenjim.infrastructure.storage.scalars import MAX_KEY_BYTES
from nenjim.langgraph import NenjimStore

LONG = "k" * 600
"""An item key too long for a storage key of its own."""

WIDE = "w" * 500
"""A namespace label too long for a long key to keep."""


def test_a_long_key_keeps_its_first_labels_and_digests_the_whole() -> None:
    key = storage_key(("users", "ann"), LONG)
    whole = json.dumps(["users", "ann", LONG], separators=(",", ":"))
    assert key == '["users","ann",sha256:' + hashlib.sha256(whole.encode()).hexdigest()
    assert storage_key(("users", "ann"), LONG + "!") != key
    # a label that does not fit ends the kept labels, whatever follows it
    assert storage_key(("users", WIDE, "m"), "k").startswith('["users",sha256:')
    for namespace in (("users", "ann"), ("users", WIDE, "m"), (WIDE * 2,)):
        assert len(storage_key(namespace, LONG).encode()) <= MAX_KEY_BYTES
    # not UTF-8: the labels before the lone surrogate are kept
    assert storage_key(("users", "a\ud800"), "k").startswith('["users",sha256:')


def test_a_prefix_scan_is_exact_while_its_labels_fit() -> None:
    assert prefix_scan(()) == (None, True)
    assert prefix_scan(("users", "ann")) == ('["users","ann",', True)
    assert prefix_scan(("users", WIDE)) == ('["users",', False)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def nenjim_url(request: pytest.FixtureRequest, nenjim_new_store: Callable[[str], str]) -> str:
    return nenjim_new_store(request.param)


def test_searches_and_listings_find_items_with_long_keys(nenjim_url: str) -> None:
    with NenjimStore.from_conn_string(nenjim_url) as store:
        store.put(("users", "ann"), "short", {"kind": "fact", "n": 1})
        store.put(("users", "ann"), LONG, {"kind": "fact", "n": 2})
        store.put(("users", "ann", "deep"), LONG, {"kind": "note", "n": 3})
        store.put(("users", WIDE, "m"), "short", {"kind": "fact", "n": 4})
        store.put(("users", WIDE, "m"), LONG, {"kind": "fact", "n": 5})
        store.put(("users", "annex"), "short", {"kind": "fact", "n": 6})
        store.put(("users",), "ann", {"kind": "fact", "n": 7})

        def found(prefix: tuple[str, ...], **filters: Any) -> list[int]:
            items = store.search(prefix, filter=filters or None, limit=100)
            return sorted(item.value["n"] for item in items)

        assert found(("users", "ann")) == [1, 2, 3]
        assert found(("users", "ann"), kind="fact") == [1, 2]
        assert found(("users", WIDE)) == [4, 5]
        assert found(("users", WIDE, "m"), kind="fact") == [4, 5]
        assert found(("users",)) == [1, 2, 3, 4, 5, 6, 7]
        assert store.list_namespaces(prefix=("users", "ann")) == [
            ("users", "ann"),
            ("users", "ann", "deep"),
        ]
        assert store.list_namespaces(prefix=("users", WIDE)) == [("users", WIDE, "m")]
        got = store.get(("users", WIDE, "m"), LONG)
        assert got is not None
        assert got.value["n"] == 5


def _as_before(resource: Resource, indexes: dict[str, tuple[str, ...]]) -> Resource:
    return Resource(resource.id, "records", attributes=dict(resource.attributes), indexes=indexes)


EARLIER = [
    _as_before(ITEMS, {"p1": ("p1",), "p2": ("p2",), "p3": ("p3",)}),
    _as_before(TTLS, {}),
]
"""The Store's resources as builds before key ranges declared them."""


def _digested(namespace: tuple[str, ...], key: str) -> str:
    """The storage key of a long item in builds before key ranges."""
    text = json.dumps([*namespace, key], ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _write(backend: Any, key: str, item: StoredItem, expires: bool = False) -> None:
    backend.view.records(EARLIER[0]).insert(
        key=key, revision=0, attributes=item_attributes(item.namespace), record=item.record()
    )
    if expires:
        backend.view.records(EARLIER[1]).insert(
            key=key,
            revision=0,
            attributes={"listed": True},
            record=ttl_record(utc_now() + timedelta(hours=1)),
        )


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_store_of_an_earlier_build_moves_its_long_keys_and_drops_its_indexes(
    kind: str, nenjim_new_store: Callable[[str], str]
) -> None:
    url = nenjim_new_store(kind)
    now = utc_now()
    moved = StoredItem(("users", "ann"), LONG, {"n": 1}, now, now, 60.0)
    older = StoredItem(("users", "bob"), LONG, {"n": 2}, now, now, None)
    newer = StoredItem(("users", "bob"), LONG, {"n": 3}, now, now + timedelta(seconds=1), None)
    before = open_backend(url, EARLIER)
    try:
        _write(before, _digested(moved.namespace, LONG), moved, expires=True)
        _write(
            before,
            '["users","ann","short"]',
            StoredItem(("users", "ann"), "short", {"n": 0}, now, now, None),
        )
        # the same item under both forms (an earlier build wrote it again after a move):
        # the one updated last is kept, under the new key
        _write(before, _digested(older.namespace, LONG), newer)
        _write(before, storage_key(older.namespace, LONG), older)
    finally:
        before.close()

    with NenjimStore.from_conn_string(url) as store:
        assert sorted(item.value["n"] for item in store.search(("users",))) == [0, 1, 3]
        assert store.list_namespaces() == [("users", "ann"), ("users", "bob")]
        got = store.get(("users", "ann"), LONG)
        assert got is not None
        assert got.value == {"n": 1}
        assert store.sweep_ttl() == 0
    backend = open_backend(url, STORE_CATALOG)
    try:
        items, ttls = backend.view.records(ITEMS), backend.view.records(TTLS)
        assert items.scan_keys(index=None, equals={}, key_prefix="sha256:") == ()
        assert ttls.scan_keys(index=None, equals={}) == (storage_key(("users", "ann"), LONG),)
        for old in (_digested(moved.namespace, LONG), _digested(older.namespace, LONG)):
            assert items.history(old) == ()  # purged: no revision left under the old key
        with backend.reading() as view:
            session: Any = view._scope.context  # type: ignore[union-attr]
            generated = {str(n) for (n,) in session.all("SELECT index_name FROM {generated}")}
    finally:
        backend.close()
    assert not [name for name in generated if "store_items" in name]
    assert ITEMS.indexes == {}
