"""Every number a ``DurableRecord`` accepts reads back equal, from its canonical text and from
the state of the event that wrote it, as every reader of the log decodes it.

Canonical JSON writes a whole float below 1e21 in plain digits (``1e16`` is
``10000000000000000``), the form JCS prescribes; no integer past ±(2^53-1) is ever
written. Such a literal is read back as the float it is the canonical form of, so a
whole float reads back as an ``int`` up to 2^53-1 and as a ``float`` past it.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nenjim.infrastructure.storage import (
    DurableRecord,
    RecordEntry,
    SerializationError,
    canonical_json,
)
from nenjim.infrastructure.storage.sql import events

MAX_SAFE = canonical_json.MAX_SAFE_INTEGER

BOUNDARY_FLOATS = (
    2.0**53 - 1,
    2.0**53,
    2.0**53 + 2,
    1e16,
    -1e16,
    2.0**60,  # 1152921504606846976, written 1152921504606847000
    1e20,
    9.999999999999999e20,  # the largest float below 1e21: still plain digits
    1e21,  # the first in exponent form
    -1e21,
    5e-324,  # the smallest subnormal
    -5e-324,
    2.2250738585072014e-308,  # the smallest normal
    1.7976931348623157e308,  # the largest finite float
    -1.7976931348623157e308,
    0.1,
    1e-7,
    1e-6,
    0.0,
    1.0,
    -1.0,
)


def _record(value: Any) -> DurableRecord:
    return DurableRecord("test.numbers", "0.1", {"x": value})


def _decoded_state(payload_json: str) -> Any:
    """A payload text spliced into an event state, as the log's readers decode it."""
    return events.decode(('{"resource":"r","payload":' + payload_json + "}").encode())["payload"]


def _in_an_event(record: DurableRecord) -> Any:
    """The payload inside the state of a record write, decoded as the log's readers do."""
    entry = RecordEntry("key", 1, {}, record)
    state = events.record_state("test.values", entry, events.attributes_text(entry))
    return events.decode(state.encode())["payload"]


def _expected_type(value: float) -> type:
    """A whole float within ±(2^53-1) is written as an integer and reads back as one."""
    return int if value.is_integer() and abs(value) <= MAX_SAFE else float


def _reads_back(value: float) -> None:
    record = _record(value)
    from_text = DurableRecord.from_json("test.numbers", "0.1", record.payload_json)
    from_event = DurableRecord("test.numbers", "0.1", _in_an_event(record))
    assert from_text == record
    assert from_event == record
    for read in (record.payload["x"], from_text.payload["x"], from_event.payload["x"]):
        assert read == value
        assert type(read) is _expected_type(value)


@pytest.mark.parametrize("value", BOUNDARY_FLOATS, ids=repr)
def test_a_float_at_a_boundary_reads_back_equal(value: float) -> None:
    _reads_back(value)


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: math.copysign(1, v) > 0))
@example(1e16)
def test_every_finite_non_negative_float_reads_back_equal(value: float) -> None:
    _reads_back(value)


@given(st.floats(max_value=-0.0, allow_nan=False, allow_infinity=False).filter(lambda v: v != 0))
def test_every_finite_negative_float_reads_back_equal(value: float) -> None:
    _reads_back(value)


@given(st.integers(-MAX_SAFE, MAX_SAFE))
@example(MAX_SAFE)
@example(-MAX_SAFE)
def test_every_safe_integer_reads_back_as_that_integer(value: int) -> None:
    record = _record(value)
    read = DurableRecord.from_json("test.numbers", "0.1", record.payload_json).payload["x"]
    assert read == value
    assert type(read) is int


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**53, r"\$\.x: integer 9007199254740992 exceeds 2\^53-1"),
        (-(2**53), r"\$\.x: integer -9007199254740992 exceeds 2\^53-1"),
        (2**63 - 1, r"\$\.x: integer 9223372036854775807 exceeds"),
        (-(2**63), r"\$\.x: integer -9223372036854775808 exceeds"),
        (2**64, r"\$\.x: integer 18446744073709551616 exceeds"),
        (math.nan, r"\$\.x: nan is not a finite number"),
        (math.inf, r"\$\.x: inf is not a finite number"),
        (-math.inf, r"\$\.x: -inf is not a finite number"),
        (-0.0, r"\$\.x: -0\.0 has no canonical form"),
    ],
    ids=repr,
)
def test_a_number_without_a_canonical_form_is_refused_at_write(value: Any, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        _record(value)


@pytest.mark.parametrize(
    "literal",
    [
        "9007199254740993",  # 2^53+1: no float is written so
        "10000000000000001",
        "1152921504606846976",  # 2^60 exactly; its float is written 1152921504606847000
        "-9007199254740993",
        "1" * 400,  # past the largest float
    ],
)
def test_an_integer_literal_past_2_53_that_no_float_is_written_as_does_not_decode(
    literal: str,
) -> None:
    with pytest.raises(SerializationError, match="stored payload"):
        DurableRecord.from_json("test.numbers", "0.1", '{"x":' + literal + "}")
    if len(literal) < 100:
        with pytest.raises(SerializationError, match=r"\$\.x"):
            DurableRecord("test.numbers", "0.1", _decoded_state('{"x":' + literal + "}"))


def test_a_float_literal_past_the_largest_float_does_not_decode() -> None:
    with pytest.raises(SerializationError, match="stored payload is not JSON"):
        DurableRecord.from_json("test.numbers", "0.1", '{"x":1e400}')
    with pytest.raises(ValueError, match="not a finite number"):
        canonical_json.loads("[1e400]")


class Level(enum.IntEnum):
    """An integer enum that prints as its name, as many applications define them."""

    LOW = 1

    def __str__(self) -> str:
        return self.name


class Ratio(float):
    """A float subclass whose ``repr`` is not a number."""

    def __repr__(self) -> str:
        return f"Ratio({float(self)})"

    __str__ = __repr__


@pytest.mark.parametrize(
    ("value", "text", "plain"),
    [
        (Level.LOW, '{"x":1}', 1),
        (Ratio(0.5), '{"x":0.5}', 0.5),
        (Ratio(1e16), '{"x":10000000000000000}', 1e16),
        (True, '{"x":true}', True),
    ],
    ids=repr,
)
def test_a_subclass_of_a_number_is_written_as_its_number(value: Any, text: str, plain: Any) -> None:
    record = _record(value)
    assert record.payload_json == text
    read = DurableRecord.from_json("test.numbers", "0.1", record.payload_json).payload["x"]
    assert read == plain
    assert type(read) is type(plain)


def test_nested_numbers_read_back_in_arrays_and_objects() -> None:
    payload = {"a": [1e16, {"b": -(2.0**53), "c": [9.999999999999999e20]}], "d": 5e-324}
    record = DurableRecord("test.numbers", "0.1", payload)
    assert record.payload_json == (
        '{"a":[10000000000000000,{"b":-9007199254740992,"c":[999999999999999900000]}],"d":5e-324}'
    )
    assert record.payload == payload
    assert DurableRecord("test.numbers", "0.1", _in_an_event(record)) == record
