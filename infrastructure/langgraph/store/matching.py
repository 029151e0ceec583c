"""Which items a search returns and which namespaces a listing names, in what order.

The semantics are those LangGraph's SQLite and PostgreSQL stores agree on;
where they differ, the choice made here is listed in ``docs/langgraph.md``.
This module imports no LangGraph package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nenjim.infrastructure.storage import FieldTest
from nenjim.infrastructure.storage.selection import (
    is_number,
    json_order,
    selectable_name,
    selectable_operand,
)

_MISSING = object()


def check_filter(wanted: Mapping[str, Any] | None) -> None:
    """``ValueError`` for an operator LangGraph's stores do not know (before any read)."""
    for key, condition in (wanted or {}).items():
        if not isinstance(key, str):
            raise ValueError(f"filter keys must be strings, got {key!r}")
        if isinstance(condition, Mapping):
            for operator in condition:
                if operator not in OPERATORS:
                    raise ValueError(f"Unsupported operator: {operator}")


def matcher(wanted: Mapping[str, Any] | None) -> Callable[[Mapping[str, Any]], bool]:
    """A function of a value: whether it meets every condition of ``wanted`` (a search asks
    it of every row, so the filter is read once, here, not once per row).

    A key names a top-level field of the value. A plain condition is JSON
    equality; a mapping is operators (as in both SQL stores: not an object to
    compare), each applied. A value without the field meets no condition
    (``$ne`` and an empty mapping of operators included), as in both SQL stores.
    ``ValueError`` for an operator :data:`OPERATORS` does not hold.
    """
    tests: list[tuple[str, Callable[[Any, Any], bool], Any]] = []
    for key, condition in (wanted or {}).items():
        if not isinstance(condition, Mapping):
            tests.append((key, json_equal, condition))
            continue
        if not condition:
            tests.append((key, _present, None))
        for operator, operand in condition.items():
            test = _OPERATOR_TESTS.get(operator)
            if test is None:
                raise ValueError(f"Unsupported operator: {operator}")
            tests.append((key, test, operand))

    def match(value: Mapping[str, Any]) -> bool:
        for key, test, operand in tests:
            found = value.get(key, _MISSING)
            if found is _MISSING or not test(found, operand):
                return False
        return True

    return match


def field_tests(wanted: Mapping[str, Any] | None) -> tuple[FieldTest, ...] | None:
    """``wanted`` (checked by :func:`check_filter`) as tests of a stored item's payload that
    the database evaluates, each meaning what :func:`matcher` gives it; ``None`` when a
    condition has no such test (an object or a list to compare, a number past ±2**53, a
    key no JSON path spells alike everywhere): the search then matches in Python."""
    tests: list[FieldTest] = []
    for key, condition in (wanted or {}).items():
        if not selectable_name(key):
            return None
        path = ("value", key)
        if not isinstance(condition, Mapping):
            conditions: list[tuple[str, Any]] = [("eq", condition)]
        elif not condition:
            conditions = [("present", None)]
        else:
            conditions = [(_FIELD_OPERATORS[name], operand) for name, operand in condition.items()]
        for operator, operand in conditions:
            if not selectable_operand(operator, operand):
                return None
            tests.append(FieldTest(path, operator, operand))
    return tuple(tests)


def _present(found: Any, operand: Any) -> bool:
    """An empty mapping of operators: the field is there, which is all it asks."""
    return True


def _not_equal(found: Any, operand: Any) -> bool:
    return not json_equal(found, operand)


def _greater(found: Any, operand: Any) -> bool:
    order = json_order(found, operand)
    return order is not None and order > 0


def _at_least(found: Any, operand: Any) -> bool:
    order = json_order(found, operand)
    return order is not None and order >= 0


def _less(found: Any, operand: Any) -> bool:
    order = json_order(found, operand)
    return order is not None and order < 0


def _at_most(found: Any, operand: Any) -> bool:
    order = json_order(found, operand)
    return order is not None and order <= 0


def json_equal(stored: Any, wanted: Any) -> bool:
    """Equality of JSON values: booleans are not numbers, ``1`` equals ``1.0``, tuples are
    lists, objects are equal member by member."""
    if stored.__class__ is str:  # the usual stored value, told apart at once
        return wanted.__class__ is str and stored == wanted
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if is_number(stored) and is_number(wanted):
        return bool(stored == wanted)
    if isinstance(stored, Mapping) and isinstance(wanted, Mapping):
        return stored.keys() == wanted.keys() and all(
            json_equal(stored[key], wanted[key]) for key in stored
        )
    if isinstance(stored, list | tuple) and isinstance(wanted, list | tuple):
        return len(stored) == len(wanted) and all(
            json_equal(a, b) for a, b in zip(stored, wanted, strict=True)
        )
    return type(stored) is type(wanted) and bool(stored == wanted)


_OPERATOR_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": json_equal,
    "$ne": _not_equal,
    "$gt": _greater,
    "$gte": _at_least,
    "$lt": _less,
    "$lte": _at_most,
}
OPERATORS = frozenset(_OPERATOR_TESTS)
"""The operators a filter may use."""

_FIELD_OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "ge", "$lt": "lt", "$lte": "le"}


def under(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    """Whether ``namespace`` is ``prefix`` or below it (label by label)."""
    return namespace[: len(prefix)] == prefix


def path_matches(namespace: tuple[str, ...], match_type: str, path: Sequence[str]) -> bool:
    """A list condition: ``path`` (``*`` is any one label) starts (``prefix``) or ends
    (``suffix``) ``namespace``; an empty path matches every namespace."""
    if not path:
        return True
    if len(path) > len(namespace):
        return False
    labels = namespace[: len(path)] if match_type == "prefix" else namespace[-len(path) :]
    return all(wanted in ("*", label) for wanted, label in zip(path, labels, strict=True))


def fixed_prefix(conditions: Iterable[tuple[str, Sequence[str]]]) -> tuple[str, ...]:
    """The longest prefix of labels (no wildcard) the prefix conditions require."""
    best: tuple[str, ...] = ()
    for match_type, path in conditions:
        if match_type != "prefix":
            continue
        fixed: list[str] = []
        for label in path:
            if label == "*":
                break
            fixed.append(label)
        if len(fixed) > len(best):
            best = tuple(fixed)
    return best


def namespace_order(namespace: tuple[str, ...]) -> bytes:
    """The order of a listing: the UTF-8 bytes of the labels joined by ``.``, as both SQL
    stores sort their text column."""
    return ".".join(namespace).encode("utf-8", "surrogatepass")
