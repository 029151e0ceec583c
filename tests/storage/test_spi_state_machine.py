"""A stateful fuzzing harness: random SPI call sequences, the in-memory backend as the model.

Each step runs the same call on the model (:class:`InMemoryBackend`) and on the system
under test (SQLite or PostgreSQL) and requires the same outcome: an equal return value, or
an exception of the same type. Calls are valid and invalid (bad keys, revisions, limits,
attributes, records, resources, batches, guards; text with NUL or lone surrogates, keys
and indexed values at and past their byte limits, integers past 64 bits, payloads nested
at and past their depth limit, record types and format versions of every shape,
`conditions` and `guards` as sets and generators), through the innermost bound view or
the root view (root handle routing), inside nested scopes that commit or roll back (in
order, out of order, or on another thread), with operations on a second thread (a bound
view used there; independent writes raced on two threads), and the system under test
reopened on the same database, the closed one still used now and then. At the end every
record, its history, every stream and blob must be equal, and the audit of the SQL store
must be clean.

The default run is bounded and derandomized (the same examples on every run, so CI is
reproducible). ``NENJIM_FUZZ=long`` runs many more, longer, random sequences; a failure is
saved in Hypothesis's example database (``.hypothesis/``) and replayed first next time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.storage import (
    UNCHECKED,
    AppendEntry,
    Backend,
    DurableRecord,
    GuardRef,
    NoRows,
    RevisionIs,
    StreamHeadIs,
    TransactionError,
    View,
)
from nenjim.infrastructure.storage.audit import audit_backend
from nenjim.infrastructure.storage.entries import BlobEntry, RecordEntry, StreamEntry
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.scalars import MAX_INTEGER, MAX_KEY_BYTES, MIN_INTEGER
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    ROOTS,
    WORKFLOW_STATES,
    roots_resource,
)

LONG = os.environ.get("NENJIM_FUZZ") == "long"

FUZZ_SETTINGS = settings(
    max_examples=1000 if LONG else 15,
    stateful_step_count=80 if LONG else 40,
    deadline=None,
    derandomize=not LONG,
    database=settings.default.database if LONG else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    print_blob=True,
)

LONGEST_KEY = "K" * MAX_KEY_BYTES
LONGEST_WIDE_KEY = "é" * (MAX_KEY_BYTES // 2)  # two bytes of UTF-8 each
ROOT_KEYS = ("owner-1", "owner-2", "ø")
KEYS = {
    ROOTS.id: ROOT_KEYS,
    EXECUTIONS.id: ("e1", "e2", "É", "e_%"),
    WORKFLOW_STATES.id: ("a", "b", "é", "Z", "😀", "it's", LONGEST_KEY),
    INVENTORY_ITEMS.id: ("i1", "Z", "é", "😀", "?", "{records}", "a\nb", LONGEST_WIDE_KEY),
}
RECORDS = (ROOTS, EXECUTIONS, WORKFLOW_STATES, INVENTORY_ITEMS)
ENTRY_IDS = ("r1", "r2", "r3", LONGEST_KEY)
BLOB_KEYS = ("k1", "ключ", "sha256:x", LONGEST_WIDE_KEY)
BLOB_DATA = (b"", b"\x00\xff", b"text", b"other")
MAX_SCOPES = 3

RARE_ONE_IN = 8
"""Inputs outside the limits come about once in this many draws of a value."""


def _mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``common``, and ``rare`` about once in :data:`RARE_ONE_IN` draws."""
    return st.integers(0, RARE_ONE_IN - 1).flatmap(lambda n: rare if n == 0 else common)


# Text that no backend may store: NUL, lone surrogates (high and low).
UNSTORABLE_TEXT = ("\x00", "a\x00b", "\ud800", "x\udfff")
TEXT = _mostly(
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=6),
    st.sampled_from(UNSTORABLE_TEXT)
    | st.text(st.characters(exclude_categories=()), min_size=1, max_size=6),
)
JSON_INT = _mostly(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.sampled_from((2**53, -(2**53), MAX_INTEGER + 1, 2**64 + 1)),  # past Canonical JSON's
)
ATTRIBUTE_INT = st.one_of(
    st.integers(MIN_INTEGER, MAX_INTEGER), st.sampled_from((MIN_INTEGER, MAX_INTEGER))
)
PAYLOAD_DEPTH_LIMIT = 100


def _nested(depth: int) -> dict[str, Any]:
    """A payload whose objects nest ``depth`` deep (the outermost counts 1)."""
    payload: dict[str, Any] = {}
    for _ in range(depth - 1):
        payload = {"n": payload}
    return payload


PAYLOADS = _mostly(
    st.dictionaries(
        TEXT,
        st.one_of(st.none(), st.booleans(), JSON_INT, TEXT, st.lists(JSON_INT, max_size=2)),
        max_size=3,
    ),
    st.sampled_from(
        (PAYLOAD_DEPTH_LIMIT - 1, PAYLOAD_DEPTH_LIMIT, PAYLOAD_DEPTH_LIMIT + 1, 5000)
    ).map(_nested),
)
RECORD_TYPES = st.one_of(
    st.just("fuzz.record"), TEXT, st.just("t" * 5000), st.sampled_from(("", 7, None))
)
FORMAT_VERSIONS = st.sampled_from(("0.1", "1.0", "10.20", "01.1", "1", "", "1.0\x00", 1))


class _RollbackError(Exception):
    """Raised into a scope to roll it back."""


def _record(payload: dict[str, Any]) -> DurableRecord:
    return DurableRecord("fuzz.record", "0.1", payload)


@dataclass(frozen=True)
class RecordSpec:
    """A record's arguments, built into a ``DurableRecord`` inside each compared call (so
    that an envelope the constructor refuses fails that call on both backends)."""

    record_type: Any
    format_version: Any
    payload: Any


@dataclass(frozen=True)
class EntrySpec:
    """An ``AppendEntry``'s arguments, built inside each compared call."""

    id: Any
    record: RecordSpec


@dataclass(frozen=True)
class OneShot:
    """A generator over ``items``, made anew for each compared call (a generator is used
    up by its first reader, so one shared by both backends would hide a divergence)."""

    items: tuple[Any, ...]


def _one_shot(items: list[Any]) -> OneShot:
    return OneShot(tuple(items))


def _built(value: Any) -> Any:
    """``value`` with every spec in it built (lists, tuples and one-shot generators)."""
    if isinstance(value, RecordSpec):
        return DurableRecord(value.record_type, value.format_version, value.payload)
    if isinstance(value, EntrySpec):
        return AppendEntry(value.id, _built(value.record))
    if isinstance(value, OneShot):
        return (_built(item) for item in value.items)
    if isinstance(value, list | tuple):
        return type(value)(_built(item) for item in value)
    return value


BROKEN_ONE_IN = 6
"""About one call in this many gets one invalid argument; the others are all valid."""


def _key(keys: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(keys)


BAD_KEY = st.sampled_from(
    ("", 7, None, *UNSTORABLE_TEXT, LONGEST_KEY + "K", LONGEST_WIDE_KEY + "é", b"k")
)
BAD_REVISION = st.sampled_from((-1, True, "1", MAX_INTEGER + 1, MIN_INTEGER - 1, 2**64, 1.0))
BAD_LIMIT = st.sampled_from((0, -1, True, MAX_INTEGER + 1, 1.5))
BAD_RECORD = st.sampled_from(({"not": "an envelope"}, None, "record"))
ITEM = {"code": None, "label": "l", "quantity": 0, "reserved": None, "available": True}
BAD_ATTRIBUTES = st.sampled_from(
    (
        {"unknown": 1},
        {"owner": 5, "active": True},
        {"owner": "owner-1", "active": 1},
        {"owner": "owner-1"},
        {"owner": "owner-1\x00", "active": True},
        {"owner": "\ud800", "active": False},
        [],
        {**ITEM, "quantity": MAX_INTEGER + 1},
        {**ITEM, "reserved": MIN_INTEGER - 1},
        {**ITEM, "code": "X\x00"},
        {**ITEM, "label": "\udc00"},
        {**ITEM, "code": "C" * (MAX_KEY_BYTES + 1)},  # past the indexed-value limit
        {**ITEM, "quantity": 1.0},
    )
)
BAD_REFERENCE = st.sampled_from(("nope", roots_resource(), JOURNAL.id, CONTENT_BLOBS))
LIMIT = st.one_of(st.none(), st.integers(1, 4), st.just(MAX_INTEGER))
RECORD = _mostly(
    PAYLOADS.map(lambda payload: RecordSpec("fuzz.record", "0.1", payload)),
    st.builds(RecordSpec, RECORD_TYPES, FORMAT_VERSIONS, PAYLOADS),
)


def _arguments(
    data: st.DataObject,
    valid: dict[str, st.SearchStrategy[Any]],
    invalid: dict[str, st.SearchStrategy[Any]],
) -> dict[str, Any]:
    """Valid values for every argument; sometimes one of them replaced by an invalid one."""
    values = {name: data.draw(strategy, label=name) for name, strategy in valid.items()}
    broken = st.sampled_from((True,) + (False,) * (BROKEN_ONE_IN - 1))
    if invalid and data.draw(broken, label="broken"):
        name = data.draw(st.sampled_from(sorted(invalid)), label="broken argument")
        values[name] = data.draw(invalid[name], label=f"invalid {name}")
    return values


def _attributes(resource_id: str) -> st.SearchStrategy[dict[str, Any]]:
    if resource_id == EXECUTIONS.id:
        return st.fixed_dictionaries({"owner": st.sampled_from(ROOT_KEYS), "active": st.booleans()})
    if resource_id == INVENTORY_ITEMS.id:
        return st.fixed_dictionaries(
            {
                "code": st.one_of(st.none(), st.sampled_from(("X1", "X2", "C" * MAX_KEY_BYTES))),
                "label": st.sampled_from(("l", "é", "L" * 5000)),  # not indexed: any length
                "quantity": st.one_of(st.integers(-2, 2), ATTRIBUTE_INT),
                "reserved": st.one_of(st.none(), st.integers(0, 2)),
                "available": st.booleans(),
                "flagged": st.one_of(st.none(), st.booleans()),
            }
        )
    return st.just({})


def _reference(resource: Any) -> st.SearchStrategy[Any]:
    """The registered object or its id."""
    return st.sampled_from((resource, resource.id))


def _normal(value: Any) -> Any:
    """A comparable form of a return value (types of attribute values kept: True is not 1)."""
    if isinstance(value, RecordEntry):  # RecordedEntry too; its time is the backend's own
        attributes = tuple(
            sorted((name, type(v).__name__, v) for name, v in value.attributes.items())
        )
        return ("record", value.key, value.revision, attributes, _envelope(value.record))
    if isinstance(value, StreamEntry):
        return ("entry", value.position, value.id, _envelope(value.record))
    if isinstance(value, BlobEntry):
        return ("blob", value.key, value.data, tuple(sorted(value.attributes.items())))
    if isinstance(value, tuple | list):
        return tuple(_normal(item) for item in value)
    if isinstance(value, View):
        return "view"
    return (type(value).__name__, value)


def _envelope(record: DurableRecord) -> tuple[str, str, str]:
    return (record.record_type, record.format_version, record.payload_json)


Outcome = tuple[str, Any]


def _outcome(call: Callable[[], Any]) -> Outcome:
    try:
        return ("ok", _normal(call()))
    except Exception as error:  # the type is what the harness compares
        return ("error", type(error))


class _Scope:
    """One open transaction on each backend, entered by the same ``begin`` step."""

    def __init__(
        self,
        model: AbstractContextManager[View],
        model_view: View,
        sut: AbstractContextManager[View],
        sut_view: View,
    ) -> None:
        self.model, self.model_view = model, model_view
        self.sut, self.sut_view = sut, sut_view


class SpiMachine(RuleBasedStateMachine):
    """The model and the system under test, driven in lockstep."""

    store: SqlStore  # set by the test before the machine runs

    def __init__(self) -> None:
        super().__init__()
        self.model: Backend = InMemoryBackend(FIXTURE_RESOURCES)
        self.sut = type(self).store.backend
        _clear(self.sut)
        self.scopes: list[_Scope] = []
        # After a reopen: a closed model and the closed system under test, still used.
        self.closed: tuple[Backend, Backend] | None = None
        self.diverged = False

    # comparing

    def _same(self, what: str, model: Outcome, sut: Outcome) -> None:
        if model != sut:
            self.diverged = True
            raise AssertionError(f"{what}: model {model!r}, system under test {sut!r}")

    def _both(self, data: st.DataObject, what: str, action: Callable[[View], Any]) -> None:
        """Run ``action`` on both backends, through the innermost scope or the root view
        (now and then on the closed pair instead, once there is one)."""
        if self.closed is not None and data.draw(st.integers(0, 7), label="closed pair") == 0:
            model_view, sut_view = self.closed[0].view, self.closed[1].view
            what = f"{what} after close()"
        else:
            root = not self.scopes or data.draw(st.booleans(), label="through the root view")
            model_view = self.model.view if root else self.scopes[-1].model_view
            sut_view = self.sut.view if root else self.scopes[-1].sut_view
        self._same(what, _outcome(lambda: action(model_view)), _outcome(lambda: action(sut_view)))

    def _exit(self, scope: _Scope, commit: bool, what: str) -> None:
        """Leave ``scope`` on both backends, normally or by an exception."""
        args = (None, None, None) if commit else (_RollbackError, _RollbackError(), None)
        self._same(
            what,
            _outcome(lambda: scope.model.__exit__(*args)),
            _outcome(lambda: scope.sut.__exit__(*args)),
        )

    def _leave_nested(self, data: st.DataObject, index: int, what: str) -> None:
        """Forget the scopes from ``index`` on, leaving those nested in it as their holders
        would (they were rolled back with it)."""
        nested = self.scopes[index + 1 :]
        del self.scopes[index:]
        for scope in reversed(nested):
            self._exit(scope, data.draw(st.booleans(), label="nested left normally"), what)

    @initialize()
    def create_anchors(self) -> None:
        """Most sequences need an anchor root: create two (the third key stays free)."""
        for key in ROOT_KEYS[:2]:
            self._same(
                f"root {key}",
                _outcome(partial(_insert_root, self.model, key)),
                _outcome(partial(_insert_root, self.sut, key)),
            )

    # scopes

    @precondition(lambda self: len(self.scopes) < MAX_SCOPES)
    @rule()
    def begin(self) -> None:
        model, sut = self.model.transaction(), self.sut.transaction()
        model_entered, sut_entered = _outcome(model.__enter__), _outcome(sut.__enter__)
        self._same("begin", model_entered, sut_entered)
        if model_entered[0] == "ok":
            # A scope entered only holds its bound view, fetched again for identity.
            self.scopes.append(_Scope(model, _innermost(self.model), sut, _innermost(self.sut)))

    @precondition(lambda self: self.closed is not None)
    @rule()
    def begin_on_the_closed_pair(self) -> None:
        assert self.closed is not None
        model, sut = self.closed[0].transaction(), self.closed[1].transaction()
        self._same("begin after close()", _outcome(model.__enter__), _outcome(sut.__enter__))

    @precondition(lambda self: bool(self.scopes))
    @rule()
    def commit(self) -> None:
        self._exit(self.scopes.pop(), True, "commit")

    @precondition(lambda self: bool(self.scopes))
    @rule()
    def rollback(self) -> None:
        self._exit(self.scopes.pop(), False, "rollback")

    @precondition(lambda self: len(self.scopes) >= 2)
    @rule(data=st.data())
    def close_an_outer_scope_first(self, data: st.DataObject) -> None:
        """As two generators holding scopes do when closed in the wrong order."""
        index = data.draw(st.integers(0, len(self.scopes) - 2), label="scope closed first")
        commit = data.draw(st.booleans(), label="left normally")
        self._exit(self.scopes[index], commit, "scope closed before a nested one")
        self._leave_nested(data, index, "scope left after its parent closed")

    @precondition(lambda self: bool(self.scopes))
    @rule(data=st.data())
    def close_a_scope_on_another_thread(self, data: st.DataObject) -> None:
        """As a generator holding a scope does when resumed or closed on another thread."""
        index = data.draw(st.integers(0, len(self.scopes) - 1), label="scope closed elsewhere")
        commit = data.draw(st.booleans(), label="left normally")
        scope = self.scopes[index]
        args = (None, None, None) if commit else (_RollbackError, _RollbackError(), None)
        outcomes: list[Outcome] = []

        def run() -> None:
            outcomes.append(_outcome(lambda: scope.model.__exit__(*args)))
            outcomes.append(_outcome(lambda: scope.sut.__exit__(*args)))

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        self._same("scope closed on another thread", outcomes[0], outcomes[1])
        self._same("scope closed on another thread", outcomes[0], ("error", TransactionError))
        self._leave_nested(data, index, "scope left after its parent closed on another thread")

    @precondition(lambda self: bool(self.scopes))
    @rule(data=st.data())
    def use_a_bound_view_from_another_thread(self, data: st.DataObject) -> None:
        scope = self.scopes[-1]
        key = data.draw(st.sampled_from(KEYS[WORKFLOW_STATES.id]))
        outcomes: list[Outcome] = []

        def run() -> None:
            for view in (scope.model_view, scope.sut_view):
                outcomes.append(_outcome(lambda view=view: view.records(WORKFLOW_STATES).read(key)))

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        self._same("bound view on another thread", outcomes[0], outcomes[1])
        self._same("bound view on another thread", outcomes[0], ("error", TransactionError))

    # records

    def _revision_now(self, resource_id: str, key: Any) -> int:
        """The model's current revision of ``key`` (0 if missing), to aim CAS calls well."""
        rows = self.model.driver._state.records.get(resource_id, {})  # type: ignore[attr-defined]
        found = rows.get(key)
        return 0 if found is None else int(found.revision)

    def _head_now(self, stream: Any) -> int:
        """The model's current head of ``stream``."""
        streams = self.model.driver._state.streams.get(JOURNAL.id, {})  # type: ignore[attr-defined]
        return len(streams.get(stream, ()))

    @rule(data=st.data())
    def insert(self, data: st.DataObject) -> None:
        resource = data.draw(st.sampled_from((ROOTS, *RECORDS)), label="resource")
        a = _arguments(
            data,
            {
                "resource": _reference(resource),
                "key": _key(KEYS[resource.id]),
                "revision": st.one_of(st.integers(0, 3), st.just(MAX_INTEGER)),
                "attributes": _attributes(resource.id),
                "record": RECORD,
            },
            {
                "resource": BAD_REFERENCE,
                "key": BAD_KEY,
                "revision": BAD_REVISION,
                "attributes": BAD_ATTRIBUTES,
                "record": BAD_RECORD,
            },
        )
        self._both(
            data,
            "insert",
            lambda view: view.records(a["resource"]).insert(
                key=a["key"],
                revision=a["revision"],
                attributes=a["attributes"],
                record=_built(a["record"]),
            ),
        )

    @rule(data=st.data())
    def replace(self, data: st.DataObject) -> None:
        resource = data.draw(st.sampled_from(RECORDS))
        key = data.draw(_key(KEYS[resource.id]))
        current = self._revision_now(resource.id, key)
        partial = data.draw(_attributes(resource.id))
        a = _arguments(
            data,
            {
                "expected": st.sampled_from((current, current, current + 1, max(current - 1, 0))),
                "step": st.just(1),
                "attributes": _attributes(resource.id),
                "expected_attributes": st.sampled_from((None, {}))
                | st.sets(st.sampled_from(sorted(partial) or [""])).map(
                    lambda names: {name: partial[name] for name in names if name}
                ),
                "record": RECORD,
            },
            {
                "key": BAD_KEY,
                "expected": BAD_REVISION,
                "step": st.sampled_from((0, 2)),
                "attributes": BAD_ATTRIBUTES,
                "expected_attributes": BAD_ATTRIBUTES,
                "record": BAD_RECORD,
            },
        )
        key = a.get("key", key)
        expected = a["expected"]
        following = expected + a["step"] if isinstance(expected, int) else expected
        self._both(
            data,
            "replace",
            lambda view: view.records(resource).replace(
                key=key,
                expected_revision=expected,
                next_revision=following,
                attributes=a["attributes"],
                record=_built(a["record"]),
                expected_attributes=a["expected_attributes"],
            ),
        )

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        resource = data.draw(st.sampled_from(RECORDS))
        key = data.draw(_key(KEYS[resource.id]))
        current = self._revision_now(resource.id, key)
        a = _arguments(
            data,
            {"expected": st.sampled_from((UNCHECKED, current, current + 1))},
            {"key": BAD_KEY, "expected": BAD_REVISION},
        )
        key = a.get("key", key)
        self._both(
            data,
            "delete",
            lambda view: view.records(resource).delete(key=key, expected_revision=a["expected"]),
        )

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        resource = data.draw(st.sampled_from(RECORDS))
        a = _arguments(data, {"key": _key(KEYS[resource.id])}, {"key": BAD_KEY})
        how = data.draw(st.sampled_from(("read", "fetch", "history")))
        self._both(data, how, lambda view: getattr(view.records(resource), how)(a["key"]))

    @rule(data=st.data())
    def scan(self, data: st.DataObject) -> None:
        resource, index, equals = data.draw(_index_query())
        a = _arguments(
            data,
            {"after": st.none() | _key(KEYS[resource.id]), "limit": LIMIT},
            {"after": BAD_KEY.filter(lambda key: key is not None), "limit": BAD_LIMIT},
        )
        self._both(
            data,
            "scan",
            lambda view: view.records(resource).scan(
                index=index, equals=equals, after=a["after"], limit=a["limit"]
            ),
        )

    @rule(data=st.data())
    def delete_matching(self, data: st.DataObject) -> None:
        # Executions are guarded by their owner's root: an owner without one ("ø")
        # exercises the guard of delete_matching.
        resource, index, equals = data.draw(_index_query())
        self._both(
            data,
            "delete_matching",
            lambda view: view.records(resource).delete_matching(index=index, equals=equals),
        )

    # streams

    @rule(data=st.data())
    def append(self, data: st.DataObject) -> None:
        stream = data.draw(_key(ROOT_KEYS))
        head = self._head_now(stream)
        a = _arguments(
            data,
            {
                "head": st.sampled_from((head, head, head + 1, max(head - 1, 0))),
                "entries": _entries(),
            },
            {"stream": BAD_KEY, "head": BAD_REVISION, "entries": _bad_entries()},
        )
        stream = a.get("stream", stream)
        self._both(
            data,
            "append",
            lambda view: view.streams(JOURNAL).append(
                stream=stream, expected_head=a["head"], entries=_built(a["entries"])
            ),
        )

    @rule(data=st.data())
    def read_stream(self, data: st.DataObject) -> None:
        a = _arguments(
            data,
            {
                "stream": _key(ROOT_KEYS),
                "after": st.one_of(st.integers(0, 4), st.just(MAX_INTEGER)),
                "limit": LIMIT,
            },
            {"stream": BAD_KEY, "after": BAD_REVISION, "limit": BAD_LIMIT},
        )
        how = data.draw(st.sampled_from(("read", "head", "delete")))
        streams = JOURNAL

        def action(view: View) -> Any:
            if how == "read":
                return view.streams(streams).read(
                    stream=a["stream"], after=a["after"], limit=a["limit"]
                )
            return getattr(view.streams(streams), how)(stream=a["stream"])

        self._both(data, f"stream {how}", action)

    # blobs

    @rule(data=st.data())
    def put_blob(self, data: st.DataObject) -> None:
        a = _arguments(
            data,
            {
                "key": _key(BLOB_KEYS),
                "data": st.sampled_from(BLOB_DATA),
                "version": st.integers(1, 2),
            },
            {"key": BAD_KEY, "data": st.just("text"), "version": st.just("1")},
        )
        self._both(
            data,
            "put_if_absent",
            lambda view: view.blobs(CONTENT_BLOBS).put_if_absent(
                key=a["key"], data=a["data"], attributes={"canonicalization_version": a["version"]}
            ),
        )

    @rule(data=st.data())
    def fetch_blob(self, data: st.DataObject) -> None:
        a = _arguments(data, {"key": _key(BLOB_KEYS)}, {"key": BAD_KEY})
        how = data.draw(st.sampled_from(("fetch", "exists")))
        self._both(
            data, f"blob {how}", lambda view: getattr(view.blobs(CONTENT_BLOBS), how)(a["key"])
        )

    # guards and conditions

    @rule(data=st.data())
    def check(self, data: st.DataObject) -> None:
        guards = st.lists(
            st.sampled_from(ROOT_KEYS).map(lambda key: GuardRef(ROOTS.id, key)), max_size=3
        )
        conditions = st.lists(_conditions(), max_size=3)
        a = _arguments(
            data,
            {"guards": guards | guards.map(tuple), "conditions": conditions},
            {
                "guards": st.just("not a list") | guards.map(set) | guards.map(_one_shot),
                "conditions": conditions.map(set)
                | conditions.map(frozenset)
                | conditions.map(_one_shot)
                | st.just({"a": 1}),
            },
        )
        self._both(
            data,
            "check",
            # Fresh iterators on each backend: a generator is used up by its first reader.
            lambda view: view.check(guards=_built(a["guards"]), conditions=_built(a["conditions"])),
        )

    # threads

    @precondition(lambda self: not self.scopes)
    @rule(data=st.data())
    def race_two_independent_writes(self, data: st.DataObject) -> None:
        """Two writes on different keys at once on the system under test; one after the
        other on the model (they commute, so the outcomes must match)."""
        slots = data.draw(
            st.lists(
                st.sampled_from(
                    [("workflow", key) for key in KEYS[WORKFLOW_STATES.id]]
                    + [("stream", key) for key in ROOT_KEYS]
                    + [("blob", key) for key in BLOB_KEYS]
                ),
                min_size=2,
                max_size=2,
                unique=True,
            )
        )
        actions = [data.draw(_independent_write(kind, key)) for kind, key in slots]
        expected = [_outcome(lambda action=action: action(self.model.view)) for action in actions]
        found: list[Outcome | None] = [None, None]
        start = threading.Barrier(len(actions))

        def run(index: int) -> None:
            start.wait()
            found[index] = _outcome(lambda: actions[index](self.sut.view))

        threads = [threading.Thread(target=run, args=(index,)) for index in range(len(actions))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for index, outcome in enumerate(expected):
            self._same(f"racing write {slots[index]}", outcome, found[index])

    @precondition(lambda self: not self.scopes)
    @rule()
    def reopen(self) -> None:
        """A fresh backend on the same database: nothing may live only in the old object."""
        closed_sut = self.sut
        self.sut = type(self).store.reopen()
        if self.closed is None:
            closed_model = InMemoryBackend(FIXTURE_RESOURCES)
            closed_model.close()
            self.closed = (closed_model, closed_sut)

    # the end

    def teardown(self) -> None:
        while self.scopes:
            self.rollback()
        if not self.diverged:
            self._final_state()

    def _final_state(self) -> None:
        for what, read in _final_reads():
            self._same(what, _outcome(partial(read, self.model)), _outcome(partial(read, self.sut)))
        report = audit_backend(self.sut)
        assert report.ok, report.lines()


def _final_reads() -> Iterator[tuple[str, Callable[[Backend], Any]]]:
    """Every read that shows the whole state of the keys the machine uses."""
    for resource in RECORDS:
        for key in KEYS[resource.id]:
            yield f"final {resource.id}/{key}", _reader(resource, key)
            yield f"final history {resource.id}/{key}", _history(resource, key)
    for stream in ROOT_KEYS:
        yield f"final stream {stream}", _stream_reader(stream)
    for key in BLOB_KEYS:
        yield f"final blob {key}", _blob_reader(key)


def _insert_root(backend: Backend, key: str) -> RecordEntry:
    return backend.view.records(ROOTS).insert(
        key=key, revision=0, attributes={}, record=_record({})
    )


def _innermost(backend: Backend) -> View:
    scope = backend.current_scope()
    assert scope is not None
    return View(backend, scope)


def _reader(resource: Any, key: str) -> Callable[[Backend], Any]:
    return lambda backend: backend.view.records(resource).read(key)


def _history(resource: Any, key: str) -> Callable[[Backend], Any]:
    return lambda backend: backend.view.records(resource).history(key)


def _stream_reader(stream: str) -> Callable[[Backend], Any]:
    return lambda backend: backend.view.streams(JOURNAL).read(stream=stream)


def _blob_reader(key: str) -> Callable[[Backend], Any]:
    return lambda backend: backend.view.blobs(CONTENT_BLOBS).fetch(key)


@st.composite
def _index_query(draw: st.DrawFn) -> tuple[Any, Any, Any]:
    resource = draw(st.sampled_from((EXECUTIONS, INVENTORY_ITEMS)))
    index = draw(st.sampled_from([*sorted(resource.indexes) * 4, "missing"]))
    attributes = draw(_attributes(resource.id))
    fields = resource.indexes.get(index, ("owner",))
    equals = {name: attributes[name] for name in fields if name in attributes}
    if draw(st.integers(0, 9)) == 0:  # wrong fields
        equals = dict(attributes)
    return resource, index, equals


def _entries() -> st.SearchStrategy[list[EntrySpec]]:
    return st.lists(
        st.builds(EntrySpec, st.sampled_from(ENTRY_IDS), RECORD),
        max_size=3,
        unique_by=lambda entry: entry.id,
    )


def _bad_entries() -> st.SearchStrategy[Any]:
    """Not a list, an element that is not an entry, an id twice in the batch, a bad id."""
    return st.one_of(
        _entries().map(_one_shot),
        _entries().map(lambda entries: [*entries, "not an entry"]),
        st.builds(EntrySpec, st.sampled_from(ENTRY_IDS), RECORD).map(lambda e: [e, e]),
        st.builds(EntrySpec, BAD_KEY, RECORD).map(lambda e: [e]),
    )


def _conditions() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            RevisionIs,
            st.sampled_from((ROOTS.id, WORKFLOW_STATES.id, INVENTORY_ITEMS.id, EXECUTIONS.id)),
            st.sampled_from(("owner-1", "a", "i1", "e1")),
            st.integers(0, 3),
        ),
        st.builds(StreamHeadIs, st.just(JOURNAL.id), st.sampled_from(ROOT_KEYS), st.integers(0, 3)),
        st.builds(
            NoRows,
            st.just(EXECUTIONS.id),
            st.just("owner_active"),
            st.fixed_dictionaries({"owner": st.sampled_from(ROOT_KEYS), "active": st.booleans()}),
        ),
        st.builds(
            NoRows,
            st.just(INVENTORY_ITEMS.id),
            st.just("code"),
            st.fixed_dictionaries({"code": st.one_of(st.none(), st.just("X1"))}),
        ),
    )


def _independent_write(kind: str, key: str) -> st.SearchStrategy[Callable[[View], Any]]:
    """A write touching only ``key`` of one kind (no anchors written, no unique constraint)."""
    if kind == "workflow":
        return st.tuples(
            st.integers(0, 3), st.sampled_from(("insert", "replace", "delete")), PAYLOADS
        ).map(lambda args: _workflow_write(key, *args))
    if kind == "stream":
        return st.tuples(
            st.integers(0, 3), st.lists(st.sampled_from(ENTRY_IDS), max_size=2, unique=True)
        ).map(
            lambda args: (
                lambda view: view.streams(JOURNAL).append(
                    stream=key,
                    expected_head=args[0],
                    entries=[AppendEntry(entry_id, _record({})) for entry_id in args[1]],
                )
            )
        )
    return st.sampled_from(BLOB_DATA).map(
        lambda data: (
            lambda view: view.blobs(CONTENT_BLOBS).put_if_absent(
                key=key, data=data, attributes={"canonicalization_version": 1}
            )
        )
    )


def _workflow_write(
    key: str, revision: int, operation: str, payload: dict[str, Any]
) -> Callable[[View], Any]:
    def write(view: View) -> Any:
        records = view.records(WORKFLOW_STATES)
        if operation == "insert":
            return records.insert(
                key=key, revision=revision, attributes={}, record=_record(payload)
            )
        if operation == "replace":
            return records.replace(
                key=key,
                expected_revision=revision,
                next_revision=revision + 1,
                attributes={},
                record=_record(payload),
            )
        return records.delete(key=key, expected_revision=revision)

    return write


def _clear(backend: Backend) -> None:
    """Empty every storage table of an SQL backend (between examples)."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        for table in ("{events}", "{records}", "{heads}", "{ids}", "{blobs}"):
            session.execute("DELETE FROM " + table)


class SqlStore:
    """The database under test and the backend currently open on it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.backend = open_backend(url, FIXTURE_RESOURCES)

    def reopen(self) -> Backend:
        """Close the backend and open a new one on the same database."""
        self.backend.close()
        self.backend = open_backend(self.url, FIXTURE_RESOURCES)
        return self.backend


@pytest.fixture
def store(nenjim_durable_store_url: str) -> Iterator[SqlStore]:
    """The system under test: an SQL database, emptied before each example."""
    url = nenjim_durable_store_url
    opened = SqlStore(url)
    yield opened
    opened.backend.close()


# psycopg_pool's worker threads draw jitter from the global `random` while Hypothesis draws
# on the test thread; Hypothesis reads that as a strategy using `random`. Nothing here does.
@pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies"
    ":hypothesis.errors.HypothesisDeprecationWarning"
)
def test_random_spi_call_sequences_behave_like_the_model(store: SqlStore) -> None:
    name = "SpiMachineOn" + type(store.backend).__name__
    machine = type(name, (SpiMachine,), {"store": store})
    run_state_machine_as_test(machine, settings=FUZZ_SETTINGS)
