"""Which items a search returns and which namespaces a listing names, in what order.

The semantics are those LangGraph's SQLite and PostgreSQL stores agree on;
where they differ, the choice made here is listed in ``docs/langgraph.md``.
This module imports no LangGraph package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})

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


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` meets every condition of ``wanted``.

    A key names a top-level field of the value. A plain condition is JSON
    equality; a mapping is operators (as in both SQL stores: not an object to
    compare), each applied. A value without the field
    meets no condition (``$ne`` included), as in both SQL stores.
    """
    for key, condition in (wanted or {}).items():
        found = value.get(key, _MISSING)
        if found is _MISSING:
            return False
        if isinstance(condition, Mapping):
            if not all(_apply(found, op, operand) for op, operand in condition.items()):
                return False
        elif not json_equal(found, condition):
            return False
    return True


def _apply(found: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return json_equal(found, operand)
    if operator == "$ne":
        return not json_equal(found, operand)
    order = _compare(found, operand)
    if order is None:
        return False
    if operator == "$gt":
        return order > 0
    if operator == "$gte":
        return order >= 0
    if operator == "$lt":
        return order < 0
    if operator == "$lte":
        return order <= 0
    raise ValueError(f"Unsupported operator: {operator}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(found: Any, operand: Any) -> int | None:
    """-1, 0 or 1 for two numbers or two strings (by code point); ``None`` otherwise."""
    if _number(found) and _number(operand):
        return int(found > operand) - int(found < operand)
    if isinstance(found, str) and isinstance(operand, str):
        return (found > operand) - (found < operand)
    return None


def json_equal(stored: Any, wanted: Any) -> bool:
    """Equality of JSON values: booleans are not numbers, ``1`` equals ``1.0``, tuples are
    lists, objects are equal member by member."""
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if _number(stored) and _number(wanted):
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
