"""LangGraph's own checkpointer conformance suite, installed from the package index.

Each store runs the whole suite twice: on ``NenjimSaver`` (whose async
methods run its sync ones in a worker thread, so the sync family is what is
tested) and on ``AsyncNenjimSaver`` opened with ``async with``. The suite
reports a capability it does not detect as neither passed nor failed, and
its ``passed_all()`` skips those, so every one of the eight is asserted
detected and passed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from nenjim.langgraph import AsyncNenjimSaver, NenjimSaver

EIGHT = {
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "delete_thread",
    "delete_for_runs",
    "copy_thread",
    "prune",
}


def test_the_suite_knows_exactly_the_eight_capabilities() -> None:
    assert {capability.value for capability in Capability} == EIGHT


@pytest.mark.parametrize("flavour", ["NenjimSaver", "AsyncNenjimSaver"])
def test_every_capability_is_detected_and_passes(store_url: str, flavour: str) -> None:
    kind = store_url.split(":", maxsplit=1)[0]

    async def saver() -> AsyncIterator[NenjimSaver | AsyncNenjimSaver]:
        if flavour == "NenjimSaver":
            with NenjimSaver.from_conn_string(store_url) as opened:
                yield opened
        else:
            async with AsyncNenjimSaver.from_conn_string(store_url) as opened_async:
                yield opened_async

    registered = checkpointer_test(name=f"{flavour}[{kind}]")(saver)
    report = asyncio.run(validate(registered))
    outcome = {
        name: (result.detected, result.passed, result.failures)
        for name, result in report.results.items()
    }
    assert set(outcome) == EIGHT
    assert {name: o for name, o in outcome.items() if o[:2] != (True, True)} == {}
    counts = {n: (r.tests_failed, r.tests_skipped) for n, r in report.results.items()}
    assert counts == dict.fromkeys(EIGHT, (0, 0))
    # 0.0.2 has 81 tests; a later release may add some, never fewer.
    assert sum(r.tests_passed for r in report.results.values()) >= 81
