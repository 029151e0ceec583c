"""docs/journal-format.md: every example is a real revision or a real error.

``journal`` blocks must parse and load together as one root (their
``PREDECESSOR`` digests link them); each ``journal-invalid`` block must fail
with exactly the message of the ``error`` block after it. The page must show
every keyword the parser knows, every policy status and every form of
requirement, and name every chain rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_blocks import REPOSITORY, Block, blocks

from nenjim.domain.journal import parser
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.exception import ChainViolation, JournalError
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.valuetypes import PolicyStatus

PAGE = REPOSITORY / "docs" / "journal-format.md"
BLOCKS = blocks(PAGE)
EXAMPLES = [b for b in BLOCKS if b.info == "journal"]
INVALID = [b for b in BLOCKS if b.info == "journal-invalid"]


def _error_after(block: Block) -> str:
    following = BLOCKS[BLOCKS.index(block) + 1]
    assert following.info == "error", f"{block.where}: no error block follows"
    return following.text.strip("\n")


@pytest.mark.parametrize("block", EXAMPLES, ids=lambda b: b.where)
def test_each_example_parses(block: Block) -> None:
    parse_journal(block.text)


def test_the_examples_load_together_as_one_root(tmp_path: Path) -> None:
    for block in EXAMPLES:
        revision = parse_journal(block.text)
        path = tmp_path / str(revision.coordinate) / f"{revision.version}.journal"
        path.parent.mkdir(exist_ok=True)
        path.write_text(block.text)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    loaded = [r for c in assembly.service.coordinates() for r in assembly.service.revisions(c)]
    assert len(loaded) == len(EXAMPLES) >= 5


@pytest.mark.parametrize("block", INVALID, ids=lambda b: b.where)
def test_each_invalid_example_fails_with_the_message_shown(block: Block) -> None:
    with pytest.raises(JournalError) as caught:
        parse_journal(block.text)
    assert str(caught.value) == _error_after(block)


def test_the_examples_show_every_keyword_status_and_requirement_form() -> None:
    texts = [parse_journal(b.text) for b in EXAMPLES]
    keywords = {
        line.split()[0]
        for revision in texts
        for line in revision.text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    assert keywords == set(parser._KNOWN)
    statuses = {r.policy.status for t in texts for r in t.releases} | {
        t.policy.status for t in texts
    }
    assert statuses == set(PolicyStatus)
    requirements = {str(d.requirement) for t in texts for r in t.releases for d in r.dependencies}
    shapes = {
        (s[0], s[-1], s.startswith(("[,", "(,")), s.endswith((",)", ",]"))) for s in requirements
    }
    assert ("[", ")", False, False) in shapes  # [a,b)
    assert ("(", "]", False, False) in shapes  # (a,b]
    assert any(s[2] for s in shapes)
    assert any(s[3] for s in shapes)
    assert any(s[0].isdigit() for s in shapes)  # exact


def test_every_chain_rule_is_named() -> None:
    page = PAGE.read_text()
    for violation in ChainViolation:
        assert f"| `{violation.name}` | `{violation.value}` |" in page
