"""The Journal on durable stores: restart, conflicts with the log, atomic start, two processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, journal_text, write_chain, write_revision
from nenjim.journal.exception import JournalChainError, JournalConflictError
from nenjim.journal.impl.ref import JournalAssembly, build_journal
from nenjim.journal.impl.ref.log import JournalLog

A = "com.example.alpha"
B = "com.example.beta"
V1, V2, V3 = "20260101T000000Z", "20260201T000000Z", "20260301T000000Z"


def _events(store: str) -> int:
    log = JournalLog(store)
    try:
        return log.recorder.max_notification_id() or 0
    finally:
        log.close()


def _started(root: Path, store: str) -> JournalAssembly:
    assembly = build_journal(root, store=store)
    assembly.process.start()
    return assembly


def _alpha(root: Path, versions: tuple[str, ...] = (V1, V2)) -> Chain:
    chain = Chain(A)
    for version in versions:
        chain.add(version, (Rel("1.0.0", content(1)),))
    write_chain(root, chain)
    return chain


def test_restart_keeps_the_whole_history_when_the_files_are_gone(
    tmp_path: Path, durable_store_url: str
) -> None:
    chain = _alpha(tmp_path)
    first = _started(tmp_path, durable_store_url)
    revisions = first.service.revisions(A)
    first.process.stop()
    for path in (tmp_path / A).iterdir():
        path.unlink()
    again = _started(tmp_path, durable_store_url)
    assert again.service.revisions(A) == revisions
    assert [r.text for r in again.service.revisions(A)] == chain.texts
    again.process.stop()


def test_restart_on_the_same_files_appends_nothing(tmp_path: Path, durable_store_url: str) -> None:
    _alpha(tmp_path)
    _started(tmp_path, durable_store_url).process.stop()
    events = _events(durable_store_url)
    _started(tmp_path, durable_store_url).process.stop()
    assert _events(durable_store_url) == events == 2


def test_a_restart_on_the_same_files_serves_their_texts(
    tmp_path: Path, durable_store_url: str
) -> None:
    chain = _alpha(tmp_path)
    _started(tmp_path, durable_store_url).process.stop()
    again = _started(tmp_path, durable_store_url)
    # Taken from the files' bytes, which the restart only compared with the stored digests.
    assert [r.text for r in again.service.revisions(A)] == chain.texts
    again.process.stop()


def test_restart_appends_a_new_successor(tmp_path: Path, durable_store_url: str) -> None:
    chain = _alpha(tmp_path)
    _started(tmp_path, durable_store_url).process.stop()
    write_revision(tmp_path, A, V3, chain.add(V3, (Rel("1.0.0", content(1)),)))
    again = _started(tmp_path, durable_store_url)
    assert [str(r.version) for r in again.service.revisions(A)] == [V1, V2, V3]
    again.process.stop()


def test_a_file_differing_from_the_logged_text_is_a_conflict(
    tmp_path: Path, durable_store_url: str
) -> None:
    chain = _alpha(tmp_path)
    _started(tmp_path, durable_store_url).process.stop()
    path = tmp_path / A / f"{V2}.journal"
    path.write_text(chain.texts[1] + "# changed after it was logged\n")
    assembly = build_journal(tmp_path, store=durable_store_url)
    with pytest.raises(JournalConflictError) as caught:
        assembly.process.start()
    assert caught.value.path == path
    assert _events(durable_store_url) == 2


def test_a_failed_start_appends_nothing(tmp_path: Path, durable_store_url: str) -> None:
    _alpha(tmp_path)
    write_revision(tmp_path, B, V1, journal_text(B, V1, predecessor=content(4)))
    assembly = build_journal(tmp_path, store=durable_store_url)
    with pytest.raises(JournalChainError):
        assembly.process.start()
    assert _events(durable_store_url) == 0


_PROCESS = """
import json, sys
from nenjim.journal.impl.ref import build_journal
assembly = build_journal(sys.argv[1], store=sys.argv[2])
sys.stdin.readline()  # start together
assembly.process.start()
service = assembly.service
print(json.dumps({str(c): [str(r.digest) for r in service.revisions(c)]
                  for c in service.coordinates()}))
assembly.process.stop()
"""


def test_two_processes_starting_together_agree_without_forks_or_duplicates(
    tmp_path: Path, durable_store_url: str
) -> None:
    for index in range(30):
        chain = Chain(f"com.example.a{index}")
        for version in (V1, V2, V3):
            chain.add(version, (Rel("1.0.0", content(index)),))
        write_chain(tmp_path, chain)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _PROCESS, str(tmp_path), durable_store_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = [process.communicate(timeout=120) for process in processes]
    for process, (_, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, err
    views = [json.loads(out) for out, _ in results]
    assert views[0] == views[1]
    assert len(views[0]) == 30
    assert all(len(digests) == 3 for digests in views[0].values())
    assert _events(durable_store_url) == 90
