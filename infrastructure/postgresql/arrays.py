"""Array arguments of the PostgreSQL log's statements, sent as scalars when short.

psycopg adapts a list parameter in Python, element by element, at about 35 µs
for a one-element list against 2 µs for the same values as scalars. A
statement whose arrays are short therefore takes each element as a parameter
of its own and builds the array in the statement (``ARRAY[%s, %s]::bigint[]``);
its text depends on the lengths, so each shape is a prepared statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SCALAR_ITEMS = 8
"""Arrays of at most this many elements are sent as scalars."""


def as_scalars(lengths: Sequence[int]) -> bool:
    """Whether arrays of these lengths go as scalars."""
    return max(lengths, default=0) <= SCALAR_ITEMS


def array_argument(items: int, kind: str, scalars: bool) -> str:
    """The placeholder text of one array of ``items`` values of SQL type ``kind``."""
    if scalars:
        return f"ARRAY[{', '.join(['%s'] * items)}]::{kind}[]"
    return f"%s::{kind}[]"


def arguments(columns: Sequence[list[Any]], scalars: bool) -> list[Any]:
    """The parameters for ``columns`` sent as placed by :func:`array_argument`."""
    if scalars:
        return [value for column in columns for value in column]
    return list(columns)
