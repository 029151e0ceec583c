"""Conditional unique constraints, evaluated in Python (the in-memory driver's way)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from infrastructure.storage.entries import RecordEntry
from infrastructure.storage.resource import Resource


def find_unique_violation(
    resource: Resource, candidate: RecordEntry, others: Iterable[RecordEntry]
) -> str | None:
    """The name of the first constraint ``candidate`` breaks against ``others``, or ``None``.

    A candidate with a null constraint field, or outside the constraint's
    ``where``, is never in conflict (nulls are distinct, as in SQL).
    """
    others = list(others)
    for constraint in resource.unique:
        fields = constraint["fields"]
        where = constraint["where"]
        if any(candidate.attributes[f] is None for f in fields):
            continue
        if not _satisfies(candidate, where):
            continue
        for other in others:
            if _satisfies(other, where) and all(
                other.attributes[f] == candidate.attributes[f] for f in fields
            ):
                return str(constraint["name"])
    return None


def _satisfies(row: RecordEntry, where: Mapping[str, object]) -> bool:
    return all(
        row.attributes.get(name) == value and type(row.attributes.get(name)) is type(value)
        for name, value in where.items()
    )
