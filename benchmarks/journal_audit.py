"""The audit benchmark: ``journal audit`` of a SQLite store, in MB of text per second,
and its peak resident memory.

A generated root (``benchmarks.sample_roots``) is loaded into a new SQLite
store by a cold start: 4,000 artifacts of 5 and of 25 revisions (20,000 and
100,000), and 20,000 artifacts of 5 (100,000). A cold start writes each
artifact's chain in a row; a log written by appends over time interleaves
artifacts, so a fourth store appends 200 artifacts' chains of 25 in turns (every
artifact's first revision, then every second one, ...: 5,000), where the text
parsed before a successor is never its predecessor. The audit
(``audit_journal_log``, what ``nenjim journal audit`` runs) runs in a child
process, which reports its seconds and its peak resident set (``VmHWM``, see
``benchmarks.memory``). The ceiling, measured in the same run and alternated
with the audit, is raw ``sqlite3`` reading the log's event rows and
``hashlib.sha256`` over each: no decoding, no parsing, no check. A third
column times the parser alone over the same texts (decoded beforehand), each
parsed after the text before it in the log (``parse_journal``, which reuses that
text's release blocks): the audit parses every text once, so on a loaded store it
cannot go faster; in a log appended in turns it gives each text its head's blocks
instead, which the previous text's are not, and so it can. A peak that stays put
from 20,000 to 100,000 revisions of the same artifacts is the audit's memory
not growing with N; the third store shows what it holds per artifact.

``python -m benchmarks.journal_audit [--quick] [--large]`` (``--large`` adds
300,000 revisions; a quick run audits 2,000 loaded and 1,000 appended in turns).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import mark, scratch_dir, table
from benchmarks.memory import imports_peak
from benchmarks.sample_roots import generate_root, generated_chains
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref.appender import JournalAppender

TARGET = 100.0  # MB of text per second
# (artifacts, revisions of each, appended in turns): 20,000 and 100,000 revisions over the
# same artifacts, and 100,000 over five times as many: what the audit holds grows with the
# artifacts alone; then a log that interleaves artifacts.
SHAPES = ((4_000, 5, False), (4_000, 25, False), (20_000, 5, False), (200, 25, True))
LARGE = ((60_000, 5, False),)
QUICK = ((400, 5, False), (40, 25, True))
RUNS = 3

_AUDIT = """
import sys, time
from nenjim.journal.impl.ref.audit import audit_journal_log
started = time.perf_counter()
report = audit_journal_log(sys.argv[1])
seconds = time.perf_counter() - started
if report.findings:
    raise SystemExit(f"the audit found {report.findings[0].log}")
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(peak, seconds, report.events, flush=True)
"""


def loaded_store(directory: Path, artifacts: int, revisions: int) -> tuple[Path, int]:
    """A SQLite store of ``artifacts`` artifacts of ``revisions`` revisions each (a
    generated root, cold-started); its file and how many revisions it holds."""
    root = directory / f"root-{artifacts}x{revisions}"
    written = generate_root(root, artifacts=artifacts, revisions=revisions, seed=1)
    path = directory / f"audit-{artifacts}x{revisions}.db"
    assembly = build_journal(root, store=f"sqlite:///{path}")
    assembly.process.start()
    assembly.process.stop()
    return path, written


def appended_in_turns(directory: Path, artifacts: int, revisions: int) -> tuple[Path, int]:
    """A SQLite store of the same generated chains appended in turns: every artifact's
    first revision, then every second one, and so on; its file and how many revisions."""
    path = directory / f"audit-{artifacts}x{revisions}-turns.db"
    chains = [
        texts for _, texts in generated_chains(artifacts=artifacts, revisions=revisions, seed=1)
    ]
    with JournalAppender(f"sqlite:///{path}", journal="bench_audit") as appender:
        for turn in range(revisions):
            appender.append(texts[turn][1] for texts in chains)
    return path, artifacts * revisions


def stored_texts(path: Path) -> list[str]:
    """Every revision text the store's log holds, in log order."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT state FROM journal_events ORDER BY rowid")
        return [json.loads(state)["text"] for (state,) in rows]


def parsing(texts: Sequence[str]) -> float:
    """Seconds to parse every text, in log order, with nothing else: what the audit's
    one parse a revision costs by itself."""
    started = time.perf_counter()
    for text in texts:
        parse_journal(text)
    return time.perf_counter() - started


def ceiling(path: Path) -> float:
    """Seconds to read every event row with raw ``sqlite3`` and SHA-256 each."""
    started = time.perf_counter()
    with sqlite3.connect(path) as connection:
        for (state,) in connection.execute("SELECT state FROM journal_events ORDER BY rowid"):
            hashlib.sha256(state).digest()
    return time.perf_counter() - started


def audit(path: Path, revisions: int) -> tuple[int, float]:
    """Peak resident bytes and seconds of the audit of ``path``, in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", _AUDIT, f"sqlite:///{path}"],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the audit child exited with {done.returncode}")
    kilobytes, seconds, events = done.stdout.split()
    if int(events) != revisions:
        raise RuntimeError(f"the audit read {events} events, expected {revisions}")
    return int(kilobytes) * 1024, float(seconds)


def run(shapes: Sequence[tuple[int, int, bool]]) -> str:
    """Measure each shape (artifacts, revisions of each, appended in turns); returns the
    report."""
    rows: list[list[str]] = []
    baseline = imports_peak()
    with scratch_dir() as directory:
        for artifacts, revisions, in_turns in shapes:
            build = appended_in_turns if in_turns else loaded_store
            path, written = build(directory, artifacts, revisions)
            parsed = stored_texts(path)
            texts = sum(len(text.encode()) for text in parsed)
            audits: list[tuple[int, float]] = []
            floors: list[float] = []
            parses: list[float] = []
            for _ in range(RUNS):  # alternated, so a busy moment hits each
                floors.append(ceiling(path))
                parses.append(parsing(parsed))
                audits.append(audit(path, written))
            del parsed
            seconds = statistics.median(s for _, s in audits)
            floor = statistics.median(floors)
            parse = statistics.median(parses)
            peak = max(p for p, _ in audits)
            rate = texts / 1e6 / seconds
            rows.append(
                [
                    f"{artifacts:,}",
                    f"{written:,}",
                    "appended in turns" if in_turns else "loaded",
                    f"{texts / 1e6:.1f} MB",
                    f"{seconds:.2f} s",
                    f"{rate:.1f} MB/s",
                    f"{texts / 1e6 / floor:.0f} MB/s",
                    f"{seconds / floor:.1f}x",
                    f"{texts / 1e6 / parse:.1f} MB/s",
                    f"{peak / 2**20:.0f} MiB",
                    f"{(peak - baseline) / 2**20:.0f} MiB",
                    f">= {TARGET:.0f} MB/s",
                    mark(rate >= TARGET),
                ]
            )
    imports = f"{baseline / 2**20:.0f} MiB"
    return table(
        f"journal audit of a SQLite store (median of {RUNS}; imports alone: {imports})",
        [
            "artifacts",
            "revisions",
            "log",
            "texts",
            "audit",
            "audited",
            "ceiling (read + SHA-256)",
            "audit / ceiling",
            "parsing alone",
            "peak RSS",
            "added",
            "wanted",
            "met",
        ],
        rows,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description="journal audit: throughput and peak memory")
    parser.add_argument("--quick", action="store_true", help="audit 3,000 revisions")
    parser.add_argument("--large", action="store_true", help="also audit 300,000 revisions")
    args = parser.parse_args(argv)
    print(run(QUICK if args.quick else SHAPES + (LARGE if args.large else ())))


if __name__ == "__main__":
    main()
