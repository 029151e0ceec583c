"""Shared field checks of the durable values: text, counts, timestamps, JSON, evolve."""

from __future__ import annotations

import dataclasses
import enum
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType

import pytest

from nenjim.domain import durable_fields as f


class TestText:
    def test_subclasses_become_exact_str(self) -> None:
        class Kind(enum.StrEnum):
            MESSAGE = "message"

        assert type(f.text(Kind.MESSAGE, "kind")) is str
        assert f.text(Kind.MESSAGE, "kind") == "message"

    def test_text_rules(self) -> None:
        assert f.optional_text("", "x") == ""
        assert f.optional_text(None, "x") is None
        for check in (f.text, f.optional_text, f.identifier, f.json_scalar):
            with pytest.raises(ValueError, match="NUL"):
                check("a\0b", "x")
        with pytest.raises(ValueError, match="NUL"):
            f.json_object({"a\0": 1}, "x")
        with pytest.raises(ValueError, match="empty"):
            f.text("", "x")
        with pytest.raises(ValueError, match="UTF-8"):
            f.optional_text("\ud800", "x")
        with pytest.raises(TypeError):
            f.text(b"x", "x")


class TestNumbers:
    @pytest.mark.parametrize("value", [True, False, 1.0, "1", None])
    def test_counts_are_real_ints(self, value: object) -> None:
        with pytest.raises(TypeError):
            f.count(value, "n")

    def test_bounds(self) -> None:
        assert f.count(0, "n") == 0
        assert f.positive(1, "n") == 1
        assert f.optional_positive(None, "n") is None
        with pytest.raises(ValueError, match=">= 0"):
            f.count(-1, "n")
        with pytest.raises(ValueError, match="> 0"):
            f.positive(0, "n")

    def test_flags_are_real_bools(self) -> None:
        assert f.flag(False, "b") is False
        with pytest.raises(TypeError):
            f.flag(0, "b")


class TestTimestamps:
    def test_aware_values_become_utc(self) -> None:
        local = datetime(2024, 5, 1, 9, 0, tzinfo=timezone(timedelta(hours=-3)))
        assert f.timestamp(local, "t") == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
        assert f.timestamp(local, "t").tzinfo is UTC
        assert f.optional_timestamp(None, "t") is None

    def test_naive_values_and_text_are_refused(self) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            f.timestamp(datetime(2024, 5, 1), "t")
        with pytest.raises(TypeError):
            f.timestamp("2024-05-01T00:00:00Z", "t")

    def test_now_is_utc(self) -> None:
        assert f.utc_now().tzinfo is UTC


class TestJson:
    def test_frozen_copies_are_deep_and_read_only(self) -> None:
        source = {"a": [1, {"b": [True, None, 1.5, "s"]}]}
        frozen = f.json_object(source, "m")
        source["a"].append(2)
        assert frozen == {"a": (1, {"b": (True, None, 1.5, "s")})}
        assert isinstance(frozen, MappingProxyType)
        assert isinstance(frozen["a"][1], MappingProxyType)
        assert f.json_array([[1]], "a") == ((1,),)

    @pytest.mark.parametrize(
        "value",
        [2**53, -(2**53), float("nan"), float("-inf"), -0.0, "\udfff", {1: 1}, b"x", {1}],
    )
    def test_only_canonical_json_values(self, value: object) -> None:
        with pytest.raises((TypeError, ValueError)):
            f.frozen_json({"v": value}, "m")

    def test_safe_extremes(self) -> None:
        assert f.json_scalar(2**53 - 1, "n") == 2**53 - 1
        assert f.json_scalar(0.0, "n") == 0.0

    @pytest.mark.parametrize("depth", [101, 10_000])
    def test_arrays_and_objects_nest_at_most_100_deep(self, depth: int) -> None:
        deepest: object = {}
        for _ in range(99):
            deepest = [deepest]
        assert f.json_array(deepest, "a")
        too_deep: object = {}
        for _ in range(depth - 1):
            too_deep = {"k": too_deep}
        with pytest.raises(ValueError, match="deeper than 100"):
            f.json_object(too_deep, "m")

    def test_containers_must_have_their_kind(self) -> None:
        with pytest.raises(TypeError):
            f.json_object([], "m")
        with pytest.raises(TypeError):
            f.json_array({}, "a")
        with pytest.raises(TypeError):
            f.tuple_of("ab", str, "t")
        assert f.tuple_of(["a"], str, "t") == ("a",)


@dataclasses.dataclass(frozen=True)
class _Counter:
    key: str
    revision: int
    note: str
    updated_at: datetime


class TestEvolved:
    def test_advances_revision_and_refreshes_updated_at(self) -> None:
        start = _Counter("k", 4, "a", datetime(2024, 1, 1, tzinfo=UTC))
        after = f.evolved(start, {"note": "b"}, revision="revision", fixed=frozenset({"key"}))
        assert (after.revision, after.note) == (5, "b")
        assert after.updated_at > start.updated_at
        assert start.revision == 4

    def test_refuses_fixed_fields_and_the_revision(self) -> None:
        start = _Counter("k", 4, "a", datetime(2024, 1, 1, tzinfo=UTC))
        for name in ("key", "revision"):
            with pytest.raises(ValueError, match=name):
                f.evolved(start, {name: 1}, revision="revision", fixed=frozenset({"key"}))
