"""The version-controlled examples under data/nenjim/journals: valid, chained, complete."""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.parser import decode_journal_bytes, parse_journal
from nenjim.domain.journal.values import PolicyStatus, Sha256Digest, VersionRequirement
from nenjim.journal.impl.ref import build_journal

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "nenjim" / "journals"
SUFFIX = ".journal.example"
EXAMPLE_PATHS = sorted(EXAMPLES.glob(f"*/*{SUFFIX}"))


@dataclass(frozen=True)
class Example:
    """One example file: where it is, its exact bytes and what they parse to."""

    path: Path
    data: bytes
    revision: JournalRevision

    @property
    def lines(self) -> list[str]:
        return self.revision.text.splitlines()


def _load(path: Path) -> Example:
    data = path.read_bytes()
    return Example(path, data, parse_journal(decode_journal_bytes(data)))


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return [_load(path) for path in EXAMPLE_PATHS]


@pytest.fixture(scope="module")
def chains(examples: list[Example]) -> dict[str, list[Example]]:
    """Examples per artifact directory, ascending by file name (= Journal version)."""
    by_artifact: dict[str, list[Example]] = defaultdict(list)
    for example in examples:
        by_artifact[example.path.parent.name].append(example)
    return {name: sorted(chain, key=lambda e: e.path.name) for name, chain in by_artifact.items()}


def _form(requirement: VersionRequirement) -> str:
    """The shape of a requirement, e.g. ``[a,b)`` or ``(,b)``; ``exact`` for a single version."""
    if requirement.is_exact:
        return "exact"
    lower = "" if requirement.lower is None else "a"
    upper = "" if requirement.upper is None else "b"
    opening = "[" if requirement.lower_inclusive and lower else "("
    closing = "]" if requirement.upper_inclusive and upper else ")"
    return f"{opening}{lower},{upper}{closing}"


def test_examples_directory_holds_only_example_files() -> None:
    entries = [p for p in EXAMPLES.rglob("*") if p.is_file()]
    assert entries
    assert sorted(entries) == EXAMPLE_PATHS


def test_at_least_three_example_artifacts(chains: dict[str, list[Example]]) -> None:
    assert len(chains) >= 3


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_parses_and_matches_its_placement(path: Path) -> None:
    revision = _load(path).revision
    assert str(revision.coordinate) == path.parent.name
    assert f"{revision.version}{SUFFIX}" == path.name


def test_an_example_chain_has_three_revisions(chains: dict[str, list[Example]]) -> None:
    assert max(len(chain) for chain in chains.values()) >= 3


def test_predecessor_is_the_digest_of_the_previous_file_bytes(
    chains: dict[str, list[Example]],
) -> None:
    for chain in chains.values():
        assert chain[0].revision.is_genesis
        for previous, successor in pairwise(chain):
            assert successor.revision.predecessor == Sha256Digest.of_bytes(previous.data)


def test_successors_obey_the_history_rules(chains: dict[str, list[Example]]) -> None:
    for chain in chains.values():
        for previous, successor in pairwise(chain):
            assert successor.revision.version > previous.revision.version
            for old in previous.revision.releases:
                new = successor.revision.release(old.version)
                assert new is not None, f"{successor.path}: RELEASE {old.version} disappeared"
                assert new.content == old.content


def test_examples_load_as_runtime_files(tmp_path: Path, chains: dict[str, list[Example]]) -> None:
    # The real ingestion checks every chain rule, so renamed copies must all be accepted.
    for name, chain in chains.items():
        (tmp_path / name).mkdir()
        for example in chain:
            runtime_name = example.path.name.removesuffix(SUFFIX) + ".journal"
            shutil.copyfile(example.path, tmp_path / name / runtime_name)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    service = assembly.service
    assert {str(c) for c in service.coordinates()} == set(chains)
    for name, chain in chains.items():
        assert [r.digest for r in service.revisions(name)] == [e.revision.digest for e in chain]


def test_example_only_root_starts_with_no_coordinates() -> None:
    assembly = build_journal(EXAMPLES)
    assembly.process.start()
    assert assembly.service.coordinates() == frozenset()


def test_examples_dependencies_are_satisfied_by_example_releases(
    chains: dict[str, list[Example]],
) -> None:
    heads = {name: chain[-1].revision for name, chain in chains.items()}
    for example in (e for chain in chains.values() for e in chain):
        for release in example.revision.releases:
            for dependency in release.dependencies:
                target = heads[str(dependency.coordinate)]
                assert any(dependency.requirement.contains(r.version) for r in target.releases)
            for preference in release.preferences:
                assert heads[str(preference.coordinate)].release(preference.version) is not None


# Feature coverage: every format feature appears somewhere in the examples.


def test_a_quoted_description_uses_every_escape(examples: list[Example]) -> None:
    descriptions = [e.revision.description or "" for e in examples]
    assert any(all(char in d for char in '"\\\n\t') for d in descriptions)


def test_information_uris_use_several_schemes(examples: list[Example]) -> None:
    schemes = {urlsplit(e.revision.information).scheme for e in examples if e.revision.information}
    assert {"https", "git+ssh", "urn", "mailto"} <= schemes


def test_every_policy_status_appears_with_a_reason(examples: list[Example]) -> None:
    policies = [e.revision.policy for e in examples]
    policies += [r.policy for e in examples for r in e.revision.releases]
    assert {p.status for p in policies if p.reason} == set(PolicyStatus)


def test_header_and_own_release_policies_carry_reasons(examples: list[Example]) -> None:
    assert any(e.revision.policy.reason for e in examples)
    # A release's own POLICY and an inherited one parse alike, so only the text tells them apart.
    own = [line.split() for e in examples for line in e.lines if line.startswith("  POLICY ")]
    assert {words[1] for words in own if len(words) > 2} == {s.value for s in PolicyStatus}


def test_licenses_use_or_with_and_license_ref(examples: list[Example]) -> None:
    licenses = {r.license for e in examples for r in e.revision.releases}
    assert any(" OR " in lic for lic in licenses)
    assert any(" WITH " in lic for lic in licenses)
    assert any(re.search(r"\bLicenseRef-", lic) for lic in licenses)


def test_every_requirement_form_appears(examples: list[Example]) -> None:
    requirements = [
        d.requirement for e in examples for r in e.revision.releases for d in r.dependencies
    ]
    assert {_form(req) for req in requirements} >= {"exact", "[a,b)", "(a,b]", "[a,)", "(,b)"}
    # The bracketed exact form [x] parses to an exact requirement, so only the text shows it.
    assert any(
        re.fullmatch(r"\s*DEPENDENCY \S+ \[[^,\]]+\]", line) for e in examples for line in e.lines
    )


def test_exclusions_preferences_and_release_descriptions_appear(examples: list[Example]) -> None:
    releases = [r for e in examples for r in e.revision.releases]
    assert any(r.exclusions for r in releases)
    assert any(r.preferences for r in releases)
    assert any(r.description for r in releases)
    assert any(r.description is None for r in releases)


def test_a_pre_release_version_appears(examples: list[Example]) -> None:
    assert any("-" in str(r.version) for e in examples for r in e.revision.releases)


def test_a_journal_has_zero_releases(examples: list[Example]) -> None:
    assert any(not e.revision.releases for e in examples)


def test_comments_and_blank_lines_appear(examples: list[Example]) -> None:
    lines = [line for e in examples for line in e.lines]
    assert any(line.lstrip().startswith("#") for line in lines)
    assert any(line.startswith("  #") for line in lines)
    assert any(not line.strip() for line in lines)
