"""Eight writer threads ingesting in a process that kills itself mid-batch, and the checks
that nothing acknowledged was lost and nothing half-written was kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from journal_texts import Chain, Rel, content
from nenjim.cli import main
from nenjim.infrastructure.log import LogReader
from nenjim.journal.impl.ref.log import JournalLog

REPO = Path(__file__).resolve().parents[2]
HEAD = "20260101T000000Z"
REVISIONS = 400

_WRITERS = textwrap.dedent(
    """
    import sys, threading
    from nenjim.domain.journal.parser import parse_journal
    from nenjim.journal.impl.ref.ingestion import JournalIngestion
    from nenjim.journal.impl.ref.log import JournalLog
    from nenjim.projections.journal_chains import JournalChainsProjection

    texts = sys.stdin.read().split("\\x00")
    lock = threading.Lock()
    writers = [
        JournalIngestion(JournalLog(sys.argv[1]), JournalChainsProjection()) for _ in range(8)
    ]

    def write(i):
        for text in texts[i::8]:
            revision, _ = writers[i].ingest(parse_journal(text))
            with lock:  # one whole line per acknowledgement
                sys.stdout.write(f"ack {revision.digest}\\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    """
)


def ingest_until_killed(url: str, hooks: str) -> set[str]:
    """Run the writers in a process whose ``hooks`` (Python code, run first) kill it
    with ``SIGKILL``; the digests it acknowledged."""
    texts = [
        Chain(f"com.example.k{i}").add(HEAD, (Rel("1.0.0", content(i)),)) for i in range(REVISIONS)
    ]
    killed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(hooks) + _WRITERS, url],
        input="\x00".join(texts),
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr
    acknowledged = {
        line.split()[1] for line in killed.stdout.splitlines() if line.startswith("ack")
    }
    assert 0 < len(acknowledged) < REVISIONS
    return acknowledged


def assert_nothing_lost_nor_half_kept(url: str, acknowledged: set[str]) -> None:
    """Every acknowledged revision is stored, the batch being written is not (not even in
    part), ids are gap-free and the audit is clean."""
    log = JournalLog(url, create=False)
    try:
        stored = set(log.digest_claims())
        ids = [n.id for n in LogReader(log).notifications(0)]
    finally:
        log.close()
    assert acknowledged <= stored
    assert len(stored) < REVISIONS
    assert ids == list(range(1, len(stored) + 1))  # one event per stored revision
    assert main(["journal", "audit", "--store", url]) == 0
