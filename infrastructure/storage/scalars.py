"""Validation of the SPI's scalars: keys, names, revisions, limits and attribute values.

Every check runs before any physical work, so a bad argument never fails a
transaction scope, and every backend refuses exactly the same values:

- integers (revisions, positions, heads, limits, integer attributes) fit a
  signed 64-bit integer, what SQLite and PostgreSQL store;
- text (keys, names, attribute values) is a ``str`` without NUL that
  encodes as UTF-8 (no lone surrogates);
- a key (record key, stream name, entry id, blob key, resource id, cursor)
  takes at most :data:`MAX_KEY_BYTES` bytes of UTF-8, and a string value an
  index or unique constraint covers at most :data:`MAX_INDEXED_TEXT_BYTES`,
  so every index entry fits PostgreSQL's B-tree limit (about 2.7 KB).
"""

from __future__ import annotations

import re
from typing import Any

MIN_INTEGER = -(2**63)
MAX_INTEGER = 2**63 - 1
"""Every stored integer is a signed 64-bit integer."""

MAX_KEY_BYTES = 512
"""The longest key, in bytes of UTF-8."""

MAX_INDEXED_TEXT_BYTES = 512
"""The longest string value of an indexed or constrained attribute, in bytes of UTF-8."""

ATTRIBUTE_TYPES = frozenset(
    {"string", "integer", "boolean", "nullable_string", "nullable_integer", "nullable_boolean"}
)


def validate_key(value: Any, what: str = "key") -> str:
    """A non-empty ``str`` without NUL, valid UTF-8 of at most :data:`MAX_KEY_BYTES` bytes,
    as a plain ``str``."""
    # The checks of validate_name, inline and with one encoding: every entry id of an
    # append and every key of a write comes through here. An ASCII text is as many bytes
    # of UTF-8 as it has characters, and is valid UTF-8: no encoding needed.
    if (
        value.__class__ is str
        and value.isascii()
        and 0 < len(value) <= MAX_KEY_BYTES
        and "\0" not in value
    ):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if "\0" in value:
        raise ValueError(f"{what} must not contain NUL")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{what} must be valid UTF-8 (lone surrogate)") from None
    if not size:
        raise ValueError(f"{what} must not be empty")
    if size > MAX_KEY_BYTES:
        raise ValueError(f"{what} takes {size} bytes of UTF-8; the limit is {MAX_KEY_BYTES}")
    # A subclass (a str-valued Enum) becomes the text it holds: formatted, it may not be.
    return value if value.__class__ is str else str.__str__(value)


def key_prefix_end(prefix: str) -> str | None:
    """The least text above every text that starts with ``prefix``, in code point order
    (UTF-8 byte order): ``prefix`` with its last character raised by one, after the
    characters that cannot be raised (U+10FFFF) are dropped; ``None`` when none can be.
    A prefix scan is then the key range ``[prefix, end)``, which an index of keys serves."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    last = ord(stripped[-1]) + 1
    if last == 0xD800:  # surrogates are not text: the next character is U+E000
        last = 0xE000
    return stripped[:-1] + chr(last)


def validate_name(value: Any, what: str) -> str:
    """A non-empty ``str`` without NUL that encodes as UTF-8 (a declared name)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return validate_text(value, what)


_ESCAPED_IN_JSON = re.compile(r'["\\\x00-\x1f]')
"""What JSON text writes escaped: ``"``, ``\\`` and the control characters U+0000-U+001F."""


def validate_attribute_name(value: Any, what: str) -> str:
    """A declared name (:func:`validate_name`) that JSON text writes as itself.

    A record's attributes are stored as a JSON object, and a SQL backend reads
    one out by its name in the stored text (SQLite's JSON paths cannot name a
    key holding ``"``, nor match an escaped one as the same text on every
    version): so every backend refuses such a name when it is declared.
    """
    name = validate_name(value, what)
    found = _ESCAPED_IN_JSON.search(name)
    if found is not None:
        raise ValueError(
            f"{what} {name!r} holds {found.group()!r}: an attribute name may not hold '\"', "
            "'\\' or a control character (U+0000 to U+001F), which JSON writes escaped"
        )
    return name


def validate_text(value: str, what: str) -> str:
    """``value`` if it has no NUL and encodes as UTF-8 (no lone surrogates)."""
    if "\0" in value:
        raise ValueError(f"{what} must not contain NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} must be valid UTF-8 (lone surrogate)") from None
    return value


def validate_integer(value: Any, what: str) -> int:
    """An ``int`` (never a ``bool``) that fits a signed 64-bit integer, as a plain ``int``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if not MIN_INTEGER <= value <= MAX_INTEGER:
        raise ValueError(f"{what} {value} does not fit a signed 64-bit integer")
    # A subclass (an IntEnum) becomes the number it stands for, as every backend reads it.
    return value if value.__class__ is int else int.__int__(value)


def validate_revision(value: Any, what: str = "revision") -> int:
    """An ``int`` (never a ``bool``) from 0 to :data:`MAX_INTEGER`."""
    number = validate_integer(value, what)
    if number < 0:
        raise ValueError(f"{what} must be >= 0, got {number}")
    return number


def validate_limit(value: Any, what: str = "limit") -> int | None:
    """``None`` (no limit) or an ``int`` from 1 to :data:`MAX_INTEGER`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int or None, got {type(value).__name__}")
    number = validate_integer(value, what)
    if number <= 0:
        raise ValueError(f"{what} must be > 0, got {number}")
    return number


def validate_value(kind: str, value: Any, what: str) -> str | int | bool | None:
    """A value of an attribute ``kind`` (one of :data:`ATTRIBUTE_TYPES`), as a plain
    ``str``, ``int``, ``bool`` or ``None``."""
    if value is None:
        if kind.startswith("nullable_"):
            return None
        raise ValueError(f"{what} must not be None ({kind})")
    base = kind.removeprefix("nullable_")
    if base == "string":
        if not isinstance(value, str):
            raise TypeError(f"{what} must be a str, got {type(value).__name__}")
        # A subclass becomes the text it holds, as every backend reads it.
        return validate_text(value if value.__class__ is str else str.__str__(value), what)
    if base == "integer":
        return validate_integer(value, what)
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__}")
    return value
