"""``dumps``, the compact JSON of every SQL row and event the storage writes: exactly what
``json.dumps`` writes with the same options, from one encoder shared by every call."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nenjim.infrastructure.storage.sql.dialect import dumps

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


def _reference(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@given(JSON_VALUES)
def test_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    assert dumps(value) == _reference(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_dumps_refuses_what_json_refuses_and_the_next_call_is_unharmed(bad: float) -> None:
    nested = {"a": [1, {"b": bad}]}
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps(nested)
    again = {"a": [1, {"b": 2.5}]}
    assert dumps(again) == '{"a":[1,{"b":2.5}]}'


def test_dumps_from_many_threads_at_once() -> None:
    values = [{"thread": n, "items": list(range(n)), "text": "é" * n} for n in range(16)]
    found: dict[int, list[str]] = {}

    def encode(n: int) -> None:
        found[n] = [dumps(values[n]) for _ in range(500)]

    threads = [threading.Thread(target=encode, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found[n] == [_reference(values[n])] * 500 for n in range(16))
