"""A user's own suite enables the plugin and gets fresh stores of every kind, in a pytest run."""

from __future__ import annotations

import pytest

USERS_TEST = """
from nenjim.testing import GENESIS_ACCEPTED, Event, JournalScenario

GENESIS = "NENJIM-JOURNAL 1\\nARTIFACT com.example.core\\nJOURNAL_VERSION 20260110T000000Z\\n"


def test_a_genesis(nenjim_store_url):
    with JournalScenario(nenjim_store_url) as scenario:
        scenario.when(GENESIS).then(Event(GENESIS_ACCEPTED, {"coordinate": "com.example.core"}))


def test_two_fresh_stores(nenjim_new_store, nenjim_regenerate_golden):
    assert nenjim_new_store("sqlite") != nenjim_new_store("sqlite")
    assert nenjim_regenerate_golden is True
"""


@pytest.fixture
def users_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["nenjim.testing.plugin"]\n')
    pytester.makepyfile(test_users=USERS_TEST)
    return pytester


def test_every_store_kind_with_a_postgresql_url(
    users_suite: pytest.Pytester, postgres_url: str
) -> None:
    result = users_suite.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-v",
        f"--nenjim-postgres-url={postgres_url}",
        "--nenjim-regenerate-golden",
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_a_genesis?postgresql? PASSED*"])


def test_without_postgresql_its_stores_are_skipped_or_fail_in_ci(
    users_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NENJIM_TEST_PG_URL", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("NENJIM_REGENERATE_GOLDEN", "1")
    users_suite.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3, skipped=1)
    monkeypatch.setenv("CI", "true")
    users_suite.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3, errors=1)
