"""``ChainMap`` behaves as an immutable dict, and earlier versions never change."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nenjim.domain.journal.values import ArtifactCoordinate
from nenjim.projections.journal_chains import ChainMap, JournalWorldview

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
            assert version.named(str(key)) == expected.get(key)


def test_a_mapping_given_to_it_is_copied() -> None:
    key = ArtifactCoordinate("com.example.a1")
    base: dict[Any, int] = {key: 1}
    chains = ChainMap(base, {})  # type: ignore[arg-type]
    base[key] = 2
    assert chains[key] == 1


def test_a_chain_is_found_by_its_coordinate_text_only() -> None:
    base: dict[Any, int] = {ArtifactCoordinate("com.example.a1"): 1}
    changed: dict[Any, int] = {ArtifactCoordinate("com.example.a2"): 2}
    chains = ChainMap(base, {}).updated(changed)  # type: ignore[arg-type]
    assert chains.named("com.example.a1") == 1
    assert chains.named("com.example.a2") == 2
    assert chains.named("com.example.a3") is None
    assert chains.named("Com.Example.A1") is None  # no coordinate: not found, no error
    assert chains.get("com.example.a1") is None  # type: ignore[arg-type]  # a Mapping by coordinate


def test_a_view_over_any_mapping_finds_a_chain_by_its_coordinate_text() -> None:
    plain: dict[Any, int] = {ArtifactCoordinate("com.example.a1"): 1}
    for chains in (plain, ChainMap(plain, {})):  # type: ignore[arg-type]
        view = JournalWorldview(chains, 1)  # type: ignore[arg-type]
        assert view.chain_named("com.example.a1") == 1
        assert view.chain_named("com.example.a2") is None
        assert view.chain_named("not a coordinate") is None
    assert JournalWorldview.empty().chain_named("com.example.a1") is None
