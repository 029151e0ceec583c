"""The limits every backend applies alike, before any physical work.

- Integers (revisions, positions, heads, limits, integer attributes) fit a
  signed 64-bit integer: ``2**63`` and beyond are a ``ValueError``, on the
  in-memory backend too.
- Text has no NUL and no lone surrogate wherever it enters: keys, resource,
  attribute, index and constraint names, record types, attribute values and
  payloads.
- A key takes at most 512 bytes of UTF-8, an indexed or constrained string
  value at most 512, and the fields of one index at most 1536 at their
  widest; at those limits every backend stores and finds the row.
- Payloads nest at most 100 arrays and objects deep.
- ``check()`` takes its guards and conditions as a list or tuple.

A refused argument never fails the enclosing transaction: every test makes
its bad calls inside one and commits a write afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConditionFailedError,
    DurableRecord,
    GuardRef,
    NoRows,
    NotFoundError,
    Resource,
    RevisionIs,
    SerializationError,
    StreamHeadIs,
    UniqueConstraintError,
    View,
)
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    JOURNAL,
    OWNER,
    ROOTS,
    ROOTS_ID,
    WORKFLOW_STATES,
    opaque_record,
    roots_resource,
)
from nenjim.infrastructure.storage.testing.support import (
    INVALID_ARGUMENT,
    BackendFactory,
    StorageContract,
)

MAX = 2**63 - 1
MIN = -(2**63)


def _incompressible(size: int, seed: int) -> str:
    """Random CJK text of exactly ``size`` bytes of UTF-8 (no page compression helps it)."""
    generator = random.Random(seed)
    text = "".join(chr(generator.randrange(0x4E00, 0x9FFF)) for _ in range(size // 3))
    return text + "x" * (size - len(text.encode("utf-8")))


def _nested(depth: int) -> dict[str, Any]:
    """A payload whose arrays and objects nest ``depth`` deep (the payload object counts)."""
    value: Any = []
    for _ in range(depth - 2):
        value = [value]
    return {"deep": value}


@contextmanager
def _usable_after(backend: Backend, key: str) -> Iterator[View]:
    """A transaction that must commit a write after the refusals made in it."""
    with backend.transaction() as view:
        yield view
        view.records(WORKFLOW_STATES).insert(
            key=key, revision=1, attributes={}, record=opaque_record()
        )
    assert backend.view.records(WORKFLOW_STATES).read(key) is not None


def _numbers_resource() -> Resource:
    return Resource(
        "limits.numbers",
        "records",
        attributes={"n": "integer", "m": "nullable_integer"},
        indexes={"n": ("n",)},
        unique=({"name": "unique_n", "fields": ("n",), "where": {}},),
    )


def _wide_resource(resource_id: str) -> Resource:
    return Resource(
        resource_id,
        "records",
        attributes={"a": "string", "b": "string", "c": "string", "note": "string"},
        indexes={"abc": ("a", "b", "c")},
        unique=({"name": "unique_abc", "fields": ("a", "b", "c"), "where": {}},),
    )


def _things_resource() -> Resource:
    """Records anchored through an attribute that happens to be named ``stream``."""
    return Resource(
        "limits.things",
        "records",
        attributes={"stream": "string"},
        immutable_attributes=("stream",),
        indexes={"by_stream": ("stream",)},
        guard={"resource": ROOTS_ID, "via": "stream"},
    )


class StorageLimitsContract(StorageContract):
    """Integer, text, size and nesting limits, and the order ``check()`` needs."""

    # integers ----------------------------------------------------------------

    def test_revisions_positions_and_limits_fit_a_signed_64_bit_integer(
        self, backend: Backend
    ) -> None:
        record = opaque_record()
        with _usable_after(backend, "after") as view:
            states = view.records(WORKFLOW_STATES)
            streams = view.streams(JOURNAL)
            runs = view.records(EXECUTIONS)
            refused: list[Callable[[], object]] = [
                lambda: states.insert(key="big", revision=MAX + 1, attributes={}, record=record),
                lambda: states.replace(
                    key="top",
                    expected_revision=MAX,
                    next_revision=MAX + 1,
                    attributes={},
                    record=record,
                ),
                lambda: states.delete(key="top", expected_revision=MAX + 1),
                lambda: runs.scan(index="owner", equals={"owner": OWNER}, limit=MAX + 1),
                lambda: streams.read(stream=OWNER, after=MAX + 1),
                lambda: streams.read(stream=OWNER, limit=MAX + 1),
                lambda: streams.append(
                    stream=OWNER, expected_head=MAX + 1, entries=[AppendEntry("e", record)]
                ),
                lambda: streams.append(
                    stream=OWNER, expected_head=MAX, entries=[AppendEntry("e", record)]
                ),
                lambda: view.blobs(CONTENT_BLOBS).put_if_absent(
                    key="blob", data=b"x", attributes={"canonicalization_version": MAX + 1}
                ),
                lambda: RevisionIs(ROOTS, OWNER, MAX + 1),
                lambda: StreamHeadIs(JOURNAL, OWNER, MAX + 1),
            ]
            for call in refused:
                with pytest.raises(ValueError, match=r"."):
                    call()
            top = states.insert(key="top", revision=MAX, attributes={}, record=record)
            assert top.revision == MAX
            assert states.fetch("top").revision == MAX
            assert runs.scan(index="owner", equals={"owner": OWNER}, limit=MAX) == ()
            assert streams.read(stream=OWNER, after=MAX, limit=MAX) == ()
            assert view.check(
                guards=[GuardRef(ROOTS, OWNER)], conditions=[StreamHeadIs(JOURNAL, OWNER, 0)]
            )

    def test_reading_a_restarted_stream_after_the_largest_position_is_empty(
        self, backend: Backend
    ) -> None:
        """A deleted and re-appended stream keeps its log entries below a base; no position
        arithmetic may overflow (found by the fuzzing harness: PostgreSQL's
        ``NumericValueOutOfRange`` where the others answered nothing)."""
        record = opaque_record()
        streams = backend.view.streams(JOURNAL)
        streams.append(stream=OWNER, expected_head=0, entries=[AppendEntry("e1", record)])
        streams.delete(stream=OWNER)
        streams.append(stream=OWNER, expected_head=0, entries=[AppendEntry("e2", record)])
        for limit in (None, 1, MAX):
            assert streams.read(stream=OWNER, after=MAX, limit=limit) == ()
            assert streams.read(stream=OWNER, after=MAX - 1, limit=limit) == ()
        assert [entry.id for entry in streams.read(stream=OWNER, after=0)] == ["e2"]
        with backend.transaction() as view:  # the scope stays usable too
            assert view.streams(JOURNAL).read(stream=OWNER, after=MAX) == ()
            assert view.streams(JOURNAL).head(stream=OWNER) == 1

    def test_integer_attributes_fit_a_signed_64_bit_integer_under_a_unique_constraint(
        self, make_backend: BackendFactory
    ) -> None:
        numbers = _numbers_resource()
        backend = make_backend([roots_resource(), numbers])
        record = opaque_record()
        with backend.transaction() as view:
            rows = view.records(numbers)
            for bad in (MAX + 1, MAX + 2, MIN - 1, 2**64):
                with pytest.raises(ValueError, match=r"."):
                    rows.insert(
                        key="bad", revision=0, attributes={"n": bad, "m": None}, record=record
                    )
                with pytest.raises(ValueError, match=r"."):
                    rows.insert(key="bad", revision=0, attributes={"n": 0, "m": bad}, record=record)
                with pytest.raises(ValueError, match=r"."):
                    rows.scan(index="n", equals={"n": bad})
            rows.insert(key="max", revision=0, attributes={"n": MAX, "m": MIN}, record=record)
            rows.insert(key="min", revision=0, attributes={"n": MIN, "m": MAX}, record=record)
        rows = backend.view.records(numbers)
        assert [r.key for r in rows.scan(index="n", equals={"n": MAX})] == ["max"]
        assert rows.fetch("min").attributes["m"] == MAX
        with pytest.raises(UniqueConstraintError):
            rows.insert(key="max-2", revision=0, attributes={"n": MAX, "m": None}, record=record)

    # text ----------------------------------------------------------------------

    @pytest.mark.parametrize("bad", ["a\0b", "a\ud800b"], ids=["NUL", "lone surrogate"])
    def test_declared_names_refuse_nul_and_lone_surrogates(self, bad: str) -> None:
        declarations: list[Callable[[], object]] = [
            lambda: Resource(bad, "records"),
            lambda: Resource("r", "records", attributes={bad: "string"}),
            lambda: Resource("r", "records", attributes={"a": "string"}, indexes={bad: ("a",)}),
            lambda: Resource(
                "r",
                "records",
                attributes={"a": "string"},
                unique=({"name": bad, "fields": ("a",), "where": {}},),
            ),
            lambda: Resource(
                "r",
                "records",
                attributes={"a": "string"},
                unique=({"name": "u", "fields": ("a",), "where": {"a": bad}},),
            ),
            lambda: Resource("r", "records", guard={"resource": bad, "via": "key"}),
            lambda: Resource("r", "streams", guard={"resource": ROOTS_ID, "via": bad}),
        ]
        for declare in declarations:
            with pytest.raises(INVALID_ARGUMENT):
                declare()

    @pytest.mark.parametrize("bad", ["a\0b", "a\ud800b"], ids=["NUL", "lone surrogate"])
    def test_record_types_and_payloads_refuse_nul_and_lone_surrogates(self, bad: str) -> None:
        envelopes: list[Callable[[], object]] = [
            lambda: DurableRecord(bad, "0.1", {}),
            lambda: DurableRecord("t", "0.1", {"text": bad}),
            lambda: DurableRecord("t", "0.1", {bad: 1}),
            lambda: DurableRecord("t", "0.1", {"list": [{"nested": bad}]}),
        ]
        for envelope in envelopes:
            with pytest.raises(SerializationError):
                envelope()

    @pytest.mark.parametrize("bad", ["a\0b", "a\ud800b"], ids=["NUL", "lone surrogate"])
    def test_keys_and_attribute_values_refuse_nul_and_lone_surrogates(
        self, backend: Backend, bad: str
    ) -> None:
        record = opaque_record()
        with _usable_after(backend, "after") as view:
            runs = view.records(EXECUTIONS)
            calls: list[Callable[[], object]] = [
                lambda: runs.insert(
                    key=bad, revision=0, attributes={"owner": OWNER, "active": False}, record=record
                ),
                lambda: runs.insert(
                    key="r", revision=0, attributes={"owner": bad, "active": False}, record=record
                ),
                lambda: runs.scan(index="owner", equals={"owner": bad}),
                lambda: runs.scan(index="owner", equals={"owner": OWNER}, after=bad),
                lambda: view.streams(JOURNAL).append(
                    stream=OWNER, expected_head=0, entries=[AppendEntry(bad, record)]
                ),
                lambda: view.blobs(CONTENT_BLOBS).fetch(bad),
                lambda: GuardRef(ROOTS, bad),
            ]
            for call in calls:
                with pytest.raises(ValueError, match=r"."):
                    call()

    # sizes ---------------------------------------------------------------------

    def test_keys_up_to_512_bytes_work_everywhere_and_longer_ones_are_refused(
        self, backend: Backend
    ) -> None:
        record = opaque_record()
        longest = _incompressible(512, 1)
        too_long = longest + "x"
        with _usable_after(backend, "after") as view:
            states = view.records(WORKFLOW_STATES)
            streams = view.streams(JOURNAL)
            blobs = view.blobs(CONTENT_BLOBS)
            refusals: list[Callable[[], object]] = [
                lambda: states.insert(key=too_long, revision=1, attributes={}, record=record),
                lambda: states.read(too_long),
                lambda: streams.append(
                    stream=too_long, expected_head=0, entries=[AppendEntry("e", record)]
                ),
                lambda: AppendEntry(too_long, record),
                lambda: blobs.put_if_absent(
                    key=too_long, data=b"x", attributes={"canonicalization_version": 1}
                ),
                lambda: GuardRef(ROOTS, too_long),
                lambda: Resource(too_long, "records"),
            ]
            for call in refusals:
                with pytest.raises(ValueError, match=r"."):
                    call()
            states.insert(key=longest, revision=1, attributes={}, record=record)
            view.records(ROOTS).insert(key=longest, revision=0, attributes={}, record=record)
            appended = streams.append(
                stream=longest, expected_head=0, entries=[AppendEntry(longest, record)]
            )
            assert [entry.id for entry in appended] == [longest]
            blobs.put_if_absent(key=longest, data=b"x", attributes={"canonicalization_version": 1})
        view = backend.view
        assert view.records(WORKFLOW_STATES).fetch(longest).key == longest
        assert [e.id for e in view.streams(JOURNAL).read(stream=longest)] == [longest]
        assert view.blobs(CONTENT_BLOBS).exists(longest)

    def test_the_widest_index_entry_allowed_is_stored_found_and_kept_unique(
        self, make_backend: BackendFactory
    ) -> None:
        wide = _wide_resource(_incompressible(512, 2))
        backend = make_backend([roots_resource(), wide])
        rows = backend.view.records(wide)
        values = {name: _incompressible(512, seed) for seed, name in enumerate("abc", start=3)}
        key = _incompressible(512, 7)
        note = _incompressible(30_000, 8)  # not indexed: no limit
        rows.insert(
            key=key, revision=0, attributes={**values, "note": note}, record=opaque_record()
        )
        (found,) = rows.scan(index="abc", equals=values, after="\x01" * 512)
        assert (found.key, found.attributes["note"]) == (key, note)
        with pytest.raises(UniqueConstraintError):
            rows.insert(
                key="other", revision=0, attributes={**values, "note": ""}, record=opaque_record()
            )
        with backend.transaction() as view:
            for name in "abc":
                with pytest.raises(ValueError, match=r"."):
                    view.records(wide).insert(
                        key="too-wide",
                        revision=0,
                        attributes={**values, name: values[name] + "x", "note": ""},
                        record=opaque_record(),
                    )
                with pytest.raises(ValueError, match=r"."):
                    view.records(wide).scan(
                        index="abc", equals={**values, name: values[name] + "x"}
                    )
            view.records(wide).insert(
                key="fits",
                revision=0,
                attributes={"a": "1", "b": "2", "c": "3", "note": ""},
                record=opaque_record(),
            )
        assert backend.view.records(wide).read("fits") is not None

    def test_an_index_wider_than_1536_bytes_is_refused_when_declared(self) -> None:
        strings = dict.fromkeys("abcd", "string")
        with pytest.raises(ValueError, match=r"."):
            Resource("r", "records", attributes=strings, indexes={"abcd": tuple("abcd")})
        with pytest.raises(ValueError, match=r"."):
            Resource(
                "r",
                "records",
                attributes=strings,
                unique=({"name": "u", "fields": tuple("abcd"), "where": {}},),
            )
        with pytest.raises(ValueError, match=r"."):
            Resource(
                "r",
                "records",
                attributes={"a": "string", "b": "string", "c": "nullable_string", "n": "integer"},
                indexes={"abcn": ("a", "b", "c", "n")},
            )
        many = {"a": "string", "b": "string", **{f"n{i}": "integer" for i in range(25)}}
        Resource("r", "records", attributes=many, indexes={"all": tuple(many)})

    # nesting -------------------------------------------------------------------

    def test_payloads_nest_at_most_100_deep_and_the_deepest_round_trips(
        self, backend: Backend
    ) -> None:
        for depth in (101, 5_000, 100_000):
            with pytest.raises(SerializationError):
                DurableRecord("t", "0.1", _nested(depth))
        deepest = DurableRecord("t", "0.1", _nested(100))
        with _usable_after(backend, "after") as view:
            view.records(WORKFLOW_STATES).insert(
                key="deep", revision=1, attributes={}, record=deepest
            )
            appended = view.streams(JOURNAL).append(
                stream=OWNER, expected_head=0, entries=[AppendEntry("deep", deepest)]
            )
            assert appended[0].record == deepest
        assert backend.view.records(WORKFLOW_STATES).fetch("deep").record == deepest
        assert backend.view.records(WORKFLOW_STATES).history("deep")[0].record == deepest
        assert backend.view.streams(JOURNAL).read(stream=OWNER)[0].record == deepest

    # guards through an attribute named "stream" --------------------------------

    def test_a_records_guard_through_an_attribute_named_stream_follows_the_attribute(
        self, make_backend: BackendFactory
    ) -> None:
        roots = roots_resource()
        things = _things_resource()
        backend = make_backend([roots, things])
        record = opaque_record()
        backend.view.records(roots).insert(key=OWNER, revision=0, attributes={}, record=record)
        rows = backend.view.records(things)
        rows.insert(key="thing-1", revision=0, attributes={"stream": OWNER}, record=record)
        with pytest.raises(NotFoundError):
            rows.insert(key="thing-2", revision=0, attributes={"stream": "missing"}, record=record)
        with pytest.raises(ValueError, match=r"."):
            rows.insert(key="thing-3", revision=0, attributes={"stream": ""}, record=record)
        rows.replace(
            key="thing-1",
            expected_revision=0,
            next_revision=1,
            attributes={"stream": OWNER},
            record=record,
        )
        with pytest.raises(NotFoundError):
            rows.delete_matching(index="by_stream", equals={"stream": "missing"})
        condition = NoRows(things, "by_stream", {"stream": OWNER})
        with pytest.raises(ValueError, match=r"."):
            backend.view.check(guards=[], conditions=[condition])
        with pytest.raises(ConditionFailedError) as busy:
            backend.view.check(guards=[GuardRef(roots, OWNER)], conditions=[condition])
        assert busy.value.condition is condition
        rows.delete_matching(index="by_stream", equals={"stream": OWNER})
        assert rows.read("thing-1") is None

    # check() arguments ---------------------------------------------------------

    @pytest.mark.parametrize("shape", ["set", "generator", "dict", "str", "frozenset"])
    def test_check_takes_guards_and_conditions_as_a_list_or_tuple(
        self, backend: Backend, shape: str
    ) -> None:
        guard = GuardRef(ROOTS, OWNER)
        condition = StreamHeadIs(JOURNAL, OWNER, 0)

        def shaped(item: Any) -> Any:
            shapes: dict[str, Callable[[], Any]] = {
                "set": lambda: {item},
                "generator": lambda: (x for x in [item]),
                "dict": lambda: {item: item},
                "str": lambda: "item",
                "frozenset": lambda: frozenset([item]),
            }
            return shapes[shape]()

        with _usable_after(backend, "after") as view:
            with pytest.raises(TypeError):
                view.check(guards=[guard], conditions=shaped(condition))
            with pytest.raises(TypeError):
                view.check(guards=shaped(guard), conditions=[condition])
            assert view.check(guards=(guard,), conditions=(condition,))
