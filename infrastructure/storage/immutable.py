"""``immutable``: the one way the SPI's value classes refuse assignment and deletion."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import TypeVar

_C = TypeVar("_C", bound=type)


def _refuse_set(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"{type(self).__name__} is immutable: cannot set {name!r}")


def _refuse_delete(self: object, name: str) -> None:
    raise FrozenInstanceError(f"{type(self).__name__} is immutable: cannot delete {name!r}")


def immutable(cls: _C) -> _C:
    """Make every attribute assignment or deletion on ``cls``'s instances raise
    ``FrozenInstanceError`` (an ``AttributeError``) naming the class and the attribute.

    A frozen dataclass does so for its fields only: with ``slots=True``, Python 3.11
    answers a name that is not a field with a ``TypeError`` from ``super()``. The
    class's own code sets its slots through ``object.__setattr__`` or the slots'
    descriptors, which this does not reach.
    """
    # setattr: the dataclass's own methods are replaced, which a class body may not do.
    setattr(cls, "__setattr__", _refuse_set)  # noqa: B010
    setattr(cls, "__delattr__", _refuse_delete)  # noqa: B010
    return cls
