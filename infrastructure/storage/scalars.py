"""Validation of the SPI's scalars: keys, revisions, limits and attribute values.

Every check runs before any physical work, so a bad argument never fails a
transaction scope.
"""

from __future__ import annotations

from typing import Any

ATTRIBUTE_TYPES = frozenset(
    {"string", "integer", "boolean", "nullable_string", "nullable_integer", "nullable_boolean"}
)


def validate_key(value: Any, what: str = "key") -> str:
    """A non-empty ``str`` without NUL that encodes as UTF-8."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    if "\0" in value:
        raise ValueError(f"{what} must not contain NUL")
    _utf8(value, what)
    return value


def validate_revision(value: Any, what: str = "revision") -> int:
    """An ``int`` (never a ``bool``) that is at least 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return value


def validate_limit(value: Any) -> int | None:
    """``None`` (no limit) or an ``int`` above 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"limit must be an int or None, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"limit must be > 0, got {value}")
    return value


def validate_value(kind: str, value: Any, what: str) -> str | int | bool | None:
    """A value of an attribute ``kind`` (one of :data:`ATTRIBUTE_TYPES`)."""
    if value is None:
        if kind.startswith("nullable_"):
            return None
        raise ValueError(f"{what} must not be None ({kind})")
    base = kind.removeprefix("nullable_")
    if base == "string":
        if not isinstance(value, str):
            raise TypeError(f"{what} must be a str, got {type(value).__name__}")
        if "\0" in value:
            raise ValueError(f"{what} must not contain NUL")
        _utf8(value, what)
        return value
    if base == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{what} must be an int, got {type(value).__name__}")
        return value
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__}")
    return value


def _utf8(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} must be valid UTF-8 (lone surrogate)") from None
