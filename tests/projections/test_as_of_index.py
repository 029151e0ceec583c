"""The as-of index answers like a linear scan, for any chain and any query."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from journal_texts import Chain
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.values import JournalVersion
from nenjim.projections.journal_chains import ChainSnapshot

_DAYS = st.integers(min_value=1, max_value=28)


def _version(day: int, hour: int) -> str:
    return f"202601{day:02d}T{hour:02d}0000Z"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_DAYS, st.integers(0, 23)), min_size=1, max_size=20, unique=True),
    st.tuples(_DAYS, st.integers(0, 23)),
)
def test_as_of_matches_a_linear_scan(points: list[tuple[int, int]], query: tuple[int, int]) -> None:
    versions = sorted(_version(d, h) for d, h in points)
    chain = Chain("com.example.alpha")
    revisions = tuple(parse_journal(chain.add(v)) for v in versions)
    snapshot = ChainSnapshot.from_revisions(revisions)
    wanted = JournalVersion(_version(*query))
    expected = [r for r in revisions if r.version <= wanted]
    assert snapshot.as_of(wanted) == (expected[-1] if expected else None)
    assert snapshot.as_of_key(str(wanted)) is snapshot.as_of(wanted)
    exact = [r for r in revisions if r.version == wanted]
    assert snapshot.exact(wanted) == (exact[0] if exact else None)
