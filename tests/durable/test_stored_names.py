"""The Journal log stores fixed names, not module paths, and still reads the old ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from eventsourcing.utils import get_topic, resolve_topic

from journal_texts import Chain, write_revision
from nenjim.domain.journal.chain import CHAIN_TOPICS, EVENT_TOPICS, LEGACY_TOPICS, JournalChain
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref.log import JournalLog

NAMED = [
    JournalChain,
    JournalChain.Created,
    JournalChain.Snapshot,
    JournalChain.GenesisAccepted,
    JournalChain.SuccessorAccepted,
]


@pytest.mark.parametrize("cls", NAMED, ids=lambda c: c.__qualname__)
def test_each_stored_type_has_a_fixed_name_that_is_no_module_path(cls: type) -> None:
    topic = get_topic(cls)
    assert topic == f"nenjim.journal:{cls.__qualname__}"
    assert cls.__module__ not in topic
    assert resolve_topic(topic) is cls


@pytest.mark.parametrize("legacy", sorted(LEGACY_TOPICS))
def test_the_module_paths_older_logs_hold_still_name_the_classes(legacy: str) -> None:
    assert resolve_topic(legacy) is LEGACY_TOPICS[legacy]
    assert legacy in EVENT_TOPICS or legacy in CHAIN_TOPICS


def test_a_new_log_is_written_with_the_fixed_names(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chain = Chain("com.example.named")
    for version in ("20260101T000000Z", "20260201T000000Z"):
        write_revision(root, chain.artifact, version, chain.add(version))
    store = f"sqlite:///{tmp_path / 'log.db'}"
    assembly = build_journal(root, store=store)
    assembly.process.start()
    assembly.process.stop()
    log = JournalLog(store, create=False)
    try:
        notifications = log.recorder.select_notifications(start=1, limit=10)
    finally:
        log.close()
    assert [n.topic for n in notifications] == [
        "nenjim.journal:JournalChain.GenesisAccepted",
        "nenjim.journal:JournalChain.SuccessorAccepted",
    ]
    genesis = json.loads(notifications[0].state)
    assert genesis["originator_topic"] == "nenjim.journal:JournalChain"


def test_a_fresh_interpreter_reads_the_names_once_the_domain_is_imported() -> None:
    code = (
        "from eventsourcing.utils import resolve_topic\n"
        "import nenjim.domain.journal.chain as chain\n"
        "for topic in ['nenjim.journal:JournalChain.GenesisAccepted',\n"
        "              'domain.journal.chain:JournalChain.SuccessorAccepted']:\n"
        "    print(resolve_topic(topic).__qualname__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["JournalChain.GenesisAccepted", "JournalChain.SuccessorAccepted"]
