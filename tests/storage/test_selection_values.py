"""Field tests, orders and pages are values checked when made: a test no database can
evaluate as its definition says is refused with a message naming what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from nenjim.infrastructure.storage import FieldOrder, FieldTest
from nenjim.infrastructure.storage.selection import Selection


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ((("f",), "like", "x"), ValueError, "unknown field operator 'like'"),
        ((("f",), "gt", True), ValueError, "ordered test"),
        ((("f",), "gt", None), ValueError, "ordered test"),
        ((("f",), "eq", [1]), ValueError, "cannot take [1]"),
        ((("f",), "eq", 2**53), ValueError, "within"),
        ((("f",), "eq", float("nan")), ValueError, "cannot take nan"),
        ((("f",), "eq", "\ud800"), ValueError, "cannot take"),
        ((("f",), "present", 1), ValueError, "takes no operand"),
        (((), "eq", 1), ValueError, "at least one field"),
        (("f", "eq", 1), TypeError, "sequence of names"),
        ((("",), "eq", 1), ValueError, "field name ''"),
        ((('a"b',), "eq", 1), ValueError, "cannot be selected on"),
        ((("a\\b",), "eq", 1), ValueError, "cannot be selected on"),
        ((("a\nb",), "eq", 1), ValueError, "cannot be selected on"),
        (((1,), "eq", 1), TypeError, "must be a str"),
    ],
)
def test_a_field_test_that_cannot_be_evaluated_alike_everywhere_is_refused(
    arguments: tuple[Any, ...], error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as raised:
        FieldTest(*arguments)
    assert words in str(raised.value)


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ({"offset": -1}, ValueError, "offset must be >= 0"),
        ({"offset": True}, TypeError, "offset must be an int"),
        ({"limit": 0}, ValueError, "limit must be > 0"),
        ({"tests": ("f",)}, TypeError, "FieldTests"),
        ({"order": ("f",)}, TypeError, "FieldOrder"),
    ],
)
def test_a_bad_page_or_order_is_refused(
    arguments: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as raised:
        Selection(**arguments)
    assert words in str(raised.value)


def test_an_order_takes_a_path_and_a_direction() -> None:
    assert FieldOrder(["a", "b"]).path == ("a", "b")
    with pytest.raises(TypeError, match="descending must be a bool"):
        FieldOrder(("a",), descending=1)  # type: ignore[arg-type]


def test_negative_zero_is_zero() -> None:
    test = FieldTest(("f",), "eq", -0.0)
    assert str(test.operand) == "0.0"
    assert test.holds({"f": 0})
    assert test.holds({"f": 0.0})
