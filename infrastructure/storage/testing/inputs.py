"""Inputs the storage contracts share: arguments every handle refuses, and sample rows.

Argument errors are Python's: a value of the wrong type raises ``TypeError``
(``bool`` is never an ``int``), a well-typed but bad value raises
``ValueError``.
"""

from __future__ import annotations

from typing import Any

BAD_KEYS: tuple[tuple[Any, type[Exception]], ...] = (
    ("", ValueError),
    ("\0", ValueError),
    ("a\0b", ValueError),
    ("\ud800", ValueError),  # a lone surrogate is not valid UTF-8
    (b"key", TypeError),
    (1, TypeError),
    (None, TypeError),
)
"""Keys every handle refuses (Ruby also refused symbols: any non-str here)."""

BAD_REVISIONS: tuple[tuple[Any, type[Exception]], ...] = (
    (-1, ValueError),
    (True, TypeError),
    (False, TypeError),
    (1.0, TypeError),
    ("1", TypeError),
    (None, TypeError),
)

BAD_LIMITS: tuple[tuple[Any, type[Exception]], ...] = (
    (0, ValueError),
    (-1, ValueError),
    (True, TypeError),
    (1.5, TypeError),
    ("1", TypeError),
)


def inventory_item(code: str | None, **overrides: Any) -> dict[str, Any]:
    """The attributes of an ``inventory.items`` row with ``code``, changed by ``overrides``."""
    attributes: dict[str, Any] = {
        "code": code,
        "label": f"item {code}",
        "quantity": 3,
        "reserved": None,
        "available": True,
        "flagged": None,
    }
    attributes.update(overrides)
    return attributes


def loose(value: object) -> Any:
    """``value`` typed ``Any``: the declarations below are wrong on purpose."""
    return value
