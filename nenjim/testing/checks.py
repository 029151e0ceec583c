"""Replay equivalence and golden logs: the assertions of the replay kit."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nenjim.testing.read_models import ReadModels, read_models
from nenjim.testing.recorded import RecordedLog
from nenjim.testing.stores import StoreUnderTest, open_store, replay

_SHOWN = 10  # differences listed in one assertion message


def differences(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Where two plain JSON values differ, one line per difference (JSON paths)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(expected.keys() | actual.keys()):
            where = f"{path}[{json.dumps(key)}]"
            if key not in actual:
                found.append(f"{where}: missing")
            elif key not in expected:
                found.append(f"{where}: unexpected {_short(actual[key])}")
            else:
                found.extend(differences(expected[key], actual[key], where))
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            line
            for index, (left, right) in enumerate(zip(expected, actual, strict=True))
            for line in differences(left, right, f"{path}[{index}]")
        ]
    if expected != actual:
        return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def assert_same_read_models(expected: ReadModels, actual: ReadModels, where: str) -> None:
    """Raise ``AssertionError`` listing the differences, if any."""
    found = differences(_normal(expected), _normal(actual))
    if found:
        listed = "\n  ".join(found[:_SHOWN])
        more = f"\n  ... and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
        raise AssertionError(
            f"{where}: read models differ in {len(found)} places:\n  {listed}{more}"
        )


def assert_replay_equivalent(
    log: RecordedLog, stores: Iterable[str], *, expected: ReadModels | None = None
) -> ReadModels:
    """Replay ``log`` into each fresh store; each must answer ``expected`` and audit clean.

    Without ``expected`` the first store's read models are the reference.
    Returns the read models every store answered.
    """
    reference = expected
    for store in stores:
        models = _audited_models(replay(log, store), log, f"{log.name} replayed into {store}")
        if reference is None:
            reference = models
        else:
            assert_same_read_models(reference, models, f"{log.name} replayed into {store}")
    if reference is None:
        raise ValueError("no store to replay into")
    return reference


def assert_store_replays(
    original: str, stores: Iterable[str], *, journal: str | None = None
) -> RecordedLog:
    """Record the durable store ``original``, replay it into each fresh store, and assert that
    every store answers what the original answers and audits clean; the recorded log."""
    log = RecordedLog.record(original, journal=journal)
    expected = _audited_models(open_store(original, log), log, original)
    assert_replay_equivalent(log, stores, expected=expected)
    return log


class GoldenLog:
    """A recorded log kept as a file, with the read models its replay must produce beside it.

    ``check(store)`` replays the log into ``store`` (a fresh one) and
    compares its read models with the golden file (``<log>.read-models.json``
    unless named), failing with the differences. ``check(store,
    regenerate=True)`` writes the golden file instead: run it on purpose,
    after a change meant to change a read model, and review the diff.
    """

    def __init__(self, log: str | Path, read_models_file: str | Path | None = None) -> None:
        self.log_path = Path(log)
        self.models_path = (
            Path(read_models_file)
            if read_models_file is not None
            else self.log_path.with_name(self.log_path.name + ".read-models.json")
        )

    def check(self, store: str = "memory:", *, regenerate: bool = False) -> ReadModels:
        """Replay into ``store`` and compare with (or, regenerating, write) the golden file."""
        log = RecordedLog.from_file(self.log_path)
        where = f"{self.log_path} replayed into {store}"
        models: ReadModels = _normal(_audited_models(replay(log, store), log, where))
        if regenerate:
            text = json.dumps(models, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
            self.models_path.write_text(text, encoding="utf-8")
            return models
        if not self.models_path.is_file():
            raise AssertionError(
                f"{self.models_path} does not exist: regenerate it on purpose "
                "(pytest --nenjim-regenerate-golden) and review it"
            )
        golden: ReadModels = json.loads(self.models_path.read_text(encoding="utf-8"))
        assert_same_read_models(
            golden,
            models,
            f"{self.log_path} replayed into {store} (golden file {self.models_path}; if the "
            "change is meant, regenerate it with pytest --nenjim-regenerate-golden)",
        )
        return models


def _audited_models(store: StoreUnderTest, log: RecordedLog, where: str) -> ReadModels:
    """The read models of ``store`` (closed afterwards), once it audits clean."""
    with store:
        problems = store.audit()
        if problems:
            raise AssertionError(f"{where}: audit: {problems[0]}")
        return read_models(store, log)


def _normal(models: Any) -> Any:
    """Plain JSON data as a JSON round trip leaves it (tuples become lists)."""
    return json.loads(json.dumps(models))


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 120 else text[:120] + "..."
