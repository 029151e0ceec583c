"""A search whose filter the database can evaluate reads only the page it returns, and
returns what matching every item in Python returns: the same items, newest first, the
same page, expired items left out however many of them the page has to pass."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore

from nenjim.infrastructure.langgraph.store import matching
from nenjim.infrastructure.storage.sql import records as sql_records
from nenjim.langgraph import NenjimStore

NewStore = Callable[..., BaseStore]
SQL_KINDS = ("sqlite", "postgresql")


@pytest.fixture(params=SQL_KINDS)
def sql_store(
    request: pytest.FixtureRequest, nenjim_new_store: Callable[[str], str]
) -> Iterator[NenjimStore]:
    """A fresh NenjimStore on a SQL store kind."""
    with NenjimStore.from_conn_string(nenjim_new_store(request.param)) as store:
        yield store


@pytest.fixture
def decoded_rows(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The item key of every row the SQL driver decodes from now on."""
    keys: list[str] = []
    entry = sql_records._entry

    def counted(session: Any, resource: Any, row: Any) -> Any:
        keys.append(json.loads(row[0])[-1])  # a storage key: the labels and the key
        return entry(session, resource, row)

    monkeypatch.setattr(sql_records, "_entry", counted)
    return keys


def test_a_filtered_search_reads_only_its_page(
    sql_store: NenjimStore, decoded_rows: list[str]
) -> None:
    for number in range(60):
        sql_store.put(("users", "u1"), f"k{number:02}", {"kind": "fact", "score": number})
    decoded_rows.clear()
    found = sql_store.search(
        ("users", "u1"), filter={"kind": "fact", "score": {"$gte": 30}}, limit=3, offset=2
    )
    assert [item.key for item in found] == ["k57", "k56", "k55"]
    assert sorted(decoded_rows) == ["k55", "k56", "k57"]


def test_a_filter_the_database_cannot_evaluate_is_matched_in_python(
    sql_store: NenjimStore, decoded_rows: list[str]
) -> None:
    sql_store.put(("n",), "list", {"tags": ["a", "b"], "n": 2**53 - 1})
    sql_store.put(("n",), "other", {"tags": ["a"], "n": 1})
    decoded_rows.clear()
    assert [item.key for item in sql_store.search(("n",), filter={"tags": ["a", "b"]})] == ["list"]
    assert sorted(decoded_rows) == ["list", "other"]  # every row, tested in Python
    assert [item.key for item in sql_store.search(("n",), filter={"n": {"$gt": 2**60}})] == []
    assert [item.key for item in sql_store.search(("n",), filter={"n": {"$lt": 2**60}})] == [
        "other",
        "list",
    ]


def test_a_page_passes_every_expired_item(nenjim_new_store: Callable[[str], str]) -> None:
    """Expired items (not yet swept) come out after the database's cut: the page is read
    on until it is full."""
    for kind in ("memory", *SQL_KINDS):
        url = nenjim_new_store(kind)
        with NenjimStore.from_conn_string(url, ttl={"omit_expired": True}) as store:
            for number in range(5):
                store.put(("t",), f"kept{number}", {"kind": "x", "n": number})
                for extra in range(3):
                    store.put(("t",), f"gone{number}.{extra}", {"kind": "x"}, ttl=0.2 / 60)
            time.sleep(0.5)
            found = store.search(("t",), filter={"kind": "x"}, limit=2, offset=1)
            assert [item.key for item in found] == ["kept3", "kept2"], kind
            every = store.search(("t",), filter={"kind": "x"}, limit=10)
            assert [item.key for item in every] == [f"kept{n}" for n in range(4, -1, -1)], kind


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.5, 1.0, 2**53 - 1, -(2**53) + 1, 1e30]),
    st.sampled_from(["", "a", "b", "B", "é", "1"]),
    st.lists(st.integers(0, 2), max_size=2),
)
ITEMS = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), VALUES, max_size=3), max_size=8)
CONDITIONS = st.one_of(
    VALUES,
    st.dictionaries(
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), VALUES, max_size=2
    ),
)
FILTERS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), CONDITIONS, max_size=3)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=ITEMS, wanted=FILTERS, offset=st.integers(0, 3), limit=st.integers(0, 4))
def test_a_search_returns_what_matching_every_item_returns(
    sql_store: NenjimStore,
    values: list[dict[str, Any]],
    wanted: dict[str, Any],
    offset: int,
    limit: int,
) -> None:
    namespace = ("h", f"x{time.monotonic_ns()}")  # each example's items apart
    for number, value in enumerate(values):
        sql_store.put(namespace, f"k{number}", value)
    matches = matching.matcher(wanted)
    newest_first = [f"k{n}" for n in range(len(values) - 1, -1, -1) if matches(values[n])]
    found = sql_store.search(namespace, filter=wanted, offset=offset, limit=limit)
    assert [item.key for item in found] == newest_first[offset : offset + limit]
