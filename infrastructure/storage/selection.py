"""A selection of records by their payloads: field tests, an order, a page.

``Records.select`` narrows an index scan by tests of the payload's fields and
returns one page of it in a field's order, so that a database can answer with
the page alone rather than every row the index holds. The meaning of each test
is :meth:`FieldTest.holds`, the same on every driver: a driver that runs
selections in its database must give exactly the rows this module's Python
gives (the conformance kit compares them).

The tests are a closed set of comparisons with one JSON scalar, the ones every
supported database evaluates exactly:

- a field is the value at ``path`` in the payload: a member of an object at
  each step; an absent member, or a step into something that is not an object,
  finds nothing, and a test of nothing fails (``ne`` included);
- ``eq`` / ``ne``: JSON equality with the operand (``true`` is not ``1``;
  ``1`` equals ``1.0``; ``null`` equals only ``null``);
- ``gt`` / ``ge`` / ``lt`` / ``le``: both numbers, compared as numbers, or both
  strings, compared by code point; any other pair fails;
- ``present``: the field is there (``null`` included).

Numbers in tests lie within ±2**53 (where every database compares exactly);
field names are non-empty and hold no ``"``, ``\\`` or control character (a
path every database's JSON path syntax spells the same).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.entries import RecordEntry
from nenjim.infrastructure.storage.scalars import validate_integer, validate_limit

OPERATORS: Final = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "present"})
"""The operators of a :class:`FieldTest`."""

ORDERED: Final = frozenset({"gt", "ge", "lt", "le"})
"""The operators that compare by order (numbers, or strings by code point)."""

MAX_EXACT_NUMBER: Final = 2**53
"""A number in a test lies strictly within ± this."""

_MISSING: Final = object()
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNSELECTABLE_NAME: Final = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')

Operand = str | int | float | bool | None


def selectable_name(name: str) -> bool:
    """Whether ``name`` may name a payload field in a selection."""
    return bool(name) and _UNSELECTABLE_NAME.search(name) is None


def validate_field_name(name: Any) -> str:
    """``name`` if it may name a payload field in a selection; ``ValueError`` otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"a field name must be a str, got {type(name).__name__}")
    if not selectable_name(name):
        raise ValueError(
            f"field name {name!r} cannot be selected on: it must be non-empty, valid UTF-8, "
            'and hold no ", \\ or control character'
        )
    return name


def selectable_operand(operator: str, operand: Any) -> bool:
    """Whether ``operand`` may stand in a :class:`FieldTest` of ``operator``."""
    if operator == "present":
        return operand is None
    if operand is None or isinstance(operand, bool):
        return operator in ("eq", "ne")
    if isinstance(operand, str):
        return _SURROGATE.search(operand) is None
    if isinstance(operand, int | float):
        return math.isfinite(operand) and -MAX_EXACT_NUMBER < operand < MAX_EXACT_NUMBER
    return False


def _path(path: Any) -> tuple[str, ...]:
    if isinstance(path, str) or not isinstance(path, Sequence):
        raise TypeError(f"a field path must be a sequence of names, got {type(path).__name__}")
    if not path:
        raise ValueError("a field path names at least one field")
    return tuple(validate_field_name(name) for name in path)


def field_value(payload: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``payload``, or the module's "nothing" marker."""
    found = payload
    for name in path:
        if not isinstance(found, Mapping):
            return _MISSING
        found = found.get(name, _MISSING)
        if found is _MISSING:
            return _MISSING
    return found


@immutable
@dataclass(frozen=True, slots=True)
class FieldTest:
    """One test of the payload field at ``path``: ``operator`` against ``operand``."""

    path: tuple[str, ...]
    operator: str
    operand: Operand = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", _path(self.path))
        if self.operator not in OPERATORS:
            raise ValueError(
                f"unknown field operator {self.operator!r}: use one of {sorted(OPERATORS)}"
            )
        if not selectable_operand(self.operator, self.operand):
            raise ValueError(
                f"field test {self.operator} cannot take {self.operand!r}: "
                + _OPERAND_RULES.get(self.operator, "a JSON scalar within ±2**53")
            )
        if self.operand == 0 and isinstance(self.operand, float):
            # -0.0 is 0 in JSON (and has no canonical text): one zero for every driver
            object.__setattr__(self, "operand", 0.0)

    def holds(self, payload: Any) -> bool:
        """Whether ``payload`` passes this test (the meaning every driver gives it)."""
        found = field_value(payload, self.path)
        if found is _MISSING:
            return False
        operator = self.operator
        if operator == "present":
            return True
        if operator == "eq":
            return json_scalar_equal(found, self.operand)
        if operator == "ne":
            return not json_scalar_equal(found, self.operand)
        order = json_order(found, self.operand)
        if order is None:
            return False
        if operator == "gt":
            return order > 0
        if operator == "ge":
            return order >= 0
        if operator == "lt":
            return order < 0
        return order <= 0


_OPERAND_RULES: Final = {
    "present": "it takes no operand",
    "gt": "an ordered test takes a number within ±2**53 or a string",
    "ge": "an ordered test takes a number within ±2**53 or a string",
    "lt": "an ordered test takes a number within ±2**53 or a string",
    "le": "an ordered test takes a number within ±2**53 or a string",
}


def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (``bool`` is not one)."""
    return isinstance(value, _PLAIN_NUMBERS) and not isinstance(value, bool)


_PLAIN_NUMBERS = (int, float)


def json_scalar_equal(found: Any, operand: Operand) -> bool:
    """JSON equality of a stored value and a scalar operand."""
    if operand is None:
        return found is None
    if isinstance(operand, bool) or isinstance(found, bool):
        return isinstance(found, bool) and isinstance(operand, bool) and found == operand
    if is_number(operand):
        return is_number(found) and bool(found == operand)
    return isinstance(found, str) and found == operand


def json_order(found: Any, operand: Any) -> int | None:
    """-1, 0 or 1 for two numbers or two strings (by code point); ``None`` otherwise."""
    if found.__class__ in _PLAIN_NUMBERS and operand.__class__ in _PLAIN_NUMBERS:
        return (found > operand) - (found < operand)  # the usual pair: no call to test it
    if is_number(found) and is_number(operand):
        return int(found > operand) - int(found < operand)
    if isinstance(found, str) and isinstance(operand, str):
        return (found > operand) - (found < operand)
    return None


@immutable
@dataclass(frozen=True, slots=True)
class FieldOrder:
    """Rows in the order of the string at ``path`` (by code point), ``descending`` or not;
    rows without a string there come after every row with one. Ties, and those rows, go
    by the key's UTF-8 bytes, ascending."""

    path: tuple[str, ...]
    descending: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", _path(self.path))
        if not isinstance(self.descending, bool):
            raise TypeError(f"descending must be a bool, got {type(self.descending).__name__}")


@immutable
@dataclass(frozen=True, slots=True)
class Selection:
    """What ``Records.select`` returns of an index scan: the rows passing every test, in
    ``order`` (by key without one), from ``offset``, at most ``limit`` of them."""

    tests: tuple[FieldTest, ...] = ()
    order: FieldOrder | None = None
    offset: int = 0
    limit: int | None = None

    def __post_init__(self) -> None:
        tests = tuple(self.tests)
        for test in tests:
            if not isinstance(test, FieldTest):
                raise TypeError(f"a selection's tests are FieldTests, got {test!r}")
        object.__setattr__(self, "tests", tests)
        if self.order is not None and not isinstance(self.order, FieldOrder):
            raise TypeError(f"a selection's order is a FieldOrder, got {self.order!r}")
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise TypeError(f"offset must be an int, got {type(self.offset).__name__}")
        if validate_integer(self.offset, "offset") < 0:
            raise ValueError(f"offset must be >= 0, got {self.offset}")
        validate_limit(self.limit)

    def apply(self, rows: Sequence[RecordEntry]) -> list[RecordEntry]:
        """The page of ``rows`` (ascending by key bytes) this selection gives: what a driver
        without a query language of its own returns."""
        kept = [row for row in rows if all(test.holds(row.record.payload) for test in self.tests)]
        if self.order is not None:
            kept = _ordered(kept, self.order)
        end = None if self.limit is None else self.offset + self.limit
        return kept[self.offset : end]


def _ordered(rows: list[RecordEntry], order: FieldOrder) -> list[RecordEntry]:
    with_text: list[tuple[str, RecordEntry]] = []
    without: list[RecordEntry] = []
    for row in rows:
        value = field_value(row.record.payload, order.path)
        if isinstance(value, str):
            with_text.append((value, row))
        else:
            without.append(row)
    # Stable sorts: equal strings keep the rows' key order, in either direction.
    with_text.sort(key=lambda pair: pair[0], reverse=order.descending)
    return [row for _, row in with_text] + without
