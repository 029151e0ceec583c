"""A Store delete and a TTL sweep purge: the value is gone from the storage log too.

Each item carries a unique marker in its value. After a delete (a put of
``None``) or a sweep of its expired TTL, no state of ``storage_events`` holds
the marker (as stored, base64-decoded or inflated), nor any other table, for
every revision the item had (an overwritten value included); a kept item's
marker is still found.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from nenjim.admin.audits import audit_storage
from nenjim.langgraph import NenjimStore
from tests.support.erasure import log_holds, log_states, tables_holding

QUARTER_SECOND = 0.25 / 60  # a TTL, in minutes (nenjim keeps microseconds)


def _marker(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex}"


def test_a_delete_purges_every_revision_from_the_log(durable_store_url: str) -> None:
    first, second, kept = _marker("first"), _marker("second"), _marker("kept")
    with NenjimStore.from_conn_string(durable_store_url) as store:
        store.put(("users", "1"), "memory", {"text": first})
        store.put(("users", "1"), "memory", {"text": second}, ttl=60)
        store.put(("users", "1"), "other", {"text": kept})
        assert log_holds(durable_store_url, first)
        assert log_holds(durable_store_url, second)
        store.delete(("users", "1"), "memory")
        assert store.get(("users", "1"), "memory") is None
        other = store.get(("users", "1"), "other")
        assert other is not None
        assert other.value == {"text": kept}
    for marker in (first, second):
        assert not log_holds(durable_store_url, marker)
        assert tables_holding(durable_store_url, marker) == []
    assert log_holds(durable_store_url, kept)
    if durable_store_url.startswith("sqlite:"):  # the log read raw, as the brief asks
        states = log_states(durable_store_url)
        assert not any(first.encode() in state or second.encode() in state for state in states)
        assert any(kept.encode() in state for state in states)


def test_a_ttl_sweep_purges_from_the_log(durable_store_url: str) -> None:
    expiring, kept = _marker("expiring"), _marker("kept")
    with NenjimStore.from_conn_string(durable_store_url, ttl={"refresh_on_read": True}) as store:
        store.put(("ttl",), "expiring", {"text": expiring}, ttl=QUARTER_SECOND)
        store.get(("ttl",), "expiring")  # a refresh writes the TTL row again, not the value
        store.put(("ttl",), "kept", {"text": kept}, ttl=60)
        time.sleep(0.55)
        assert store.sweep_ttl() == 1
        assert store.get(("ttl",), "expiring") is None
    assert not log_holds(durable_store_url, expiring)
    assert tables_holding(durable_store_url, expiring) == []
    assert log_holds(durable_store_url, kept)


def test_the_storage_audit_knows_the_store(durable_store_url: str) -> None:
    """``nenjim storage audit`` checks a Store's store against the Store's catalog: no
    finding after writes, refreshes, deletes and sweeps."""
    with NenjimStore.from_conn_string(durable_store_url) as store:
        store.put(("a",), "kept", {"v": 1}, ttl=60)
        store.put(("a",), "gone", {"v": 2})
        store.get(("a",), "kept", refresh_ttl=True)
        store.delete(("a",), "gone")
    report = audit_storage(durable_store_url)
    assert report.ok, report.lines()


def test_the_storage_audit_of_a_store_that_holds_no_item_yet_is_clean(
    durable_store_url: str,
) -> None:
    """The Store declares no index, so an empty Store's store is known by nothing it holds:
    it is not taken for another catalog's store whose indexes are missing."""
    with NenjimStore.from_conn_string(durable_store_url):
        pass
    report = audit_storage(durable_store_url)
    assert report.ok, report.lines()
    with NenjimStore.from_conn_string(durable_store_url) as store:
        store.put(("a",), "k", {"v": 1})
        store.delete(("a",), "k")
    report = audit_storage(durable_store_url)
    assert report.ok, report.lines()


def test_concurrent_writers_of_one_item(durable_store_url: str) -> None:
    """Threads putting, refreshing and reading one item: every call succeeds (a write
    conflict is tried again), and the item ends as one of the values put."""
    with NenjimStore.from_conn_string(durable_store_url) as store:
        store.put(("c",), "k", {"v": -1}, ttl=60)

        def work(worker: int) -> None:
            for step in range(10):
                store.put(("c",), "k", {"v": worker * 100 + step}, ttl=60)
                store.get(("c",), "k", refresh_ttl=True)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(work, range(4)))
        item = store.get(("c",), "k")
        assert item is not None
        assert item.value["v"] % 100 == 9
