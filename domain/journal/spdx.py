"""SPDX 2.3 license expressions: the grammar by hand, the identifier lists from a library.

``license-expression`` ships the SPDX license and exception lists (kept up to
date by its maintainers), but its parser raises ``AttributeError`` on a
dangling operator and rejects any ``LicenseRef-*`` it does not know. The
grammar is small, so it is parsed here and only the lists are borrowed.
"""

from __future__ import annotations

import re
from functools import cache

from license_expression import get_license_index

from domain.journal.errors import InvalidValueError

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([A-Za-z0-9.:+-]+))")
_LICENSE_REF = re.compile(r"(?:DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+")
_OPERATORS = {"AND", "OR", "WITH"}


@cache
def _identifiers() -> tuple[dict[str, str], dict[str, str]]:
    """Lower-cased SPDX license ids and exception ids to their official spelling."""
    licenses: dict[str, str] = {}
    exceptions: dict[str, str] = {}
    for entry in get_license_index():
        ids = [entry.get("spdx_license_key") or "", *entry.get("other_spdx_license_keys", [])]
        target = exceptions if entry.get("is_exception") else licenses
        for spdx_id in ids:
            if spdx_id and not spdx_id.startswith("LicenseRef-"):
                target[spdx_id.lower()] = spdx_id
    return licenses, exceptions


def validate_license_expression(expression: str) -> str:
    """Return ``expression`` if it is a valid SPDX 2.3 expression, else raise.

    SPDX ids match case-insensitively, operators must be upper case (lower
    case ``and``/``or``/``with`` are accepted by SPDX 2.3 too).
    """
    tokens = _tokenize(expression)
    position = _Parser(tokens, expression).parse()
    if position != len(tokens):
        raise _error(expression, f"unexpected {tokens[position]!r}")
    return expression


def _tokenize(expression: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    stripped = expression.rstrip()
    while pos < len(stripped):
        match = _TOKEN.match(stripped, pos)
        if match is None:
            raise _error(expression, f"unexpected character {stripped[pos:].lstrip()[0]!r}")
        tokens.append(match.group(match.lastindex or 0))
        pos = match.end()
    if not tokens:
        raise _error(expression, "an expression, got nothing")
    return tokens


def _error(expression: str, problem: str) -> InvalidValueError:
    return InvalidValueError(f"invalid SPDX license expression {expression!r}: {problem}")


class _Parser:
    """Recursive descent: or-expr := and-expr (OR and-expr)*; and-expr := atom (AND atom)*."""

    def __init__(self, tokens: list[str], expression: str) -> None:
        self.tokens = tokens
        self.expression = expression
        self.pos = 0

    def parse(self) -> int:
        self._or()
        return self.pos

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _operator(self, name: str) -> bool:
        token = self._peek()
        if token is not None and token.upper() == name and token in (name, name.lower()):
            self.pos += 1
            return True
        return False

    def _or(self) -> None:
        self._and()
        while self._operator("OR"):
            self._and()

    def _and(self) -> None:
        self._atom()
        while self._operator("AND"):
            self._atom()

    def _atom(self) -> None:
        token = self._peek()
        if token is None:
            raise _error(self.expression, "a license after the operator, got the end")
        if token == "(":
            self.pos += 1
            self._or()
            if self._peek() != ")":
                raise _error(self.expression, "a closing ')'")
            self.pos += 1
            return
        self._license(token)
        self.pos += 1
        if self._operator("WITH"):
            exception = self._peek()
            if exception is None or exception.lower() not in _identifiers()[1]:
                raise _error(
                    self.expression, f"an SPDX license exception after WITH, got {exception!r}"
                )
            self.pos += 1

    def _license(self, token: str) -> None:
        if token in "()" or token.upper() in _OPERATORS:
            raise _error(self.expression, f"a license identifier, got {token!r}")
        if _LICENSE_REF.fullmatch(token):
            return
        base = token.removesuffix("+")
        if base.lower() in _identifiers()[0]:
            return
        if base.lower() in _identifiers()[1]:
            raise _error(self.expression, f"{token!r} is an exception, usable only after WITH")
        raise _error(self.expression, f"{token!r} is not on the SPDX license list nor LicenseRef-*")
