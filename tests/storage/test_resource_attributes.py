"""``Resource.validate_attributes``: what a write's attributes must be, refused before any work."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from nenjim.infrastructure.storage import Resource
from nenjim.infrastructure.storage.scalars import MAX_INDEXED_TEXT_BYTES

TAGGED = Resource(
    "test.tagged",
    "records",
    attributes={"tag": "string", "note": "string", "live": "boolean"},
    indexes={"tag": ("tag",)},
)


class _Attributes(Mapping[str, Any]):
    """A mapping that is not a dict."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@pytest.mark.parametrize(
    "tag",
    [
        "a" * MAX_INDEXED_TEXT_BYTES,  # ASCII: as many bytes as characters
        "é" * (MAX_INDEXED_TEXT_BYTES // 2),  # two bytes each
        "語" * (MAX_INDEXED_TEXT_BYTES // 3) + "xx",  # three bytes each, to the byte
    ],
)
def test_an_indexed_text_of_512_bytes_is_taken(tag: str) -> None:
    assert len(tag.encode("utf-8")) == MAX_INDEXED_TEXT_BYTES
    values = TAGGED.validate_attributes({"tag": tag, "note": "", "live": True})
    assert values["tag"] == tag


@pytest.mark.parametrize(
    "tag",
    [
        "a" * (MAX_INDEXED_TEXT_BYTES + 1),
        "é" * (MAX_INDEXED_TEXT_BYTES // 2) + "a",
        # Fewer characters than the limit, more bytes: counted in bytes, not characters.
        "語" * (MAX_INDEXED_TEXT_BYTES // 3 + 1),
    ],
)
def test_an_indexed_text_over_512_bytes_is_refused_naming_it(tag: str) -> None:
    with pytest.raises(ValueError, match=r"test\.tagged\.tag is indexed and takes \d+ bytes"):
        TAGGED.validate_attributes({"tag": tag, "note": "", "live": True})


def test_an_unindexed_text_may_be_longer() -> None:
    note = "語" * MAX_INDEXED_TEXT_BYTES
    assert TAGGED.validate_attributes({"tag": "t", "note": note, "live": False})["note"] == note


def test_a_mapping_that_is_not_a_dict_is_taken_in_the_declared_order() -> None:
    values = TAGGED.validate_attributes(_Attributes({"live": True, "note": "n", "tag": "t"}))
    assert list(values.items()) == [("tag", "t"), ("note", "n"), ("live", True)]


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        ([("tag", "t")], TypeError, "attributes must be a mapping, got list"),
        ({"tag": "t", "note": "n", "live": True, 1: "x"}, TypeError, "names must be str, got 1"),
        (
            {"tag": "t", "note": "n", "live": True, "x": 1},
            ValueError,
            r"unknown attributes \['x'\]",
        ),
        ({"tag": "t", "live": True}, ValueError, r"missing attributes \['note'\]"),
        ({"tag": "t", "note": "n", "live": 1}, TypeError, "test.tagged.live must be a bool"),
        ({"tag": 7, "note": "n", "live": True}, TypeError, "test.tagged.tag must be a str"),
    ],
)
def test_bad_attributes_are_refused_naming_the_resource(
    values: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        TAGGED.validate_attributes(values)


COUNTED = Resource(
    "test.counted",
    "records",
    attributes={"n": "integer", "live": "boolean", "tag": "string"},
    indexes={"n": ("n",), "live": ("live",), "tag": ("tag",)},
)


def test_scan_values_checked_once_are_still_refused_in_another_type() -> None:
    # A bool equals an int in Python (True == 1, same hash): the values a scan checked once
    # must not let the other type through.
    assert dict(COUNTED.index_values("n", {"n": 1})) == {"n": 1}
    with pytest.raises(TypeError, match="must be an int"):
        COUNTED.index_values("n", {"n": True})
    assert dict(COUNTED.index_values("live", {"live": True})) == {"live": True}
    with pytest.raises(TypeError, match="must be a bool"):
        COUNTED.index_values("live", {"live": 1})


def test_scan_values_are_refused_every_time_and_given_read_only() -> None:
    for _ in range(2):
        with pytest.raises(ValueError, match="must not contain NUL"):
            COUNTED.index_values("tag", {"tag": "a\0b"})
        with pytest.raises(ValueError, match="unknown index"):
            COUNTED.index_values("nope", {"tag": "a"})
    checked = COUNTED.index_values("tag", {"tag": "a"})
    with pytest.raises(TypeError):
        checked["tag"] = "b"  # type: ignore[index]


def test_write_attributes_checked_once_are_still_refused_in_another_type() -> None:
    # A write's plain attributes are checked once per values: a bool is never taken for
    # the int checked before it (True == 1, same hash), nor an int for a bool.
    good = {"n": 1, "live": True, "tag": "a"}
    assert dict(COUNTED.validate_attributes(good)) == good
    with pytest.raises(TypeError, match=r"test\.counted\.n must be an int"):
        COUNTED.validate_attributes({"n": True, "live": True, "tag": "a"})
    with pytest.raises(TypeError, match=r"test\.counted\.live must be a bool"):
        COUNTED.validate_attributes({"n": 1, "live": 1, "tag": "a"})


def test_write_attributes_are_refused_every_time_in_the_declared_order_and_read_only() -> None:
    for _ in range(2):
        with pytest.raises(ValueError, match="must not contain NUL"):
            COUNTED.validate_attributes({"n": 1, "live": True, "tag": "a\0b"})
        with pytest.raises(ValueError, match="missing attributes"):
            COUNTED.validate_attributes({"n": 1, "live": True})
        with pytest.raises(ValueError, match="unknown attributes"):
            COUNTED.validate_attributes({"n": 1, "live": True, "tag": "a", "x": "y"})
    for _ in range(2):  # the same values in another order: the same text stored
        checked = COUNTED.validate_attributes({"tag": "a", "live": False, "n": 2})
        assert list(checked.items()) == [("n", 2), ("live", False), ("tag", "a")]
    with pytest.raises(TypeError):
        checked["tag"] = "b"  # type: ignore[index]
