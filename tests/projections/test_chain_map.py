"""``ChainMap`` behaves as an immutable dict, and earlier versions never change."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.journal.values import ArtifactCoordinate
from projections.journal_chains import ChainMap

_KEYS = st.integers(0, 300).map(lambda i: ArtifactCoordinate(f"com.example.a{i}"))
_UPDATES = st.lists(st.dictionaries(_KEYS, st.integers(), max_size=40), max_size=30)


@settings(max_examples=100, deadline=None)
@given(_UPDATES)
def test_updates_match_a_plain_dict_and_keep_old_versions(updates: list[dict[Any, int]]) -> None:
    current = ChainMap({}, {})  # type: ignore[arg-type]
    model: dict[Any, int] = {}
    history: list[tuple[ChainMap, dict[Any, int]]] = []
    for changed in updates:
        current = current.updated(changed)  # type: ignore[arg-type]
        model = {**model, **changed}
        history.append((current, dict(model)))
        assert dict(current) == model
        assert len(current) == len(model)
        assert set(current) == set(model)
    for version, expected in history:
        assert dict(version) == expected
        for key in map(ArtifactCoordinate, ("com.example.a0", "com.example.a7", "com.example.zz")):
            assert (key in version) is (key in expected)
            assert version.get(key) == expected.get(key)
            assert version.get(key, -1) == expected.get(key, -1)  # type: ignore[arg-type]


def test_a_mapping_given_to_it_is_copied() -> None:
    key = ArtifactCoordinate("com.example.a1")
    base: dict[Any, int] = {key: 1}
    chains = ChainMap(base, {})  # type: ignore[arg-type]
    base[key] = 2
    assert chains[key] == 1
