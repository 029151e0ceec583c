"""``nenjim storage audit|repair|compact|retain [--store URL] [--journal NAME] [--json]``.

Every command takes their store as every command does (``--store URL``,
else ``$NENJIM_STORE_URL``; ``--journal NAME``: see :mod:`nenjim.cli.store_options`)
and check it, on SQLite or PostgreSQL, against the resource catalogs it was
opened with: domain Persistence's, the LangGraph saver's, or
both (a store opened with neither is checked as Persistence's). None
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
- ``retain [--keep-last RESOURCE=N]... [--max-age RESOURCE=AGE]...`` purges
  what the catalog's declared retention policies, and those given, drop
  (one key per transaction, beside running writers), and prints
  ``retain OK: STORE: purged K key(s), E event(s)`` (exit 0); a policy for a
  resource the catalog lacks, or one its kind cannot follow, is bad usage.

``--json`` prints one JSON object instead (keys sorted, two-space indent, non-ASCII
escaped, as every ``--json`` of nenjim).
Exit codes: 0 clean, repaired, compacted or retained, 1 findings, a refused or failed repair, or a
damaged store (a storage table dropped; one line on stderr), 2 bad usage (a
malformed URL, ``memory:`` or a policy refused), 3 a store that is missing, unreachable or of
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
from nenjim.admin.retention import (
    Retention,
    RetentionPolicyError,
    RetentionReport,
    parse_duration,
    retain_storage,
)
from nenjim.admin.stores import redact
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
        _add_subcommand(commands, name, handler, summary)
    retain_command = _add_subcommand(
        commands,
        "retain",
        retain,
        "Purge what the retention policies drop: declared ones, and those given here.",
    )
    retain_command.add_argument(
        "--keep-last",
        action="append",
        default=[],
        metavar="RESOURCE=N",
        help="keep the last N entries of each stream of RESOURCE (repeatable)",
    )
    retain_command.add_argument(
        "--max-age",
        action="append",
        default=[],
        metavar="RESOURCE=AGE",
        help="purge the records of RESOURCE last written longer ago than AGE "
        "(30d, 12h, 90m, 45s, 2w; repeatable)",
    )


def _add_subcommand(
    commands: Any, name: str, handler: Callable[[argparse.Namespace], int], summary: str
) -> Any:
    sub = add_subcommand(commands, name, handler, summary)
    add_store_options(
        sub,
        store="an SQLite or PostgreSQL store",
        journal="the durable state in this Journal's store, which must hold it",
    )
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    return sub


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


def retain(args: argparse.Namespace) -> int:
    """Apply the retention policies; one line with what was purged."""
    store = selected_store(args)
    policies = _policies(args.keep_last, args.max_age)
    progress = progress_for(sys.stderr)
    try:
        report = _checked(lambda: retain_storage(store, policies, progress or silent))
    except RetentionPolicyError as error:
        raise CommandError(str(error), EXIT_USAGE, "usage") from None
    if args.json:
        print(dumps(_retention_json(store, report)))
    else:
        events = sum(purge.events for purge in report.purges)
        kept = f"; {len(report.skipped)} written meanwhile, kept" if report.skipped else ""
        purged = f"purged {len(report.purges)} key(s), {events} event(s)"
        print(f"retain OK: {redact(store)}: {purged}{kept}")
    return EXIT_OK


def _policies(keep_last: list[str], max_age: list[str]) -> dict[str, Retention]:
    """The policies of ``--keep-last`` and ``--max-age``, by resource; usage errors else."""
    policies: dict[str, Retention] = {}
    for option, values in (("--keep-last", keep_last), ("--max-age", max_age)):
        for value in values:
            resource, sign, amount = value.partition("=")
            if not sign or not resource:
                raise CommandError(
                    f"argument {option}: expected RESOURCE=VALUE, got {value!r}",
                    EXIT_USAGE,
                    "usage",
                )
            if resource in policies:
                raise CommandError(
                    f"argument {option}: a second policy for {resource}", EXIT_USAGE, "usage"
                )
            try:
                policies[resource] = (
                    Retention(keep_last=_count(amount))
                    if option == "--keep-last"
                    else Retention(max_age=parse_duration(amount))
                )
            except ValueError as error:
                raise CommandError(f"argument {option}: {error}", EXIT_USAGE, "usage") from None
    return policies


def _count(text: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise ValueError(f"not a count: {text!r}")
    return int(text)


def _retention_json(store: str, report: RetentionReport) -> dict[str, object]:
    return {
        "store": redact(store),
        "purges": [
            {
                "kind": purge.kind,
                "resource": purge.resource,
                "key": purge.key,
                "events": purge.events,
                "digest": purge.digest,
                "before": purge.before,
            }
            for purge in report.purges
        ],
        "skipped": [{"resource": resource, "key": key} for resource, key in report.skipped],
    }


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
