"""The JSON form of what the public APIs answer, to compare stores across code changes.

``plain`` turns a durable value (a frozen dataclass with read-only mappings,
tuples and aware datetimes), a query answer or a ``Revision`` into plain JSON
data: dataclasses become objects of their fields, mappings objects, tuples
and lists arrays, datetimes ISO-8601 text and bytes ``{"base64": ...}``. It
looks at field names and values only, never at where a class lives, so
the same stored data gives the same JSON before and after a module moves.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any


def plain(value: Any) -> Any:
    """``value`` as plain JSON data (see the module notes)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): plain(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [plain(child) for child in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"no plain JSON form for {type(value).__name__}")
