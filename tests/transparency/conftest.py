"""Shared helpers for the transparency tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture
def one_line() -> Callable[[BaseException], str]:
    """Return an error's message after checking it is one non-empty line."""

    def check(error: BaseException) -> str:
        message = str(error)
        assert message
        assert "\n" not in message
        assert "\r" not in message
        return message

    return check
