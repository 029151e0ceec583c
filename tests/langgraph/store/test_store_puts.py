"""How NenjimStore writes a put, and the storage key it writes it under.

A lone put of a new item without a TTL is one insert, a transaction of its
own; any other put reads the item first, in the batch's transaction. These
scenarios check that both paths give the same items, and that a put inside a
transaction the thread holds on the store's backend joins it.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from langgraph.store.base import PutOp

from nenjim.infrastructure.langgraph.store.codec import storage_key
from nenjim.langgraph import NenjimStore


@pytest.mark.parametrize(
    "labels",
    [
        ("users", "ann", "memories", "tea"),
        ('quo"te', "back\\slash", "tab\tnew\nline", "\x00\x1f\x7f"),
        ("é", "日本", "emoji \U0001f375", "\u2028\u2029"),
    ],
)
def test_the_storage_key_is_the_json_text_of_the_labels_and_key(labels: tuple[str, ...]) -> None:
    *namespace, key = labels
    assert storage_key(tuple(namespace), key) == json.dumps(
        list(labels), ensure_ascii=False, separators=(",", ":")
    )


def test_a_key_that_is_no_str_is_written_as_json_writes_it() -> None:
    # LangGraph's ops type the key as str; batch() takes ops built by hand.
    assert storage_key(("users",), cast(Any, 7)) == '["users",7]'


def test_a_lone_surrogate_key_is_digested() -> None:
    # Not UTF-8 as it is, so not a key the SPI takes: a long key, its digest after the
    # labels before it.
    assert storage_key(("users",), "a\ud800b").startswith('["users",sha256:')


def test_a_put_keeps_created_at_and_drops_an_earlier_ttl(store_url: str) -> None:
    namespace = ("users", "ann")
    with NenjimStore.from_conn_string(store_url) as store:
        store.put(namespace, "new", {"v": 1})
        first = store.get(namespace, "new")
        assert first is not None
        store.put(namespace, "new", {"v": 2})
        second = store.get(namespace, "new")
        assert second is not None
        assert second.value == {"v": 2}
        assert second.created_at == first.created_at
        assert second.updated_at > first.updated_at
        store.put(namespace, "timed", {"v": 1}, ttl=60)
        store.put(namespace, "timed", {"v": 2})  # no TTL: the expiry goes
        assert store.sweep_ttl() == 0
        store.delete(namespace, "timed")
        store.put(namespace, "timed", {"v": 3})  # a new item again, after the purge
        again = store.get(namespace, "timed")
        assert again is not None
        assert again.value == {"v": 3}


def test_a_put_inside_a_transaction_of_the_thread_joins_it(store_url: str) -> None:
    namespace = ("users", "ann")
    with NenjimStore.from_conn_string(store_url) as store:
        store.put(namespace, "kept", {"v": 0})
        with store.backend.transaction():
            # Over an existing item: a refused insert would fail the transaction.
            store.put(namespace, "kept", {"v": 1})
            store.put(namespace, "new", {"v": 1})
        kept, new = store.get(namespace, "kept"), store.get(namespace, "new")
        assert kept is not None
        assert kept.value == {"v": 1}
        assert new is not None
        assert new.value == {"v": 1}

        def put_then_fail() -> None:
            with store.backend.transaction():
                store.put(namespace, "undone", {"v": 1})
                raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError, match="rolled back"):
            put_then_fail()
        assert store.get(namespace, "undone") is None


def test_a_batch_of_puts_of_new_items_writes_them_all(store_url: str) -> None:
    with NenjimStore.from_conn_string(store_url) as store:
        store.batch(
            [
                PutOp(("users", "ann"), "a", {"v": 1}),
                PutOp(("users", "ann"), "b", {"v": 2}),
            ]
        )
        found = store.search(("users", "ann"))
        assert {item.key: item.value for item in found} == {"a": {"v": 1}, "b": {"v": 2}}
