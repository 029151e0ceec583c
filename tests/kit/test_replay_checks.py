"""The replay kit's checks fail when they must: a changed read model, a missing golden file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nenjim.testing import (
    GoldenLog,
    RecordedLog,
    assert_replay_equivalent,
    differences,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.fixture
def golden(tmp_path: Path) -> GoldenLog:
    """A copy of the storage golden log, without its read models."""
    shutil.copyfile(GOLDEN / "storage-fixture.log", tmp_path / "state.log")
    return GoldenLog(tmp_path / "state.log")


def test_differences_name_each_path() -> None:
    expected = {"a": [1, {"b": "x"}], "gone": 1}
    actual = {"a": [1, {"b": "y"}], "new": 2}
    assert differences(expected, actual) == [
        '$["a"][1]["b"]: expected "x", got "y"',
        '$["gone"]: missing',
        '$["new"]: unexpected 2',
    ]
    assert differences([1, 2], [1]) == ["$: expected [1, 2], got [1]"]
    assert differences(expected, json.loads(json.dumps(expected))) == []


def test_a_golden_log_without_its_read_models_says_how_to_make_them(golden: GoldenLog) -> None:
    with pytest.raises(AssertionError, match="does not exist: regenerate it on purpose"):
        golden.check()
    golden.check(regenerate=True)
    assert golden.models_path == golden.log_path.with_name("state.log.read-models.json")
    assert json.loads(golden.models_path.read_text()) == json.loads(
        (GOLDEN / "storage-fixture.log.read-models.json").read_text()
    )
    golden.check()


def test_a_changed_read_model_fails_the_golden_check_naming_it(
    golden: GoldenLog, nenjim_store_url: str
) -> None:
    golden.check(regenerate=True)
    models = json.loads(golden.models_path.read_text())
    models["storage"]["records"]["agent.roots"]["agent-1"]["revision"] += 1
    golden.models_path.write_text(json.dumps(models))
    with pytest.raises(AssertionError) as failed:
        golden.check(nenjim_store_url)
    message = str(failed.value)
    assert "read models differ in 1 places" in message
    assert '$["storage"]["records"]["agent.roots"]["agent-1"]["revision"]: expected' in message
    assert "--nenjim-regenerate-golden" in message


def test_replay_equivalence_fails_on_any_difference() -> None:
    log = RecordedLog.from_file(GOLDEN / "journal-fixture.log")
    stores = ["memory:"]
    expected = assert_replay_equivalent(log, stores)
    chains = expected["journal-chains"]
    first = next(iter(chains))
    chains[first][0]["revision"]["description"] = "changed"
    with pytest.raises(AssertionError, match=r"journal-fixture\.log replayed into memory:"):
        assert_replay_equivalent(log, stores, expected=expected)
