"""The Journal served from its store: bounded cache, catch-up of what others append, lifecycle."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from journal_services import durable_url

from journal_texts import Chain, Rel, content, write_chain
from nenjim.journal.exception import JournalStoreError, LifecycleError
from nenjim.journal.impl.ref import StoredJournal, build_journal

V1, V2 = "20260101T000000Z", "20260201T000000Z"


def _loaded(tmp_path: Path, store_url: str, artifacts: int) -> tuple[Path, str]:
    """A root of ``artifacts`` one-revision chains, loaded into a durable store; both."""
    root = tmp_path / "root"
    root.mkdir()
    for n in range(artifacts):
        chain = Chain(f"com.example.a{n:02d}")
        chain.add(V1, (Rel("1.0.0", content(n)),))
        write_chain(root, chain)
    url = durable_url(store_url, tmp_path)
    assembly = build_journal(root, store=url)
    assembly.process.start()
    assembly.process.stop()
    return root, url


def test_the_cache_never_holds_more_chains_than_its_size(
    tmp_path: Path, journal_store: str
) -> None:
    root, url = _loaded(tmp_path, journal_store, 12)
    served = StoredJournal(url, root=root, cache_size=5)
    served.start()
    try:
        for n in range(12):
            latest = served.latest(f"com.example.a{n:02d}")
            assert latest is not None
            assert str(latest.coordinate) == f"com.example.a{n:02d}"
            assert served.cached <= 5
        assert served.cached == 5
        again = served.latest("com.example.a00")  # dropped: read from the store again
        assert again is not None
        assert str(again.version) == V1
        assert served.cached == 5
    finally:
        served.stop()


def test_a_revision_another_process_appends_is_answered_after_a_poll(
    tmp_path: Path, journal_store: str
) -> None:
    root, url = _loaded(tmp_path, journal_store, 2)
    served = StoredJournal(url, root=root)
    served.start()
    try:
        assert served.latest("com.example.a00") is not None
        chain = Chain("com.example.a00")
        chain.add(V1, (Rel("1.0.0", content(0)),))
        chain.add(V2, (Rel("1.0.0", content(0)), Rel("1.1.0", content(7))))
        write_chain(root, chain)
        script = textwrap.dedent(
            f"""
            from nenjim.journal.impl.ref import build_journal
            assembly = build_journal({str(root)!r}, store={url!r})
            assembly.process.start()
            assembly.process.stop()
            """
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        before = served.latest("com.example.a00")
        assert before is not None
        assert str(before.version) == V1  # the answers move only when it catches up
        assert served.poll() == 1
        after = served.latest("com.example.a00")
        assert after is not None
        assert str(after.version) == V2
        assert after.predecessor == before.digest
        assert served.poll() == 0
    finally:
        served.stop()


def test_queries_need_a_running_journal_and_start_is_single_use(
    tmp_path: Path, journal_store: str
) -> None:
    root, url = _loaded(tmp_path, journal_store, 1)
    served = StoredJournal(url, root=root)
    with pytest.raises(LifecycleError, match="not started"):
        served.latest("Not A Coordinate")  # the lifecycle is checked first
    served.start()
    with pytest.raises(LifecycleError, match="single-use"):
        served.start()
    served.stop()
    with pytest.raises(LifecycleError, match="stopped"):
        served.coordinates()
    served.stop()  # idempotent


def test_a_store_that_holds_no_journal_fails_the_start(tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    served = StoredJournal(missing)
    with pytest.raises(JournalStoreError) as raised:
        served.start()
    assert len(str(raised.value).splitlines()) == 1
    with pytest.raises(LifecycleError, match="failed to start"):
        served.coordinates()
    assert not (tmp_path / "missing.db").exists()
