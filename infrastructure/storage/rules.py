"""Record rules every driver applies the same way: attribute equality, preconditions, uniqueness."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nenjim.infrastructure.storage.entries import RecordEntry
from nenjim.infrastructure.storage.errors import ConflictError
from nenjim.infrastructure.storage.resource import Resource


def attributes_match(attributes: Mapping[str, object], values: Mapping[str, object]) -> bool:
    """Whether ``attributes`` hold every value of ``values`` (``True`` never equals ``1``)."""
    # A loop, not a generator: every insert and replace asks, once per unique constraint.
    for name, value in values.items():
        held = attributes.get(name)
        if held != value or type(held) is not type(value):
            return False
    return True


def check_preconditions(
    resource: Resource,
    current: Mapping[str, object],
    entry: RecordEntry,
    expected_attributes: Mapping[str, object],
) -> None:
    """A replace keeps immutable attributes and finds the expected ones in the stored
    attributes ``current``; else a conflict."""
    changed = [
        name
        for name in resource.immutable_attributes
        if not attributes_match(current, {name: entry.attributes[name]})
    ]
    differing = [
        name
        for name, value in expected_attributes.items()
        if not attributes_match(current, {name: value})
    ]
    if changed or differing:
        raise ConflictError(
            f"attribute precondition failed: {resource.id}/{entry.key} "
            f"(immutable changed: {changed}, expected differs: {differing})"
        )


def find_unique_violation(
    resource: Resource, candidate: RecordEntry, others: Iterable[RecordEntry]
) -> str | None:
    """The name of the first constraint ``candidate`` breaks against ``others``, or ``None``.

    A candidate with a null constraint field, or outside the constraint's
    ``where``, is never in conflict (nulls are distinct, as in SQL).
    """
    if not resource.unique:
        return None
    # Read only for a constraint the candidate is under: a candidate outside
    # every ``where`` costs nothing per stored row.
    pool: list[RecordEntry] | None = None
    for constraint in resource.unique:
        fields = constraint["fields"]
        where = constraint["where"]
        if any(candidate.attributes[f] is None for f in fields):
            continue
        if not attributes_match(candidate.attributes, where):
            continue
        if pool is None:
            pool = list(others)
        for other in pool:
            if attributes_match(other.attributes, where) and all(
                other.attributes[f] == candidate.attributes[f] for f in fields
            ):
                return str(constraint["name"])
    return None
