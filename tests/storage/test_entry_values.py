"""The values an append is made of: keys, ``AppendEntry``, the entries it returns.

These are built once per entry of every append, so they are built without the
generic checks (slots set directly, an ASCII key never encoded); the tests hold
them to the rule they stand for.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nenjim.infrastructure.storage import (
    AppendEntry,
    DurableRecord,
    SerializationError,
    StreamEntry,
)
from nenjim.infrastructure.storage.scalars import MAX_KEY_BYTES, validate_key

RECORD = DurableRecord("test.entry", "0.1", {"n": 1})


def _allowed(value: str) -> bool:
    """The key rule, stated plainly: non-empty, no NUL, valid UTF-8 of at most 512 bytes."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return False
    return 0 < size <= MAX_KEY_BYTES and "\0" not in value


_KEYS = st.one_of(
    st.text(max_size=20),
    st.text(
        st.characters(max_codepoint=127), min_size=MAX_KEY_BYTES - 2, max_size=MAX_KEY_BYTES + 2
    ),
    st.text(st.characters(min_codepoint=128), min_size=250, max_size=260),
    st.sampled_from(["", "\0", "a\0", "\ud800", "x" * MAX_KEY_BYTES, "x" * (MAX_KEY_BYTES + 1)]),
)


@given(key=_KEYS)
def test_a_key_is_accepted_exactly_when_the_rule_allows_it(key: str) -> None:
    if _allowed(key):
        assert validate_key(key) is key
    else:
        with pytest.raises(ValueError, match=r"^key "):
            validate_key(key)


class _Text(str):
    pass


def test_a_key_of_a_str_subclass_follows_the_same_rule() -> None:
    assert validate_key(_Text("k")) == "k"
    with pytest.raises(ValueError, match="must not contain NUL"):
        validate_key(_Text("a\0"))
    with pytest.raises(TypeError, match="key must be a str, got bytes"):
        validate_key(b"k")


@pytest.mark.parametrize(
    ("entry_id", "record", "error", "message"),
    [
        ("", RECORD, ValueError, "entry id must not be empty"),
        ("a\0b", RECORD, ValueError, "entry id must not contain NUL"),
        ("\udc80", RECORD, ValueError, r"entry id must be valid UTF-8 \(lone surrogate\)"),
        ("é" * 257, RECORD, ValueError, "entry id takes 514 bytes of UTF-8; the limit is 512"),
        (7, RECORD, TypeError, "entry id must be a str, got int"),
        ("e1", {"n": 1}, SerializationError, "record must be a DurableRecord, got dict"),
    ],
)
def test_an_append_entry_refuses_a_bad_id_or_record(
    entry_id: object, record: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}$"):
        AppendEntry(entry_id, record)  # type: ignore[arg-type]


def test_an_append_entry_is_a_frozen_value() -> None:
    entry = AppendEntry(id="e1", record=RECORD)
    assert entry == AppendEntry("e1", RECORD)
    assert hash(entry) == hash(AppendEntry("e1", RECORD))
    assert dataclasses.replace(entry, id="e2") == AppendEntry("e2", RECORD)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.id = "e3"  # type: ignore[misc]
    with pytest.raises(ValueError, match="entry id must not be empty"):
        dataclasses.replace(entry, id="")


@given(
    first=st.integers(1, 2**62),
    ids=st.lists(st.text(min_size=1, max_size=8).filter(_allowed), max_size=5),
)
def test_an_appends_entries_are_numbered_from_the_first_position_with_copied_records(
    first: int, ids: list[str]
) -> None:
    appended = [
        AppendEntry(entry_id, DurableRecord("test.entry", "0.1", {"i": n}))
        for n, entry_id in enumerate(ids)
    ]
    stored = StreamEntry.numbered(first, appended)
    assert stored == [
        StreamEntry(first + n, entry.id, entry.record) for n, entry in enumerate(appended)
    ]
    for entry, given_entry in zip(stored, appended, strict=True):
        assert entry.record == given_entry.record
        assert entry.record is not given_entry.record
        with pytest.raises(dataclasses.FrozenInstanceError):
            entry.position = 0  # type: ignore[misc]


def test_a_records_copy_is_an_equal_independent_immutable_record() -> None:
    clone = RECORD.copy()
    assert clone == RECORD
    assert hash(clone) == hash(RECORD)
    assert clone is not RECORD
    assert (clone.record_type, clone.format_version, clone.payload) == (
        "test.entry",
        "0.1",
        {"n": 1},
    )
    with pytest.raises(AttributeError, match="DurableRecord is immutable"):
        clone.record_type = "other"  # type: ignore[misc]
