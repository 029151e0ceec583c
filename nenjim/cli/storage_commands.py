"""``nenjim storage audit|repair|compact [--store URL] [--journal NAME] [--json]``: durable state.

Both commands take their store as every command does (``--store URL``,
else ``$NENJIM_STORE_URL``; ``--journal NAME``: see :mod:`nenjim.cli.store_options`)
and check it, on SQLite or PostgreSQL, against the resource catalogs it was
opened with: domain Persistence's, the LangGraph saver's, or
both (a store opened with neither is checked as Persistence's). Neither
creates a store that does not exist.

- ``audit`` reads one consistent snapshot and prints one line per finding
  (exit 1), or ``audit OK: ...`` (exit 0).
- ``repair`` rebuilds every disagreeing row from the log in one transaction
  and prints one ``fixed:`` line per finding it resolved (exit 0); it
  refuses, changing nothing, while the log itself has findings, and prints
  those (exit 1).
- ``compact`` gives back the disk space of deleted and overwritten rows and
  leaves none of their bytes in the store's files (SQLite: ``VACUUM`` between
  two ``wal_checkpoint(TRUNCATE)``; PostgreSQL: ``VACUUM FULL`` of every table
  of the schema), and prints ``compact OK: STORE: BEFORE -> AFTER`` (exit 0),
  with a progress bar on a terminal's stderr.

``--json`` prints one JSON object instead (keys sorted, two-space indent, non-ASCII
escaped, as every ``--json`` of nenjim).
Exit codes: 0 clean, repaired or compacted, 1 findings, a refused or failed repair, or a
damaged store (a storage table dropped; one line on stderr), 2 bad usage (a
malformed URL or ``memory:``), 3 a store that is missing, unreachable or of
another schema version.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from nenjim.admin import silent
from nenjim.admin.audits import (
    AuditReport,
    StorageRepairReport,
    audit_storage,
    repair_storage,
)
from nenjim.admin.compaction import compact_storage
from nenjim.admin.errors import (
    IncompatibleStoreError,
    RepairFailedError,
    RepairRefusedError,
    StorageError,
    StoreNotFoundError,
    StoreUnavailableError,
    UnsupportedBackendError,
    is_driver_error,
)
from nenjim.admin.json_output import dumps
from nenjim.cli.exit import (
    EXIT_CODES_HELP,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_STORE,
    EXIT_USAGE,
    CommandError,
)
from nenjim.cli.progress import progress_for
from nenjim.cli.store_options import add_store_options, selected_store
from nenjim.cli.subcommand import add_subcommand

_T = TypeVar("_T")


def add_storage_commands(groups: Any) -> None:
    """Register the ``storage`` group on the top-level subparsers ``groups``."""
    storage = groups.add_parser(
        "storage",
        help="check durable state against its log, compact its store",
        description=(
            "Check durable state (domain Persistence, LangGraph threads) against its log; "
            "give back the space of deleted rows."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = storage.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    for name, handler, summary in (
        ("audit", audit, "Replay the log; report each inline row that disagrees with it."),
        ("repair", repair, "Rebuild the disagreeing inline rows from the log, all or nothing."),
        (
            "compact",
            compact,
            "Give back the space of deleted and overwritten rows; none of their bytes remain.",
        ),
    ):
        sub = add_subcommand(commands, name, handler, summary)
        add_store_options(
            sub,
            store="an SQLite or PostgreSQL store",
            journal="the durable state in this Journal's store, which must hold it",
        )
        sub.add_argument("--json", action="store_true", help="print one JSON object")


def audit(args: argparse.Namespace) -> int:
    """Audit the store; one line per finding."""
    store = selected_store(args)
    report = _checked(lambda: audit_storage(store))
    if args.json:
        print(dumps(report.as_json()))
    elif report.ok:
        print(f"audit OK: {report.summary()}")
    else:
        for line in report.lines():
            print(line)
    if not report.ok:
        raise CommandError(_verdict(report), EXIT_FAILURE, "audit")
    return EXIT_OK


def repair(args: argparse.Namespace) -> int:
    """Repair the store; refuse while the log itself has findings."""
    store = selected_store(args)
    try:
        result = _checked(lambda: repair_storage(store))
    except RepairRefusedError as refused:
        if args.json:
            print(dumps({"repaired": False, "refused": True, "audit": refused.report.as_json()}))
        else:
            for finding in refused.report.log_findings:
                print(finding.line())
        raise CommandError(str(refused), EXIT_FAILURE, "audit") from None
    if args.json:
        print(dumps(_repair_json(result)))
    elif not result.changed:
        print(f"repair: nothing to do: {result.before.summary()}")
    else:
        for line in result.before.lines():
            print(f"fixed: {line}")
        rewritten = ", ".join(f"{count} in {table}" for table, count in result.rewritten.items())
        print(f"repaired {result.before.store}: rewrote {rewritten}")
    return EXIT_OK


def compact(args: argparse.Namespace) -> int:
    """Compact the store; one line with its size before and after."""
    store = selected_store(args)
    progress = progress_for(sys.stderr)
    report = _checked(lambda: compact_storage(store, progress or silent))
    if args.json:
        print(dumps(report.as_json()))
    else:
        before, after = human_bytes(report.bytes_before), human_bytes(report.bytes_after)
        print(f"compact OK: {report.store}: {before} -> {after}")
    return EXIT_OK


def human_bytes(count: int) -> str:
    """``count`` bytes in decimal units, three significant digits: ``6.84 MB``, ``12.0 kB``."""
    if count < 1000:
        return f"{count} B"
    value = float(count)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if round(value) < 1000 or unit == "TB":
            break
    digits = 2 if round(value, 2) < 10 else 1 if round(value, 1) < 100 else 0
    return f"{value:.{digits}f} {unit}"


def _checked(action: Callable[[], _T]) -> _T:
    """Run ``action``; a store error becomes a one-line ``CommandError``."""
    try:
        return action()
    except UnsupportedBackendError as error:
        raise CommandError(f"argument --store: {error}", EXIT_USAGE, "usage") from None
    except (StoreNotFoundError, StoreUnavailableError, IncompatibleStoreError) as error:
        raise CommandError(str(error), EXIT_STORE, "store") from None
    except RepairFailedError as error:
        raise CommandError(str(error), EXIT_FAILURE) from None
    except RepairRefusedError:
        raise
    except StorageError as error:
        raise CommandError(f"store: {' '.join(str(error).split())}", EXIT_FAILURE) from None
    except Exception as error:
        if not is_driver_error(error):
            raise
        message = f"store: {' '.join(str(error).split())}"
        raise CommandError(message, EXIT_STORE, "store") from None


def _verdict(report: AuditReport) -> str:
    in_log = len(report.log_findings)
    if in_log:
        advice = f"{in_log} in the log itself, so a repair would refuse"
    else:
        advice = "none in the log itself: nenjim storage repair rebuilds them from the log"
    return f"{report.store}: {len(report.findings)} finding(s); {advice}"


def _repair_json(result: StorageRepairReport) -> dict[str, object]:
    return {
        "repaired": result.changed,
        "refused": False,
        "rewritten": dict(result.rewritten),
        "audit": result.before.as_json(),
    }
