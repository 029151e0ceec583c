"""The Store's operations on a storage backend: a batch of LangGraph ops, and the TTL sweep.

A batch runs its reads (gets, searches, listings) before its puts, as
LangGraph's SQL stores do, and a batch that writes (a put, or a read that
refreshes a TTL) runs in one transaction, tried again on a write conflict.
A delete (a put of ``None``) and the sweep purge: the item's every revision
is erased from the log, not only tombstoned.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from nenjim.infrastructure.langgraph.store import matching
from nenjim.infrastructure.langgraph.store.catalog import ITEMS, TTLS
from nenjim.infrastructure.langgraph.store.codec import (
    StoredItem,
    decode_expiry,
    decode_item,
    expiry,
    is_literal,
    item_attributes,
    item_of_payload,
    plain_value,
    prefix_scan,
    storage_key,
    ttl_record,
    utc_now,
)
from nenjim.infrastructure.storage import (
    Backend,
    ConflictError,
    FieldOrder,
    FieldTest,
    RecordEntry,
    Records,
    View,
)

_T = TypeVar("_T")
PAGE = 500
_OPERATIONS = (GetOp, PutOp, SearchOp, ListNamespacesOp)
ATTEMPTS = 12
NEWEST = FieldOrder(("updated_at",), descending=True)
"""A search's order, newest first, then by storage key. An item's ``updated_at`` is
always written as ``isoformat()`` of a UTC time, whose text sorts as the time does."""
SEMANTIC_SEARCH_REFUSED = (
    "search(query=...) is semantic search, which needs an index= configuration; "
    "NenjimStore has none (it supports filter, limit and offset only)"
)


def run_batch(backend: Backend, ops: Iterable[Op], *, omit_expired: bool) -> list[Result]:
    """The results of ``ops``, in their order (``None`` for a put)."""
    listed = list(ops)
    puts = False
    for op in listed:
        if not isinstance(op, _OPERATIONS):
            raise TypeError(f"unknown store operation: {op!r}")
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            puts = True
            if op.value is not None and not isinstance(op.value, dict):
                raise TypeError(f"a store value must be a dict, got {type(op.value).__name__}")
        elif isinstance(op, SearchOp):
            if op.query:
                raise NotImplementedError(SEMANTIC_SEARCH_REFUSED)
            matching.check_filter(op.filter)
            _check_page(op.limit, op.offset)
        elif isinstance(op, ListNamespacesOp):
            _check_page(op.limit, op.offset)
    now = utc_now()
    if puts and len(listed) == 1 and _inserted_alone(backend, listed[0], now):
        return [None]

    def run(view: View) -> tuple[list[Result], dict[str, float]]:
        batch = _Batch(view, now, omit_expired)
        results: list[Result] = []
        for op in listed:
            if isinstance(op, GetOp):
                results.append(batch.get(op))
            elif isinstance(op, SearchOp):
                results.append(batch.search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(batch.list_namespaces(op))
            else:
                results.append(None)  # a put: written below, after every read
        if puts:
            last: dict[tuple[tuple[str, ...], str], PutOp] = {}
            for op in listed:
                if isinstance(op, PutOp):
                    last[(op.namespace, op.key)] = op
            for op in last.values():
                batch.put(op)
            batch.refresh(batch.refreshes)
        return results, batch.refreshes

    if puts:
        return retrying(backend, run)[0]
    # reads only: no transaction, unless a TTL is refreshed (then for that alone); in the
    # backend's turn with the decoding (on SQLite, one at a time with other readers)
    with backend.in_turn():
        results, refreshes = run(backend.view)
    if refreshes:
        # should every try meet another writer of a TTL row, that one moved it as late
        with contextlib.suppress(ConflictError):
            retrying(backend, lambda view: _Batch(view, now, omit_expired).refresh(refreshes))
    return results


def _inserted_alone(backend: Backend, op: Op, now: datetime) -> bool:
    """Whether ``op``, a lone put of a new item without a TTL, was written as one insert in
    a transaction of its own; ``False``, with nothing written, for any other put.

    Such a put writes the item's row and nothing else: a key without an item has no TTL
    row (a delete and a sweep purge both), so no expiry is left to delete, and the new
    item's ``created_at`` is ``now``. The insert refuses a key that holds an item
    (``ConflictError``, nothing written): that put reads the item, for the
    ``created_at`` it keeps and the expiry it may drop, in the transaction of a batch.
    On PostgreSQL the insert is one statement, where the batch's transaction is four
    round trips (``BEGIN``, the read, the write, ``COMMIT``). Inside a transaction this
    thread holds, a refused insert would fail it: the batch's savepoint is used instead.
    """
    if not isinstance(op, PutOp) or op.value is None or op.ttl is not None:
        return False
    if backend.current_scope() is not None:
        return False
    namespace = tuple(op.namespace)
    item = StoredItem(namespace, op.key, plain_value(op.value), now, now, None)
    try:
        backend.view.records(ITEMS).insert(
            key=storage_key(namespace, op.key),
            revision=0,
            attributes=item_attributes(namespace),
            record=item.record(),
        )
    except ConflictError:
        return False  # the key holds an item (or one went in since): the batch replaces it
    return True


def retrying(backend: Backend, function: Callable[[View], _T]) -> _T:
    """``function`` in a transaction of its own, run again on a conflict (another writer
    of the same item between its read and its write), after a short random pause."""
    for attempt in range(ATTEMPTS):
        try:
            with backend.transaction() as view:
                return function(view)
        except ConflictError:
            if attempt == ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0, 0.002 * 2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def _check_page(limit: Any, offset: Any) -> None:
    for name, number in (("limit", limit), ("offset", offset)):
        if isinstance(number, bool) or not isinstance(number, int):
            raise TypeError(f"{name} must be an int, got {type(number).__name__}")
        if number < 0:
            raise ValueError(f"{name} must be >= 0, got {number}")


class _Batch:
    """One batch's reads and writes on one view, at one time ``now``."""

    def __init__(self, view: View, now: datetime, omit_expired: bool) -> None:
        self.view = view
        self.items = view.records(ITEMS)
        self.now = now
        self.omit_expired = omit_expired
        self.refreshes: dict[str, float] = {}

    @functools.cached_property
    def ttls(self) -> Records:
        """The TTL rows' handle, taken when first needed (most gets need none)."""
        return self.view.records(TTLS)

    # reads
    def get(self, op: GetOp) -> Item | None:
        skey = storage_key(op.namespace, op.key)
        row = self.items.read(skey)
        if row is None:
            return None
        item = decode_item(row.record)
        if item.namespace != op.namespace or item.key != op.key:
            return None  # another item's digest (never seen: SHA-256)
        if item.ttl is not None and self.omit_expired and self._expired(skey):
            return None
        if op.refresh_ttl and item.ttl is not None:
            self.refreshes[skey] = item.ttl
        return _item(item)

    def search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        tests = matching.field_tests(op.filter)
        key_prefix, exact = prefix_scan(prefix)
        if tests is not None and exact:
            page = self._selected(key_prefix, tests, op.offset, op.limit)
        else:
            page = self._matched(prefix, key_prefix, op)
        if op.refresh_ttl:
            for skey, item in page:
                if item.ttl is not None:
                    self.refreshes[skey] = item.ttl
        return [_search_item(item) for _, item in page]

    def _selected(
        self, key_prefix: str | None, tests: tuple[FieldTest, ...], offset: int, limit: int
    ) -> list[tuple[str, StoredItem]]:
        """The page the database selects from the keys that start with ``key_prefix``: the
        filter's tests, newest first, cut to ``offset`` and ``limit``; only the page's rows
        are read.

        An expired item a search omits is known only after the database's cut: with
        ``omit_expired`` the page is read from the first row, on until it is full.
        """
        if limit == 0:
            return []
        skipped = 0 if self.omit_expired else offset  # rows the database skips for us
        start, wanted = skipped, offset + limit - skipped
        kept: list[tuple[str, StoredItem]] = []
        while True:
            rows = self.items.select(
                index=None,
                equals={},
                key_prefix=key_prefix,
                where=tests,
                order=NEWEST,
                offset=start,
                limit=wanted,
            )
            for row in rows:
                item = item_of_payload(row.record.payload)
                if item.ttl is None or not self.omit_expired or not self._expired(row.key):
                    kept.append((row.key, item))
            if len(kept) >= wanted or len(rows) < wanted:
                return kept[offset - skipped : offset - skipped + limit]
            start += len(rows)

    def _matched(
        self, prefix: tuple[str, ...], key_prefix: str | None, op: SearchOp
    ) -> list[tuple[str, StoredItem]]:
        """The page matched in Python: every item whose key starts with ``key_prefix`` is
        read and tested (its namespace too, where the key prefix only narrows)."""
        found: list[tuple[datetime, str, dict[str, Any]]] = []
        matches = matching.matcher(op.filter)
        for row in scan_all(self.items, key_prefix):
            # The payload is parsed once; an item is built only for the page returned.
            payload = row.record.payload
            if not matching.under(tuple(payload["namespace"]), prefix):
                continue
            if not matches(payload["value"]):
                continue
            if payload.get("ttl") is not None and self.omit_expired and self._expired(row.key):
                continue
            found.append((datetime.fromisoformat(payload["updated_at"]), row.key, payload))
        # newest first (updated_at), then by storage key: rows scan by key bytes and
        # the sort is stable
        if op.offset + op.limit < len(found):
            found = heapq.nlargest(op.offset + op.limit, found, key=_updated)
        else:
            found.sort(key=_updated, reverse=True)
        return [(skey, item_of_payload(payload)) for _, skey, payload in found[op.offset :]]

    def list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = [
            (condition.match_type, tuple(condition.path)) for condition in op.match_conditions or ()
        ]
        for match_type, _ in conditions:
            if match_type not in ("prefix", "suffix"):
                raise ValueError(f"unknown match_type {match_type!r}: use prefix or suffix")
        seen: set[tuple[str, ...]] = set()
        for namespace in self._namespaces(matching.fixed_prefix(conditions)):
            if not all(matching.path_matches(namespace, t, path) for t, path in conditions):
                continue
            seen.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        ordered = sorted(seen, key=matching.namespace_order)
        return ordered[op.offset : op.offset + op.limit]

    # writes
    def put(self, op: PutOp) -> None:
        skey = storage_key(op.namespace, op.key)
        row = self.items.read(skey)
        self.refreshes.pop(skey, None)
        if op.value is None:
            self.items.purge(key=skey)
            self.ttls.purge(key=skey)
            return
        existing = None if row is None else decode_item(row.record)
        item = StoredItem(
            namespace=tuple(op.namespace),
            key=op.key,
            value=plain_value(op.value),
            created_at=self.now if existing is None else existing.created_at,
            updated_at=self.now,
            ttl=None if op.ttl is None else float(op.ttl),
        )
        if row is None:
            self.items.insert(
                key=skey,
                revision=0,
                attributes=item_attributes(item.namespace),
                record=item.record(),
            )
        else:
            self.items.replace(
                key=skey,
                expected_revision=row.revision,
                next_revision=row.revision + 1,
                attributes=row.attributes,
                record=item.record(),
            )
        if item.ttl is not None:
            self._write_ttl(skey, expiry(self.now, item.ttl))
        elif existing is not None and existing.ttl is not None:
            self.ttls.delete(key=skey)

    def refresh(self, refreshes: dict[str, float]) -> None:
        """Move the expiry of each item of ``refreshes`` (read with ``refresh_ttl``; by
        storage key, its TTL) to ``now`` + its TTL."""
        for skey, ttl in refreshes.items():
            row = self.ttls.read(skey)
            if row is not None:  # else deleted or swept meanwhile: nothing to refresh
                self._write_ttl(skey, expiry(self.now, ttl), row)

    # helpers
    def _write_ttl(self, skey: str, expires_at: datetime, row: RecordEntry | None = None) -> None:
        row = row or self.ttls.read(skey)
        if row is None:
            self.ttls.insert(
                key=skey, revision=0, attributes={"listed": True}, record=ttl_record(expires_at)
            )
        else:
            self.ttls.replace(
                key=skey,
                expected_revision=row.revision,
                next_revision=row.revision + 1,
                attributes=row.attributes,
                record=ttl_record(expires_at),
            )

    def _expired(self, skey: str) -> bool:
        row = self.ttls.read(skey)
        return row is not None and decode_expiry(row.record) <= self.now

    def _namespaces(self, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        """The namespace of each item whose key starts with ``prefix``'s key prefix (a
        namespace once per item; an expired item a listing omits, not at all).

        Without expiry to check, an item's key (the literal JSON of its labels and key)
        names its namespace: only the keys are scanned, and a row is read only for a
        long key. With it, every row is read, for its TTL.
        """
        key_prefix, _ = prefix_scan(prefix)
        if self.omit_expired:
            for row in scan_all(self.items, key_prefix):
                item = decode_item(row.record)
                if item.ttl is None or not self._expired(row.key):
                    yield item.namespace
            return
        for skey in scan_all_keys(self.items, key_prefix):
            if is_literal(skey):
                yield tuple(json.loads(skey)[:-1])
                continue
            digested = self.items.read(skey)
            if digested is not None:  # else purged since the scan (no snapshot outside a batch)
                yield decode_item(digested.record).namespace


def scan_all(records: Records, key_prefix: str | None) -> Iterator[RecordEntry]:
    """Every row of ``records`` whose key starts with ``key_prefix`` (``None``: every
    row), a page at a time."""
    after: str | None = None
    while True:
        page = records.scan(index=None, equals={}, key_prefix=key_prefix, after=after, limit=PAGE)
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].key


def scan_all_keys(records: Records, key_prefix: str | None) -> Iterator[str]:
    """The key of every row of ``records`` whose key starts with ``key_prefix`` (``None``:
    every row), a page at a time."""
    after: str | None = None
    while True:
        page = records.scan_keys(
            index=None, equals={}, key_prefix=key_prefix, after=after, limit=PAGE
        )
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1]


def sweep(backend: Backend) -> int:
    """Purge every item whose TTL expired; the number of items purged."""
    now = utc_now()
    expired = [
        row.key
        for row in scan_all(backend.view.records(TTLS), None)
        if decode_expiry(row.record) < now
    ]
    purged = 0
    for skey in expired:

        def purge(view: View, skey: str = skey) -> int:
            ttls, items = view.records(TTLS), view.records(ITEMS)
            row = ttls.read(skey)
            if row is None or decode_expiry(row.record) >= now:
                return 0  # refreshed or deleted meanwhile
            found = items.read(skey) is not None
            items.purge(key=skey)
            ttls.purge(key=skey)
            return int(found)

        purged += retrying(backend, purge)
    return purged


def _updated(found: tuple[datetime, str, dict[str, Any]]) -> datetime:
    return found[0]


def _item(item: StoredItem) -> Item:
    return Item(
        value=item.value,
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def _search_item(item: StoredItem) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=None,
    )
