"""A bounded schemathesis run against a real ``nenjim serve`` over HTTP: every operation of
its ``/openapi.json``, with inputs the document allows and inputs it does not, answers no
5xx and nothing the document does not declare (status, content type, body schema)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from live_server import serving
from schemathesis.checks import positive_data_acceptance

from nenjim.cli import main
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion, ReleaseVersion
from nenjim.serve.app import OPENAPI

SAMPLE_ROOT = Path(__file__).resolve().parents[2] / "data" / "sample" / "journals"
EXAMPLES = 12
"""Inputs per operation and mode: bounded, so that the whole run stays in seconds."""

POSITIVE = schemathesis.GenerationMode.POSITIVE
NEGATIVE = schemathesis.GenerationMode.NEGATIVE
OPERATIONS = {
    f"{method.upper()} {path}": any(p["in"] == "query" for p in operation["parameters"])
    for path, methods in OPENAPI["paths"].items()
    for method, operation in methods.items()
}
"""Every operation, and whether it takes query parameters: invalid values can be sent only
for those (a path parameter is text whatever it holds)."""
RUNS = [(label, POSITIVE) for label in OPERATIONS] + [
    (label, NEGATIVE) for label, queried in OPERATIONS.items() if queried
]


@pytest.fixture(scope="module")
def served_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The OpenAPI document of a server over the sample Journal, loaded from that server."""
    where = tmp_path_factory.mktemp("schemathesis")
    store = f"sqlite:///{where / 'journal.db'}"
    key = where / "log.key"
    assert main(["keys", "new", "example.com/log", "--out", str(key)]) == 0
    assert main(["journal", "verify", str(SAMPLE_ROOT), "--store", store]) == 0
    with serving(store, str(key), "--no-access-log") as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def test_the_served_document_is_the_one_the_operations_come_from(served_schema: Any) -> None:
    served = sorted(result.ok().label for result in served_schema.get_all_operations())
    assert served == sorted(OPERATIONS)


@pytest.mark.parametrize(("label", "mode"), RUNS, ids=[f"{label}-{m.value}" for label, m in RUNS])
def test_every_operation_answers_as_documented(
    served_schema: Any, label: str, mode: schemathesis.GenerationMode
) -> None:
    operation = served_schema.find_operation_by_label(label)

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def answers_as_documented(case: Any) -> None:
        # A cursor is opaque: any text is schema-valid, but only the cursors the server
        # handed out name a place in a list; any other is answered 400, as documented.
        opaque = "cursor" in (case.query or {})
        case.call_and_validate(excluded_checks=[positive_data_acceptance] if opaque else None)

    answers_as_documented()


# What the runs above found: the document said "any string" of values the server refuses.


def _pattern(path: str, name: str) -> str:
    parameters = OPENAPI["paths"][path]["get"]["parameters"]
    pattern: str = next(p for p in parameters if p["name"] == name)["schema"]["pattern"]
    return pattern


def test_a_journal_version_matches_the_pattern_exactly_when_it_is_a_real_date() -> None:
    pattern = re.compile(_pattern("/journal/{coordinate}/exact/{version}", "version"))
    for year in ("0000", "0001", "0004", "0100", "0400", "1900", "2000", "2023", "2024", "9999"):
        for month in range(14):
            for day in range(33):
                text = f"{year}{month:02}{day:02}T235959Z"
                assert bool(pattern.fullmatch(text)) == _accepts(JournalVersion, text), text
    for bad in ("20260101T240000Z", "20260101T236000Z", "20260101T000060Z", "20260101T000000"):
        assert not pattern.fullmatch(bad)


@given(data=st.data())
@settings(max_examples=100, derandomize=True, database=None)
def test_what_the_patterns_allow_the_server_accepts(data: st.DataObject) -> None:
    coordinate = _pattern("/journal/{coordinate}/latest", "coordinate")
    release = _pattern("/journal/{coordinate}/release/{release}", "release")
    version = _pattern("/journal/{coordinate}/exact/{version}", "version")
    # Python's $ also matches before a final newline, which JSON Schema's (ECMA's) does not.
    drawn = st.from_regex(coordinate, fullmatch=True).filter(lambda text: len(text) <= 255)
    ArtifactCoordinate(data.draw(drawn))
    ReleaseVersion(data.draw(st.from_regex(release, fullmatch=True)))
    JournalVersion(data.draw(st.from_regex(version, fullmatch=True)))


def test_the_release_route_takes_a_release_version_not_a_journal_version() -> None:
    pattern = re.compile(_pattern("/journal/{coordinate}/release/{release}", "release"))
    assert pattern.fullmatch("1.0.0-rc.1")
    for bad in ("20260101T000000Z", "01.0.0", "1.0.0+build", "1.0"):
        assert not pattern.fullmatch(bad), bad


def _accepts(value_type: Any, text: str) -> bool:
    try:
        value_type(text)
    except InvalidValueError:
        return False
    return True
