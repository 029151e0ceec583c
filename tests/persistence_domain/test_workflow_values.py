"""The Workflow snapshot value domain: normal form, refusals and copies."""

from __future__ import annotations

import enum
from collections import OrderedDict
from datetime import UTC, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest

from nenjim.domain.workflows import (
    SNAPSHOT_KEYS,
    WorkflowState,
    WorkflowValueError,
    freeze_snapshot,
    normalize_snapshot,
)


class Phase(enum.Enum):
    PAUSE = "pause"


class Colour(enum.StrEnum):
    RED = "red"


class Size(enum.IntEnum):
    SMALL = 1


class TestNormalizeSnapshot:
    def test_plain_snapshot_round_trips_as_an_equal_copy(self) -> None:
        snapshot: dict[str, Any] = {
            "fields": {"value": 1, "items": [1, 2.5, "x", None, True]},
            "phase": "pause",
        }
        result = normalize_snapshot(snapshot)
        assert result == snapshot
        assert result is not snapshot
        assert result["fields"]["items"] is not snapshot["fields"]["items"]

    def test_result_is_independent_of_the_input(self) -> None:
        fields: dict[str, Any] = {"list": [1]}
        result = normalize_snapshot({"fields": fields, "phase": None})
        fields["list"].append(2)
        fields["new"] = 1
        assert result == {"fields": {"list": [1]}, "phase": None}

    def test_symbol_like_keys_and_values_become_text(self) -> None:
        fields = {Colour.RED: Phase.PAUSE, "n": {Phase.PAUSE: [Colour.RED]}}
        result = normalize_snapshot({"fields": fields, "phase": Phase.PAUSE})
        assert result == {"fields": {"red": "pause", "n": {"pause": ["red"]}}, "phase": "pause"}
        assert type(next(iter(result["fields"]))) is str
        assert type(result["fields"]["n"]["pause"][0]) is str

    def test_top_level_symbol_like_keys(self) -> None:
        class Key(enum.Enum):
            FIELDS = "fields"
            PHASE = "phase"

        result = normalize_snapshot({Key.FIELDS: {}, Key.PHASE: None})
        assert result == {"fields": {}, "phase": None}

    def test_tuples_and_other_mappings_become_lists_and_dicts(self) -> None:
        result = normalize_snapshot(
            MappingProxyType({"fields": OrderedDict(a=(1, (2, 3))), "phase": None})
        )
        assert result == {"fields": {"a": [1, [2, 3]]}, "phase": None}
        assert type(result["fields"]) is dict

    def test_colliding_keys_are_refused(self) -> None:
        with pytest.raises(WorkflowValueError, match="two keys"):
            normalize_snapshot({"fields": {"pause": 1, Phase.PAUSE: 2}, "phase": None})
        with pytest.raises(WorkflowValueError, match="two keys"):
            normalize_snapshot({"fields": {}, "phase": None, Phase.PAUSE: 1, "pause": 2})

    @pytest.mark.parametrize(
        "snapshot",
        [
            {"fields": {}},
            {"phase": None},
            {"fields": {}, "phase": None, "extra": 1},
            {},
        ],
    )
    def test_exactly_fields_and_phase(self, snapshot: dict[str, Any]) -> None:
        with pytest.raises(WorkflowValueError, match="fields and phase"):
            normalize_snapshot(snapshot)
        assert {"fields", "phase"} == SNAPSHOT_KEYS

    @pytest.mark.parametrize(
        "snapshot",
        [
            None,
            [("fields", {}), ("phase", None)],
            {"fields": [], "phase": None},
            {"fields": None, "phase": None},
            {"fields": {}, "phase": 3},
            {"fields": {}, "phase": Size.SMALL},
            {"fields": {1: "x"}, "phase": None},
            {"fields": {("a",): "x"}, "phase": None},
        ],
    )
    def test_bad_shapes_are_refused(self, snapshot: object) -> None:
        with pytest.raises(WorkflowValueError, match="unsupported Workflow durable value"):
            normalize_snapshot(snapshot)

    @pytest.mark.parametrize(
        "value",
        [
            {1, 2},
            frozenset(),
            b"bytes",
            bytearray(b"x"),
            object(),
            datetime(2024, 1, 1, tzinfo=UTC),
            Decimal("1.5"),
            Size.SMALL,
            1 + 2j,
            2**53,
            -(2**53),
            float("nan"),
            float("inf"),
            -0.0,
            "\udc80",
            "a\0b",
        ],
    )
    def test_values_outside_the_domain_are_refused(self, value: object) -> None:
        with pytest.raises(WorkflowValueError, match="unsupported Workflow durable value"):
            normalize_snapshot({"fields": {"nested": [{"v": value}]}, "phase": None})

    def test_safe_extremes_are_accepted(self) -> None:
        fields = {"max": 2**53 - 1, "min": -(2**53 - 1), "zero": 0.0, "empty": ""}
        assert normalize_snapshot({"fields": fields, "phase": ""})["fields"] == fields

    def test_error_is_a_value_error(self) -> None:
        assert issubclass(WorkflowValueError, ValueError)

    @pytest.mark.parametrize("depth", [101, 10_000])
    def test_fields_nest_at_most_100_deep(self, depth: int) -> None:
        deepest: Any = {}  # 99 levels below "fields": 100 in all
        for _ in range(98):
            deepest = [deepest]
        assert normalize_snapshot({"fields": {"d": deepest}, "phase": None})["fields"]["d"]
        too_deep: Any = {}
        for _ in range(depth - 1):
            too_deep = {"k": too_deep}
        with pytest.raises(WorkflowValueError, match="deeper than 100"):
            normalize_snapshot({"fields": too_deep, "phase": None})
        with pytest.raises(WorkflowValueError, match="deeper than 100"):
            freeze_snapshot({"fields": too_deep, "phase": None})


class TestFreezeSnapshot:
    def test_returns_an_equal_independent_copy(self) -> None:
        stored = {"fields": {"a": [1, {"b": None}]}, "phase": "pause"}
        loaded = freeze_snapshot(stored)
        assert loaded == stored
        loaded["fields"]["a"].append(2)
        assert stored == {"fields": {"a": [1, {"b": None}]}, "phase": "pause"}
        assert freeze_snapshot(stored) == stored

    @pytest.mark.parametrize(
        "snapshot",
        [
            {"fields": {"a": (1,)}, "phase": None},
            {"fields": {Colour.RED: 1}, "phase": None},
            {"fields": {"a": Phase.PAUSE}, "phase": None},
            {"fields": {}, "phase": Phase.PAUSE},
            {"fields": MappingProxyType({}), "phase": None},
            MappingProxyType({"fields": {}, "phase": None}),
            {"fields": {}, "phase": None, "x": 1},
        ],
    )
    def test_only_the_normal_form_is_accepted(self, snapshot: object) -> None:
        with pytest.raises(WorkflowValueError):
            freeze_snapshot(snapshot)


class TestWorkflowState:
    def test_holds_the_normal_form(self) -> None:
        state = WorkflowState("wf-1", 1, {"fields": {Colour.RED: (1,)}, "phase": Phase.PAUSE})
        assert state.snapshot == {"fields": {"red": [1]}, "phase": "pause"}
        assert state == WorkflowState("wf-1", 1, {"fields": {"red": [1]}, "phase": "pause"})
        assert hash(state) == hash(WorkflowState("wf-1", 1, {"fields": {}, "phase": None}))

    @pytest.mark.parametrize(
        ("workflow_instance_id", "workflow_revision", "snapshot"),
        [
            ("", 1, {"fields": {}, "phase": None}),
            ("wf-1", 0, {"fields": {}, "phase": None}),
            ("wf-1", True, {"fields": {}, "phase": None}),
            ("wf-1", 1, {"fields": {"s": {1}}, "phase": None}),
        ],
    )
    def test_fields_are_validated(
        self, workflow_instance_id: str, workflow_revision: int, snapshot: dict[str, Any]
    ) -> None:
        with pytest.raises((TypeError, ValueError)):
            WorkflowState(workflow_instance_id, workflow_revision, snapshot)
