"""The rebuild benchmark: projection rebuild from the log, in events per second.

``catch_up(JournalChainsProjection(), LogReader(JournalLog(url)))`` on the stores that
the start-up benchmark loads (2,000 artifacts x 5 revisions), SQLite and PostgreSQL.
The log is opened before the clock starts; each run replays into a fresh
projection. Two reference rows split the cost: reading the notification
rows only, and reading plus mapping them to domain events.

Run: ``python -m benchmarks.rebuild [--quick] [--no-profile]`` (it loads its
own stores first); ``benchmarks.run_all`` reuses the start-up benchmark's stores.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import partial

from benchmarks.common import (
    Options,
    machine_table,
    mark,
    median_seconds,
    parse_options,
    profile_call,
    profile_summary,
    rate_text,
    table,
)
from benchmarks.startup import loaded_stores
from nenjim.infrastructure.log import LogReader
from nenjim.journal.impl.ref.chain_log import catch_up
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection

TARGET = 50_000  # events/s
RUNS = 3
BUDGET_SECONDS = 20.0  # per measurement; stops further runs, never cuts one short
_PAGE = 500  # the projection's own page size


def _read_rows(log: JournalLog) -> int:
    count, position = 0, 0
    for _ in range(10_000_000 // _PAGE):  # bounded: far beyond any store used here
        page = log.recorder.select_notifications(
            start=position, limit=_PAGE, inclusive_of_start=False
        )
        count += len(page)
        if page:
            position = page[-1].id
        if len(page) < _PAGE:
            break
    return count


def _read_and_map(log: JournalLog) -> int:
    count, position = 0, 0
    for _ in range(10_000_000 // _PAGE):
        page = log.recorder.select_notifications(
            start=position, limit=_PAGE, inclusive_of_start=False
        )
        for notification in page:
            log.mapper.to_domain_event(notification)
        count += len(page)
        if page:
            position = page[-1].id
        if len(page) < _PAGE:
            break
    return count


def _rebuild(log: JournalLog) -> int:
    view = catch_up(JournalChainsProjection(), LogReader(log))
    return view.position


def measure_stores(
    options: Options, stores: Mapping[str, str], revisions: int
) -> tuple[list[list[str]], dict[str, float], str]:
    """Rows of the rebuild table, the rebuild rate per backend, and any profile summary."""
    runs = 1 if options.quick else RUNS
    rows: list[list[str]] = []
    rates: dict[str, float] = {}
    profile_text = ""
    for backend, url in stores.items():
        log = JournalLog(url)
        try:
            events = log.recorder.max_notification_id() or 0
            for label, action in (
                ("read notification rows only", _read_rows),
                ("read + map to domain events", _read_and_map),
                ("**`catch_up(JournalChainsProjection(), reader)`**", _rebuild),
            ):
                seconds = median_seconds(partial(action, log), runs, BUDGET_SECONDS)
                median = sorted(seconds)[len(seconds) // 2]
                rate = events / median
                rows.append([backend, label, f"{median:.3f}", rate_text(rate)])
            rates[backend] = rate  # the last row: the rebuild itself
            if _rebuild(log) != events:
                raise RuntimeError(f"the rebuild on {backend} did not reach notification {events}")
            if options.profile and backend == "SQLite" and rate < TARGET:
                stats = profile_call(partial(_rebuild, log))
                profile_text = profile_summary(
                    stats, f"rebuild, SQLite, {events:,} events ({revisions:,} revisions)"
                )
        finally:
            log.close()
    return rows, rates, profile_text


def report(options: Options, stores: Mapping[str, str], revisions: int) -> str:
    """Measure the rebuild on ``stores`` (already loaded) and return the report."""
    started = time.perf_counter()
    rows, rates, profile_text = measure_stores(options, stores, revisions)
    out = [
        table(
            f"Projection rebuild, {revisions:,} revisions in the log",
            ["store", "what", "seconds (median)", "events/s"],
            rows,
        ),
        table(
            "Rebuild target",
            ["target", "wanted", "measured", ""],
            [
                [
                    f"rebuild on {backend}",
                    f">= {TARGET:,} events/s",
                    f"{rate_text(rate)} events/s",
                    mark(rate >= TARGET),
                ]
                for backend, rate in rates.items()
            ],
        ),
        f"{1 if options.quick else RUNS} run(s) per row; the log is opened outside the clock "
        f"(benchmark took {time.perf_counter() - started:.1f} s).",
    ]
    if profile_text:
        out.append(profile_text)
    return "\n\n".join(out)


def run(options: Options) -> str:
    """Load fresh stores as the start-up benchmark does, then rebuild from them."""
    with loaded_stores(options) as (stores, revisions):
        return report(options, stores, revisions)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "rebuild")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
