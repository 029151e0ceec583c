"""A search filter, read once into a function of the value: the conditions it keeps.

The scenarios of ``test_store.py`` check the filter through searches on every
store; these check the corners a search's data rarely reaches.
"""

from __future__ import annotations

from typing import Any

import pytest

from nenjim.infrastructure.langgraph.store.matching import matcher


class _Text(str):
    """A ``str`` subclass: no JSON value, so equal to no stored string."""


@pytest.mark.parametrize(
    ("wanted", "value", "expected"),
    [
        ({}, {}, True),
        (None, {"a": 1}, True),
        ({"a": "x"}, {"a": "x"}, True),
        ({"a": "x"}, {"a": "y"}, False),
        ({"a": "x"}, {}, False),
        ({"a": _Text("x")}, {"a": "x"}, False),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2}]}, True),
        ({"a": {"$eq": {"b": 2}}}, {"a": {"b": 2}}, True),
        ({"a": {"$ne": 1}}, {"a": 2}, True),
        ({"a": {"$ne": 1}}, {}, False),
        ({"a": {}}, {"a": None}, True),
        ({"a": {}}, {}, False),
        ({"a": {"$gte": 50}}, {"a": 50}, True),
        ({"a": {"$gte": 50}}, {"a": 49.5}, False),
        ({"a": {"$gt": 5}}, {"a": 10}, True),
        ({"a": {"$gt": 5}}, {"a": True}, False),
        ({"a": {"$gt": 5}}, {"a": "6"}, False),
        ({"a": {"$lt": "b"}}, {"a": "a"}, True),
        ({"a": {"$lte": "b"}}, {"a": "c"}, False),
        ({"a": {"$gt": 1, "$lt": 3}}, {"a": 2}, True),
        ({"a": {"$gt": 1, "$lt": 3}}, {"a": 3}, False),
        ({"a": "x", "b": {"$gte": 1}}, {"a": "x", "b": 0}, False),
    ],
)
def test_a_value_meets_the_filter(wanted: Any, value: dict[str, Any], expected: bool) -> None:
    assert matcher(wanted)(value) is expected


def test_an_unknown_operator_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Unsupported operator: \$in"):
        matcher({"a": {"$in": [1]}})
