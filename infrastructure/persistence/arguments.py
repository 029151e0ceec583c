"""Argument checks the repositories run before they touch storage.

Each raises ``TypeError`` (wrong type) or ``ValueError`` (bad value) naming
the argument. They run before the repository's atomic step, so a bad call
leaves the caller's transaction usable. The rules are the storage layer's:
an id is a key (non-empty text without NUL, valid UTF-8, at most 512 bytes),
a revision, position or canonicalization version is an ``int`` from 0 to
2**63 - 1, never a ``bool``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from nenjim.infrastructure import storage
from nenjim.infrastructure.storage.scalars import validate_key, validate_limit, validate_revision

_CONTENT_ID = re.compile(r"sha256:[0-9a-f]{64}")


def key(value: Any, what: str) -> str:
    """An id used as a storage key."""
    return validate_key(value, what)


def optional_key(value: Any, what: str) -> str | None:
    """``None`` or an id (a cursor, an optional anchor)."""
    return None if value is None else validate_key(value, what)


def revision(value: Any, what: str) -> int:
    """A revision or position."""
    return validate_revision(value, what)


def next_revision(value: Any, what: str) -> int:
    """An expected revision that still has a next one."""
    validate_revision(revision(value, what) + 1, f"{what} + 1")
    return int(value)


def optional_revision(value: Any, what: str) -> int | None:
    """``None`` (nothing stored yet) or an expected revision that has a next one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int or None, got {type(value).__name__}")
    return next_revision(value, what)


def page_limit(value: Any, what: str = "limit") -> int:
    """A page size: an ``int`` from 1 to 2**63 - 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    result = validate_limit(value, what)
    assert result is not None
    return result


def optional_page_limit(value: Any) -> int | None:
    """``None`` (no limit), 0 (an empty page) or a page size."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return 0
    return validate_limit(value)


def seconds(value: Any, what: str) -> float:
    """A duration: an ``int`` or ``float`` of seconds, at least 0 (never a ``bool`` or NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number of seconds, got {type(value).__name__}")
    if not value >= 0:  # NaN compares false to everything
        raise ValueError(f"{what} must be at least 0 seconds, got {value}")
    return float(value)


def canonicalization_version(value: Any) -> int:
    """A content's canonicalization version: an ``int`` from 0 (raw bytes) to 2**63 - 1."""
    return validate_revision(value, "canonicalization_version")


def content_id(value: Any) -> str:
    """A content id: ``sha256:`` and 64 lowercase hex digits."""
    if not isinstance(value, str):
        raise TypeError(f"content id must be a str, got {type(value).__name__}")
    if not _CONTENT_ID.fullmatch(value):
        raise ValueError(f"content id must be 'sha256:' and 64 lowercase hex digits, got {value!r}")
    return value


def batch(value: Any, what: str) -> Sequence[Any]:
    """A list or tuple (a batch has an order; sets and generators do not)."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{what} must be a list or tuple, got {type(value).__name__}")
    return tuple(value)


def attributes(
    resource: storage.Resource, values: Mapping[str, Any]
) -> Mapping[str, str | int | bool | None]:
    """Attribute values the resource accepts (as its handles would check them)."""
    return resource.validate_attributes(values)
