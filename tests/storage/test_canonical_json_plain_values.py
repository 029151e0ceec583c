"""``canonical_json.dumps`` writes plain values (no float, ASCII member names) with the
standard library's C encoder: its text must be exactly what the canonical writer gives,
and a value either refuses must be refused with the writer's own error."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nenjim.infrastructure.storage import canonical_json
from tests.support.json_values import PAYLOADS, nested


def _written(value: Any) -> str:
    """The canonical writer's own text, never the C encoder's."""
    parts: list[str] = []
    canonical_json._write(value, parts, "$", 0)
    return "".join(parts)


def _outcome(write: Any, value: Any) -> tuple[str, str]:
    try:
        return "text", write(value)
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error)


ASCII_KEYS = st.text(st.characters(max_codepoint=127), max_size=6)
ANY_TEXT = st.text(max_size=8)  # lone surrogates and NUL included
PLAIN_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)  # past ±(2^53-1): refused
    | st.floats()  # NaN, infinities and -0.0 refused; whole and exponent forms the long way
    | ANY_TEXT
)
PLAIN = st.recursive(
    PLAIN_SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(ASCII_KEYS | ANY_TEXT, children, max_size=4)
    ),
    max_leaves=20,
)


class Level(enum.IntEnum):
    HIGH = 3


class Label(str):
    pass


@settings(max_examples=400)
@given(st.dictionaries(ASCII_KEYS | ANY_TEXT, PLAIN, max_size=5) | PAYLOADS)
@example({"a": "\x00"})
@example({"\x00": 1})
@example({"a": "\ud800"})
@example({"é": 1, "e": 2, "\U0001f600": 3, "\uff61": 4})
@example({"n": 2**53 - 1, "m": -(2**53 - 1)})
@example({"n": 2**53})
@example({"n": 1.5, "m": 1e16, "o": 0.1, "p": -2.5, "q": 1e-5, "r": 123.0, "s": 0.0})
@example({"n": 1e-7, "m": 1e21, "o": 9.999999999999999e20, "p": 5e-324, "q": 0.000123})
@example({"n": float("nan")})
@example({"n": -0.0})
@example({"level": Level.HIGH, "label": Label("x")})
@example({1: "an int key"})
@example({"t": (1, [2, (3,)]), "s": '\u2028\x7f\x01"\\'})
@example(nested(canonical_json.MAX_DEPTH, 1))
@example(nested(canonical_json.MAX_DEPTH + 1, 1))
def test_dumps_is_the_canonical_writers_text_or_error(value: Any) -> None:
    assert _outcome(canonical_json.dumps, value) == _outcome(_written, value)


def test_plain_values_take_the_c_encoder_and_others_the_writer() -> None:
    assert canonical_json._plain({"a": [1, "é", None, True, (2,), 0.5], "b": {"c": "x"}})
    for value in (
        {"a": 1.0},
        {"a": 1e-7},
        {"a": float("inf")},
        {"é": 1},
        {"a": "\x00"},
        {"a": 2**53},
        {"a": Level.HIGH},
        {"a": Label("x")},
        {1: 1},
        nested(canonical_json.MAX_DEPTH + 1, 1),
    ):
        assert not canonical_json._plain(value), value


@pytest.mark.parametrize("value", [{"a": object()}, {"a": {1, 2}}, {"a": b"x"}])
def test_what_is_not_json_is_refused_by_the_writer(value: Any) -> None:
    with pytest.raises(TypeError, match=r"\$\.a: .* is not a JSON-native value"):
        canonical_json.dumps(value)


@settings(max_examples=300)
@given(st.dictionaries(ASCII_KEYS | ANY_TEXT, PLAIN, max_size=5) | PAYLOADS)
@example({"n": 1e16, "m": -(2**53 - 1), "o": 0.1, "p": [None, True, "é"]})
@example(nested(canonical_json.MAX_DEPTH, 1))
def test_canonical_text_parses_as_loads_parses_it(value: Any) -> None:
    """A ``DurableRecord``'s payload is parsed without the depth walk: the same value."""
    try:
        text = canonical_json.dumps(value)
    except (TypeError, ValueError):
        return  # not canonical JSON: no text to parse
    parsed, checked = canonical_json.loads_canonical(text), canonical_json.loads(text)
    assert parsed == checked
    assert canonical_json.dumps(parsed) == text
