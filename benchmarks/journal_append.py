"""The append benchmark: revisions appended to a durable Journal without a root.

Bulk: ``JournalAppender.append`` of texts in calls of ``BULK_CALL`` texts
(artifacts of 5 revisions each, genesis first) into a fresh store, against
the same revisions loaded by a root's cold start (``build_journal(root,
store=URL).start()`` on a fresh store, the files page-cached): both parse,
decide and append every revision, the start also reads and hashes the files.
The two alternate, ``RUNS`` times each; medians are reported. On SQLite, and
on PostgreSQL (loopback) when it answers; the goal is SQLite's.

Single appends with group commit: ``append([text])`` of one successor per
call, by 1 and 8 threads sharing one appender (each thread its own
artifacts), against one-row ``INSERT`` + ``COMMIT`` by hand with ``sqlite3``
(WAL, ``synchronous=FULL``) at the same thread counts; passes alternate.

Run: ``python -m benchmarks.journal_append [--quick] [--no-profile]``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from benchmarks.common import (
    Options,
    Rate,
    Step,
    Timing,
    chain_texts,
    machine_table,
    mark,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
    profile_call,
    profile_summary,
    ratio_text,
    run_pass,
    scratch_dir,
    table,
)
from benchmarks.ingest import raw_sqlite_writers
from nenjim.journal.impl.ref import JournalAppender, build_journal

TARGET = 10_000  # bulk revisions/s on SQLite
PER_ARTIFACT = 5
FULL_ARTIFACTS = 10_000  # 50,000 revisions
QUICK_ARTIFACTS = 600
BULK_CALL = 10_000  # texts per append call
RUNS = 3
FULL_TIMING = Timing(runs=3, seconds=3.0, warmup=0.5)
QUICK_TIMING = Timing(runs=3, seconds=0.5, warmup=0.2)
WRITERS = (1, 8)
SINGLE_CAPACITY = 20_000  # successors prepared per writer thread


def bulk_texts(artifacts: int) -> list[str]:
    """``artifacts`` chains of ``PER_ARTIFACT`` texts, artifact by artifact."""
    return [
        text
        for index in range(artifacts)
        for text in chain_texts(f"com.bench.append.a{index:07d}", PER_ARTIFACT)
    ]


def write_root(root: Path, texts: Sequence[str]) -> None:
    """The texts as a Journal root (one file per revision, named after its version)."""
    for text in texts:
        header = text.split("\n", 3)
        coordinate = header[1].removeprefix("ARTIFACT ")
        version = header[2].removeprefix("JOURNAL_VERSION ")
        directory = root / coordinate
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{version}.journal").write_bytes(text.encode("utf-8"))


def append_bulk(store: str, texts: Sequence[str]) -> int:
    """Append every text in calls of ``BULK_CALL``; how many were new."""
    appended = 0
    with JournalAppender(store, journal="bench") as appender:
        for start in range(0, len(texts), BULK_CALL):
            appended += len(appender.append(texts[start : start + BULK_CALL]))
    return appended


def start_root(store: str, root: Path) -> int:
    """A cold start of ``root`` on ``store``; how many revisions it holds."""
    assembly = build_journal(root, store=store)
    assembly.process.start()
    try:
        return sum(len(assembly.service.revisions(c)) for c in assembly.service.coordinates())
    finally:
        assembly.process.stop()


@contextmanager
def fresh_store(backend: str, directory: Path, tag: str) -> Iterator[str]:
    """The URL of a fresh store of ``backend`` (``sqlite`` or ``postgresql``)."""
    if backend == "sqlite":
        yield f"sqlite://{directory / f'{tag}.db'}"
        return
    with pg_schema(tag) as schema:
        yield pg_store_url(schema)


def bulk_rows(
    backend: str, directory: Path, texts: Sequence[str], root: Path
) -> tuple[list[list[str]], float]:
    """The bulk rows of ``backend``, appends and root starts alternating; the median
    append rate."""
    appends: list[float] = []
    starts: list[float] = []
    for run in range(RUNS):
        with fresh_store(backend, directory, f"bulk{run}") as store:
            began = time.perf_counter()
            assert append_bulk(store, texts) == len(texts)
            appends.append(len(texts) / (time.perf_counter() - began))
        with fresh_store(backend, directory, f"start{run}") as store:
            began = time.perf_counter()
            assert start_root(store, root) == len(texts)
            starts.append(len(texts) / (time.perf_counter() - began))
    append = Rate(tuple(appends), False)
    start = Rate(tuple(starts), False)
    goal = backend == "sqlite"
    rows = [
        [
            f"{backend}: bulk append ({BULK_CALL:,} texts a call)",
            append.cell(),
            ratio_text(append.median / start.median),
            f">= {TARGET:,}/s" if goal else "",
            mark(append.median >= TARGET) if goal else "",
        ],
        [f"{backend}: root cold start (baseline)", start.cell(), "1.00x", "", ""],
    ]
    return rows, append.median


@contextmanager
def single_writers(store: str, threads: int) -> Iterator[list[Step]]:
    """``threads`` steps sharing one appender, each appending successors of its own artifact."""
    with JournalAppender(store, journal="bench") as appender:
        steps = []
        for thread in range(threads):
            texts = chain_texts(f"com.bench.single.t{thread}", SINGLE_CAPACITY)
            appender.append(texts[:1])
            steps.append(_single_step(appender, texts[1:]))
        yield steps


def _single_step(appender: JournalAppender, texts: list[str]) -> Step:
    remaining = iter(texts)

    def step() -> bool:
        text = next(remaining, None)
        if text is None:
            return False
        appender.append([text])
        return True

    return step


def single_rows(directory: Path, timing: Timing) -> list[list[str]]:
    """Single appends at 1 and 8 writers against raw one-row commits, passes alternating."""
    rows = []
    for threads in WRITERS:
        ours: list[float] = []
        raw: list[float] = []
        exhausted = False
        with ExitStack() as stack:
            store = f"sqlite://{directory / f'single-{threads}.db'}"
            our_steps = stack.enter_context(single_writers(store, threads))
            raw_path = directory / f"raw-{threads}.db"
            raw_steps = stack.enter_context(raw_sqlite_writers(raw_path, threads, quick=False))
            run_pass(our_steps, timing.warmup)
            run_pass(raw_steps, timing.warmup)
            for _ in range(timing.runs):
                ours_pass = run_pass(our_steps, timing.seconds)
                ours.append(ours_pass.rate)
                exhausted |= ours_pass.exhausted
                raw.append(run_pass(raw_steps, timing.seconds).rate)
        our_rate = Rate(tuple(ours), exhausted)
        raw_rate = Rate(tuple(raw), False)
        rows.append(
            [
                str(threads),
                our_rate.cell(),
                raw_rate.cell(),
                ratio_text(our_rate.median / raw_rate.median),
            ]
        )
    return rows


def run(options: Options) -> str:
    """Every table of this benchmark, as Markdown."""
    artifacts = QUICK_ARTIFACTS if options.quick else FULL_ARTIFACTS
    timing = QUICK_TIMING if options.quick else FULL_TIMING
    texts = bulk_texts(artifacts)
    out = []
    with scratch_dir() as directory:
        root = directory / "root"
        write_root(root, texts)
        rows, rate = bulk_rows("sqlite", directory, texts, root)
        if pg_problem() is None:
            rows += bulk_rows("postgresql", directory, texts, root)[0]
        out.append(
            table(
                f"Bulk append: {len(texts):,} revisions of {artifacts:,} artifacts "
                f"(median of {RUNS}, alternating)",
                ["what", "revisions/s", "vs root start", "goal", ""],
                rows,
            )
        )
        out.append(
            table(
                "Single appends with group commit on SQLite: one revision a call, threads "
                f"sharing one appender (median of {timing.runs} passes of {timing.seconds} s)",
                ["writers", "appends/s", "raw INSERT+COMMIT/s", "ours / raw"],
                single_rows(directory, timing),
            )
        )
        if options.profile and rate < TARGET:
            stats = profile_call(lambda: append_bulk(f"sqlite://{directory / 'p.db'}", texts))
            out.append(profile_summary(stats, f"bulk append of {len(texts):,} revisions"))
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "append")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
