"""The leaf data of a Journal revision: ``<coordinate> <journal-version> sha256:<hex>\\n``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nenjim.domain.transparency import (
    InvalidLeafError,
    JournalLeaf,
    check_leaf_lines,
    journal_leaf_data,
)

SAMPLE = (
    Path(__file__).parents[2]
    / "data/sample/journals/com.r35157.nenjim.testkit/20251118T090000Z.journal"
)


def test_leaf_line_of_a_sample_revision() -> None:
    revision = SAMPLE.read_bytes()
    data = journal_leaf_data("com.r35157.nenjim.testkit", "20251118T090000Z", revision)
    digest = hashlib.sha256(revision).hexdigest()
    assert data == f"com.r35157.nenjim.testkit 20251118T090000Z sha256:{digest}\n".encode()
    leaf = JournalLeaf.parse(data)
    assert leaf == JournalLeaf.of_revision(
        "com.r35157.nenjim.testkit", "20251118T090000Z", revision
    )
    assert leaf.digest.hex() == digest


def test_the_digest_covers_the_exact_bytes() -> None:
    a = journal_leaf_data("org.example.a", "20260101T000000Z", b"text\n")
    b = journal_leaf_data("org.example.a", "20260101T000000Z", b"text\r\n")
    assert a != b
    assert a.endswith(b" sha256:" + hashlib.sha256(b"text\n").hexdigest().encode() + b"\n")


@pytest.mark.parametrize(
    ("coordinate", "version"),
    [("", "v"), ("a b", "v"), ("a\nb", "v"), ("a", ""), ("a", "v\t"), ("caf\u00e9", "v")],
)
def test_fields_that_would_make_the_line_ambiguous_are_refused(
    coordinate: str, version: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidLeafError) as caught:
        journal_leaf_data(coordinate, version, b"x")
    assert "printable ASCII without spaces" in one_line(caught.value)


DIGEST = hashlib.sha256(b"x").hexdigest()


@pytest.mark.parametrize(
    "data",
    [
        f"a v sha256:{DIGEST}".encode(),  # no newline
        f"a v sha256:{DIGEST}\n\n".encode(),
        f"a v sha256:{DIGEST.upper()}\n".encode(),
        f"a v sha256:{DIGEST[:-1]}\n".encode(),
        f"a v sha512:{DIGEST}\n".encode(),
        f"a  v sha256:{DIGEST}\n".encode(),
        f"a v x sha256:{DIGEST}\n".encode(),
        f"a sha256:{DIGEST}\n".encode(),
        f"a\tv sha256:{DIGEST}\n".encode(),
        f"\u00e9 v sha256:{DIGEST}\n".encode(),
        b"",
    ],
)
def test_malformed_leaf_data_is_refused(
    data: bytes, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidLeafError) as caught:
        JournalLeaf.parse(data)
    assert "not a journal leaf line" in one_line(caught.value)


def test_a_digest_must_be_32_bytes(one_line: Callable[[BaseException], str]) -> None:
    with pytest.raises(InvalidLeafError) as caught:
        JournalLeaf("a", "v", b"short")
    assert "5 bytes, not 32" in one_line(caught.value)


FIELD = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1)


@given(coordinate=FIELD, version=FIELD, revision=st.binary())
def test_leaves_round_trip(coordinate: str, version: str, revision: bytes) -> None:
    leaf = JournalLeaf.of_revision(coordinate, version, revision)
    assert JournalLeaf.parse(leaf.data()) == leaf


def _leaf_line(number: int) -> bytes:
    return journal_leaf_data(f"org.example.a{number}", "20260101T000000Z", b"%d" % number)


_MUTATED_ENTRY = st.one_of(
    st.integers(0, 99).map(_leaf_line),
    # A leaf line with one byte replaced, dropped or added somewhere.
    st.tuples(st.integers(0, 99), st.integers(0, 200), st.sampled_from(b" \n:aAg0\x00\x7f")).map(
        lambda t: _leaf_line(t[0])[: t[1]] + bytes([t[2]]) + _leaf_line(t[0])[t[1] + 1 :]
    ),
    st.tuples(st.integers(0, 99), st.integers(0, 200)).map(
        lambda t: _leaf_line(t[0])[: t[1]] + _leaf_line(t[0])[t[1] + 1 :]
    ),
    # Two lines in one entry, half a line, nothing.
    st.integers(0, 99).map(lambda n: _leaf_line(n) + _leaf_line(n + 1)),
    st.integers(0, 99).map(lambda n: _leaf_line(n)[:40]),
    st.just(b""),
    st.binary(max_size=120),
)


@given(st.lists(_MUTATED_ENTRY, max_size=8))
def test_checking_leaf_lines_at_once_refuses_what_parsing_each_refuses(
    entries: list[bytes],
) -> None:
    first_error: str | None = None
    for entry in entries:
        try:
            JournalLeaf.parse(entry)
        except InvalidLeafError as error:
            first_error = str(error)
            break
    if first_error is None:
        check_leaf_lines(entries)
    else:
        with pytest.raises(InvalidLeafError) as caught:
            check_leaf_lines(entries)
        assert str(caught.value) == first_error


def test_checking_leaf_lines_refuses_two_lines_split_over_two_entries_at_another_place() -> None:
    first, second = _leaf_line(1), _leaf_line(2)
    check_leaf_lines([first, second])
    # The same bytes, cut elsewhere: joined they are leaf lines, apart they are not.
    with pytest.raises(InvalidLeafError, match="not a journal leaf line"):
        check_leaf_lines([first[:-5], first[-5:] + second])
