"""The JSON value space a payload may hold, as Hypothesis strategies, and what "reads back
equal" means for it.

A payload holds ``None``, booleans, integers within ±(2^53-1), finite floats other
than ``-0.0``, text without NUL or lone surrogates, lists (tuples are written as
lists) and objects with text keys, nested at most 100 deep (the payload object
counts 1). A whole float within ±(2^53-1) is written as an integer and reads back
as an ``int``; every other number keeps its type.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from nenjim.infrastructure.storage.canonical_json import MAX_DEPTH, MAX_SAFE_INTEGER

BOUNDARY_FLOATS = (
    2.0**53 - 1,
    2.0**53,
    2.0**53 + 2,
    1e16,
    -1e16,
    2.0**60,
    1e20,
    9.999999999999999e20,
    1e21,
    -1e21,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    0.1,
    1e-7,
    1e-6,
    0.0,
    1.0,
)
"""Floats where the canonical form changes shape: 2^53, plain digits up to 1e21 and an
exponent from there, the smallest subnormal and normal, the largest float."""

BOUNDARY_INTEGERS = (0, 1, -1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 2**31, -(2**31) - 1)

EDGE_TEXT = (
    "",
    "\U0001f600",  # outside the BMP: a surrogate pair in UTF-16 (member order)
    "\uffff",
    "\ufeff",
    "\u2028\u2029",
    "e\u0301",  # not normalised: kept as written
    "\u00e9",
    "\x01\x1f\x7f",
    '"\\/',
    "\U0010ffff",
)

TEXT = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\0"), max_size=8
) | st.sampled_from(EDGE_TEXT)

FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda value: value != 0 or math.copysign(1, value) > 0
) | st.sampled_from(BOUNDARY_FLOATS + tuple(-value for value in BOUNDARY_FLOATS if value))

INTEGERS = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.sampled_from(BOUNDARY_INTEGERS)

SCALARS = st.none() | st.booleans() | INTEGERS | FLOATS | TEXT

VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(TEXT, children, max_size=5)
        | st.lists(children, max_size=3).map(tuple)
    ),
    max_leaves=25,
)


def nested(depth: int, leaf: Any) -> Any:
    """``leaf`` inside ``depth`` arrays and objects, alternating (the outermost counts 1)."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"n": value}
    return value


DEEP = st.tuples(st.integers(1, MAX_DEPTH - 1), SCALARS).map(lambda drawn: {"deep": nested(*drawn)})
"""Payloads nested up to the limit: the payload object and 1 to 99 levels inside it."""

WIDE = st.sampled_from((10, 300)).map(
    lambda width: {
        "wide": [BOUNDARY_FLOATS[index % len(BOUNDARY_FLOATS)] for index in range(width)],
        **{f"k{index}": index for index in range(width)},
    }
)

PAYLOADS = st.dictionaries(TEXT, VALUES, max_size=5) | DEEP | WIDE


def same(read: Any, written: Any, path: str = "$") -> None:
    """``read`` is what reading ``written`` back must give: equal, and of the same JSON type
    (a whole float within ±(2^53-1) is an ``int``, a tuple a list, an object a mapping)."""
    if isinstance(written, dict):
        assert isinstance(read, Mapping), f"{path}: {read!r} is not an object"
        assert set(read) == set(written), f"{path}: keys {sorted(read)} != {sorted(written)}"
        for key, child in written.items():
            same(read[key], child, f"{path}.{key}")
        return
    if isinstance(written, list | tuple):
        assert type(read) is list, f"{path}: {read!r} is not a list"
        assert len(read) == len(written), path
        for index, (got, child) in enumerate(zip(read, written, strict=True)):
            same(got, child, f"{path}[{index}]")
        return
    if isinstance(written, float):
        whole = written.is_integer() and abs(written) <= MAX_SAFE_INTEGER
        expected: type = int if whole else float
    else:
        expected = type(written)
    assert type(read) is expected, f"{path}: {read!r} is a {type(read).__name__}"
    assert read == written, f"{path}: {read!r} != {written!r}"
