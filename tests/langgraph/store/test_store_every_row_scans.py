"""The Store and the saver's thread list scan every row of their resources by key, with no
index that every row is in: a store made when they declared an always-true ``listed`` index
loses that index at its next open, and reads on as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nenjim.infrastructure.langgraph.catalog import CATALOG, THREAD_IDS
from nenjim.infrastructure.langgraph.store.catalog import ITEMS, STORE_CATALOG, TTLS
from nenjim.infrastructure.langgraph.store.codec import StoredItem, utc_now
from nenjim.infrastructure.storage import Resource, open_backend
from nenjim.langgraph import NenjimSaver, NenjimStore


def _as_before(resource: Resource) -> Resource:
    """``resource`` as earlier builds declared it: with an index of ``listed``."""
    return Resource(
        resource.id,
        "records",
        attributes=dict(resource.attributes),
        indexes={"listed": ("listed",), **resource.indexes},
    )


def _listed_indexes(url: str) -> set[str]:
    backend = open_backend(url, [*STORE_CATALOG, *CATALOG])
    try:
        with backend.reading() as view:
            session: Any = view._scope.context  # type: ignore[union-attr]
            names = {str(name) for (name,) in session.all("SELECT index_name FROM {generated}")}
    finally:
        backend.close()
    return {name for name in names if "listed" in name}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_store_made_with_listed_indexes_drops_them_and_reads_every_row(
    kind: str, nenjim_new_store: Callable[[str], str]
) -> None:
    url = nenjim_new_store(kind)
    earlier = [_as_before(ITEMS), _as_before(TTLS)]
    before = open_backend(url, earlier)
    try:
        items = before.view.records(earlier[0])
        for user in ("ann", "bob"):
            items.insert(
                key=f'["users","{user}","k"]',
                revision=0,
                attributes={"listed": True, "p1": "users", "p2": f"users.{user}", "p3": None},
                record=_item_record(("users", user), "k"),
            )
        with before.reading() as view:
            session: Any = view._scope.context  # type: ignore[union-attr]
            generated = {str(n) for (n,) in session.all("SELECT index_name FROM {generated}")}
        assert any("store_items_listed" in name for name in generated)
    finally:
        before.close()

    with NenjimStore.from_conn_string(url) as store:
        assert sorted(item.namespace[1] for item in store.search(())) == ["ann", "bob"]
        assert store.list_namespaces() == [("users", "ann"), ("users", "bob")]
        store.put(("users", "cy"), "k", {"v": 3}, ttl=5)
        assert len(store.search(())) == 3
        assert store.sweep_ttl() == 0
    with NenjimSaver.from_conn_string(url) as saver:
        assert list(saver.list(None)) == []
    assert _listed_indexes(url) == set()
    assert THREAD_IDS.indexes == {}


def _item_record(namespace: tuple[str, ...], key: str) -> Any:
    now = utc_now()
    return StoredItem(namespace, key, {"v": 1}, now, now, None).record()
