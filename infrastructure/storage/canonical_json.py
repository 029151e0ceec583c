"""Canonical JSON v1: JSON-native values, JCS member order and number form, no whitespace.

This project's profile adds two limits that every backend relies on: no
string (member names included) contains NUL, and values nest at most
:data:`MAX_DEPTH` arrays and objects deep, so writing and parsing never run
out of stack.

Numbers: integers within ±(2^53-1) and finite floats other than ``-0.0``.
JCS writes a whole float below 1e21 in plain digits (``1e16`` is
``10000000000000000``), so the text does not say whether a number was an
``int`` or a ``float``; since no integer past ±(2^53-1) is ever written, such
a literal is the float it is the canonical form of, and :func:`loads` reads
it as that float. A number reads back equal: as an ``int`` when its text has
no fraction or exponent and it lies within ±(2^53-1), otherwise as a
``float``.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

VERSION = 1
MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 100
"""The deepest nesting of arrays and objects (the outermost counts 1)."""


def dumps(value: Any) -> str:
    """The canonical text of ``value``; ``ValueError``/``TypeError`` if it is not JSON-native."""
    if _plain(value):
        return _PLAIN_ENCODER.encode(value)
    parts: list[str] = []
    _write(value, parts, "$", 0)
    return "".join(parts)


# For a plain value (see _plain) the standard library's C encoder writes the canonical
# text: it writes ints with int.__repr__ and floats with float.__repr__ (the JCS form
# for the floats _plain lets through), and with ASCII member names its code-point key
# order is JCS's UTF-16 order. Strings are written as _write writes them (json.dumps,
# ensure_ascii=False).
_PLAIN_ENCODER = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":")
)


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON the C encoder writes canonically: only dicts with ASCII
    ``str`` keys, lists, tuples, ``str`` without NUL or lone surrogates, ``None``,
    ``bool``, ``int`` within ±(2^53-1) and ``float`` that ``repr`` writes in plain
    decimals with a fraction, nested at most :data:`MAX_DEPTH` deep.

    Anything else (a whole or exponent float, a non-ASCII member name, a value to
    refuse) goes the long way, which writes it or names the problem.
    """
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and not _utf8(item):
                return False
            if "\0" in item:
                return False
        elif kind is dict:
            if depth > MAX_DEPTH:
                return False
            for key, child in item.items():
                if type(key) is not str or not key.isascii() or "\0" in key:
                    return False
                pending.append((child, depth + 1))
        elif kind is list or kind is tuple:
            if depth > MAX_DEPTH:
                return False
            pending.extend((child, depth + 1) for child in item)
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return False
        elif kind is float:
            # repr's plain decimal form (no exponent, not whole, finite) is JCS's too:
            # both write the shortest digits that read back
            text = float.__repr__(item)
            if "e" in text or "n" in text or text.endswith(".0"):
                return False
        elif item is not None and kind is not bool:
            return False  # a subclass, or no JSON at all
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loads(text: str | bytes) -> Any:
    """A JSON parse; ``ValueError`` for text that is not JSON (``NaN`` included), a number
    past the largest float, or nesting deeper than :data:`MAX_DEPTH`.

    An integer literal past ±(2^53-1) is read as a ``float`` (see the module notes)."""
    try:
        if isinstance(text, str):
            value = _DECODER.decode(text)  # json.loads, without a decoder made per call
        else:
            value = json.loads(
                text, parse_constant=_refuse_constant, parse_int=_integer, parse_float=_float
            )
    except RecursionError:
        raise ValueError(f"JSON nests deeper than {MAX_DEPTH}") from None
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"JSON nests deeper than {MAX_DEPTH}")
    return value


def loads_canonical(text: str) -> Any:
    """:func:`loads` of text known to be canonical (written by :func:`dumps`, or parsed and
    found equal to what :func:`dumps` writes of it): such text nests within
    :data:`MAX_DEPTH`, so the parsed value is not walked again to prove it (for a small
    payload that walk costs nearly as much as the parse)."""
    return _DECODER.decode(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_LONGEST_SAFE = len(str(-MAX_SAFE_INTEGER))


def _integer(literal: str) -> int | float:
    # No integer past ±(2^53-1) is ever written: such a literal is a whole float.
    if len(literal) <= _LONGEST_SAFE:
        number = int(literal)
        if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            return number
    return _float(literal)


def _float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        shown = literal if len(literal) <= 30 else literal[:30] + "..."
        raise ValueError(f"{shown} is not a finite number")
    return number


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_integer, parse_float=_float)


def whole_floats(value: Any) -> Any:
    """``value``, JSON that a plain JSON parser read from canonical text, with each integer
    past ±(2^53-1) that is the canonical form of a float replaced by that float.

    Such a parser reads ``10000000000000000`` (how ``1e16`` is written) as an
    ``int``, where :func:`loads` reads the float. Any other integer past
    2^53-1 is left as it is, for :func:`dumps` to refuse; so is anything nested
    deeper than :data:`MAX_DEPTH`.
    """
    return _whole_floats(value, 0)


def _whole_floats(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {key: _whole_floats(child, depth + 1) for key, child in value.items()}
    if isinstance(value, list):
        return [_whole_floats(child, depth + 1) for child in value]
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    ):
        try:
            number = float(value)
        except OverflowError:
            return value
        if _number(number, "$") == int.__repr__(value):
            return number
    return value


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in parsed JSON, counted no further than one past
    :data:`MAX_DEPTH` (level by level: no recursion limit, one pass over each level)."""
    level, current = 0, [value]
    while level <= MAX_DEPTH:
        below: list[Any] = []
        found = False
        for item in current:
            if type(item) is dict:  # a parser makes plain dicts and lists, no subclass
                below.extend(item.values())
                found = True
            elif type(item) is list:
                below.extend(item)
                found = True
        if not found:
            return level
        level, current = level + 1, below
    return level


def _write(value: Any, out: list[str], path: str, depth: int) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise ValueError(f"{path}: integer {value} exceeds 2^53-1; encode it as a string")
        # int.__repr__: a subclass (an IntEnum) may print as something else than its digits.
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_number(value, path))
    elif isinstance(value, str):
        _check_text(value, path)
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, list | tuple):
        _check_depth(depth + 1, path)
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, f"{path}[{index}]", depth + 1)
        out.append("]")
    elif isinstance(value, dict):
        _check_depth(depth + 1, path)
        _write_object(value, out, path, depth + 1)
    else:
        raise TypeError(f"{path}: {type(value).__name__} is not a JSON-native value")


def _check_depth(depth: int, path: str) -> None:
    if depth > MAX_DEPTH:
        where = path if len(path) <= 60 else path[:60] + "..."
        raise ValueError(f"{where}: arrays and objects nest deeper than {MAX_DEPTH}")


def _write_object(value: dict[Any, Any], out: list[str], path: str, depth: int) -> None:
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{path}: object keys must be str, got {type(key).__name__}")
        _check_text(key, path)
    out.append("{")
    # JCS orders members by their UTF-16 code units.
    for index, key in enumerate(sorted(value, key=lambda k: k.encode("utf-16-be"))):
        if index:
            out.append(",")
        out.append(json.dumps(key, ensure_ascii=False))
        out.append(":")
        _write(value[key], out, f"{path}.{key}", depth)
    out.append("}")


def _check_text(text: str, path: str) -> None:
    if "\0" in text:
        raise ValueError(f"{path}: string contains NUL")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{path}: string is not valid UTF-8 (lone surrogate)") from None


def _number(value: float, path: str) -> str:
    """ECMAScript Number-to-String, the form JCS prescribes."""
    if not math.isfinite(value):
        raise ValueError(f"{path}: {value} is not a finite number")
    if value == 0:
        if math.copysign(1.0, value) < 0:
            raise ValueError(f"{path}: -0.0 has no canonical form")
        return "0"
    sign = "-" if value < 0 else ""
    # float.__repr__: a subclass may print as something else than its shortest digits.
    digits_tuple, exponent = Decimal(float.__repr__(abs(float(value)))).as_tuple()[1:]
    digits = "".join(map(str, digits_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    # n: position of the decimal point relative to the digits (ES spec notation).
    n = exponent + len("".join(map(str, digits_tuple)))
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
