"""``immutable``: what makes a frozen dataclass a value that nothing can change.

Applied over ``@dataclass(frozen=True, slots=True)`` (or a slots class whose
own code sets its slots through ``object.__setattr__``), it gives the class:

- an assignment and a deletion that always raise ``FrozenInstanceError``,
  for a field or any other name (on Python 3.11 the frozen dataclass of a
  slots class answers a name that is no field with a confusing
  ``TypeError`` from ``super()``);
- a copy, shallow or deep, that is the value itself: nothing in it can
  change, so sharing it is safe (a deep copy of its read-only mappings
  would fail);
- for a dataclass, a pickle made of its fields in plain form (read-only
  mappings as dicts), rebuilt through the constructor and so checked again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

_T = TypeVar("_T")


def immutable(cls: type[_T]) -> type[_T]:
    """``cls`` with assignment, deletion, copies and pickling as above."""
    cls.__setattr__ = _refuse_assignment  # type: ignore[method-assign]
    cls.__delattr__ = _refuse_deletion  # type: ignore[method-assign]
    cls.__copy__ = _itself  # type: ignore[attr-defined]
    cls.__deepcopy__ = _itself  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(cls):
        cls.__reduce__ = _reduced  # type: ignore[method-assign]
    return cls


def _refuse_assignment(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(
        f"{type(self).__name__} is immutable: cannot assign to {name!r}"
    )


def _refuse_deletion(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(
        f"{type(self).__name__} is immutable: cannot delete {name!r}"
    )


def _itself(self: _T, *memo: object) -> _T:
    return self


def _reduced(self: Any) -> tuple[Any, ...]:
    fields = {field.name: _plain(getattr(self, field.name)) for field in dataclasses.fields(self)}
    return (_rebuilt, (type(self), fields))


def _rebuilt(cls: type[_T], fields: dict[str, Any]) -> _T:
    return cls(**fields)


def _plain(value: Any) -> Any:
    """A read-only mapping as a dict, all the way down (values pickle themselves)."""
    if isinstance(value, Mapping):
        return {key: _plain(child) for key, child in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(child) for child in value)
    if isinstance(value, list):
        return [_plain(child) for child in value]
    return value
