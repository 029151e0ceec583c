"""The leaf data of a Journal revision: ``<coordinate> <journal-version> sha256:<hex>\\n``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.transparency import InvalidLeafError, JournalLeaf, journal_leaf_data

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
