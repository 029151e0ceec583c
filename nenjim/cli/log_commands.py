"""``nenjim log export|import``: move a store's logs to another store, through a file.

- ``export --store URL [--out FILE] [--journal NAME]`` writes every log of
  the store (the Journal's and the storage log, whichever it holds) in the
  export format of ``docs/log.md``, to standard output or, with ``--out``,
  to FILE (written beside it under a temporary name, then renamed: an
  interrupted export never leaves a partial FILE).
- ``import --store URL FILE`` (``-``: standard input) checks the whole file,
  audits its logs, copies them into the empty store in one transaction,
  audits the store and rebuilds every projection.

``--json`` prints one JSON object (for ``export`` only with ``--out``: without
it, standard output is the export). Exit codes: 0 done; 1 a damaged file, a
log that does not audit, an unreadable stored row, a file that cannot be
read or written; 2 bad usage (``memory:``, a malformed URL); 3 a store that
is missing (export), not empty (import), unreachable or of another schema
version.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

from nenjim.admin.errors import (
    ExportFormatError,
    ImportAuditError,
    ImportRefusedError,
    UnreadableEventError,
    is_driver_error,
)
from nenjim.admin.json_output import dumps
from nenjim.admin.stores import describe_identity, redact
from nenjim.admin.transfer import (
    ExportSummary,
    ImportReport,
    export_store,
    import_store,
    open_log_store,
)
from nenjim.cli.exit import (
    EXIT_CODES_HELP,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_STORE,
    CommandError,
)
from nenjim.cli.progress import progress_for
from nenjim.cli.store_options import add_store_options, required_store
from nenjim.cli.subcommand import add_subcommand

_T = TypeVar("_T")
STDIN = "-"


def add_log_commands(groups: Any) -> None:
    """Register the ``log`` group on the top-level subparsers ``groups``."""
    group = groups.add_parser(
        "log",
        help="move a store's logs to another store",
        description="Move a store's logs (the Journal's and durable state's) to another store.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    exporting = _command(
        commands,
        "export",
        export,
        "Write every log of a store, event by event, to a file.",
        journal="export this Journal's log, and check that the store holds it",
    )
    exporting.add_argument(
        "--out", metavar="FILE", help="write FILE (replaced when complete), not standard output"
    )
    importing = _command(
        commands,
        "import",
        import_,
        "Import an export into an empty store: check, copy in one transaction, audit, rebuild.",
    )
    importing.add_argument("file", metavar="FILE", help="an export ('-': standard input)")


def _command(
    commands: Any,
    name: str,
    handler: Callable[[Any], int],
    summary: str,
    *,
    journal: str | None = None,
) -> Any:
    sub = add_subcommand(commands, name, handler, summary)
    add_store_options(sub, store="an SQLite or PostgreSQL store", journal=journal)
    sub.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout; errors as one JSON object on stderr",
    )
    return sub


def export(args: argparse.Namespace) -> int:
    """Export the store's logs to standard output or to ``--out``."""
    store = _store(args)
    progress = progress_for(sys.stderr)
    if args.out is None:
        out = sys.stdout.buffer
        _checked(lambda: export_store(store, out, journal=args.journal, progress=progress))
        sys.stdout.buffer.flush()
        return EXIT_OK
    path = Path(args.out)
    with _replacing(path) as stream:
        summary = _checked(
            lambda: export_store(store, stream, journal=args.journal, progress=progress)
        )
    if args.json:
        print(dumps(_export_json(store, path, summary)))
    else:
        counts = ", ".join(f"{log} {count}" for log, count in summary.events.items())
        print(f"exported {summary.total} events from {redact(store)} to {path}: {counts}")
    return EXIT_OK


def import_(args: argparse.Namespace) -> int:
    """Import an export into the empty store."""
    store = _store(args)
    with _source(args.file) as (stream, name):
        report = _checked(
            lambda: import_store(store, stream, name=name, progress=progress_for(sys.stderr))
        )
    if args.json:
        print(dumps(_import_json(store, name, report)))
        return EXIT_OK
    summary = report.summary
    counts = ", ".join(f"{log} {count}" for log, count in summary.events.items())
    identity = next((s.identity for s in summary.logs if s.identity is not None), None)
    owner = "" if identity is None else f" ({describe_identity(identity)})"
    print(f"imported {summary.total} events into {redact(store)}: {counts}{owner}")
    if report.renumbered:
        print(
            "storage log ids renumbered 1, 2, 3, ... in their order "
            "(SQLite numbers its storage log without gaps)"
        )
    if report.journal_audit is not None:
        audit = report.journal_audit
        print(
            f"journal audit OK: {audit.events} events, {audit.live['revisions']} revisions of "
            f"{audit.live['artifacts']} artifacts"
        )
    if report.storage_audit is not None:
        live = ", ".join(f"{count} {kind}" for kind, count in report.storage_audit.live.items())
        print(f"storage audit OK: {report.storage_audit.events} events, live {live}")
    for line in report.rebuilt:
        print(f"rebuilt {line}")
    return EXIT_OK


def _store(args: argparse.Namespace) -> str:
    """The store URL, checked before any file is touched (``memory:`` is a usage error)."""
    store = required_store(args)
    open_log_store(store)
    return store


def _checked(action: Callable[[], _T]) -> _T:
    """Run ``action``; its refusals become one-line ``CommandError`` objects."""
    try:
        return action()
    except ExportFormatError as error:
        raise CommandError(f"{error}; nothing was written", EXIT_FAILURE, "failure") from None
    except ImportRefusedError as error:
        kind = "audit" if error.audit else "failure"
        raise CommandError(str(error), EXIT_FAILURE, kind) from None
    except ImportAuditError as error:
        raise CommandError(str(error), EXIT_FAILURE, "audit") from None
    except UnreadableEventError as error:
        raise CommandError(
            f"the log in the store is inconsistent: {error}", EXIT_FAILURE, "integrity"
        ) from None
    except Exception as error:
        if not is_driver_error(error):
            raise
        message = f"store: {' '.join(str(error).split())}"
        raise CommandError(message, EXIT_STORE, "store") from None


@contextmanager
def _replacing(path: Path) -> Iterator[IO[bytes]]:
    """A new file beside ``path``, renamed to ``path`` once the block ends normally."""
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".partial"
        )
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as a file the user created: mkstemp makes 0600
        with os.fdopen(descriptor, "wb") as stream:
            yield stream
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def _source(argument: str) -> Iterator[tuple[IO[bytes], str]]:
    """The file to import, seekable (standard input is copied to a temporary file first)."""
    if argument == STDIN:
        with tempfile.TemporaryFile() as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool)
            spool.seek(0)
            yield spool, "standard input"
        return
    try:
        stream = open(argument, "rb")  # noqa: SIM115 - closed below, after the import
    except OSError as error:
        raise CommandError(f"cannot read {argument}: {error.strerror}") from None
    with stream:
        yield stream, argument


def _export_json(store: str, path: Path, summary: ExportSummary) -> dict[str, object]:
    return {
        "store": redact(store),
        "out": str(path),
        "events": dict(summary.events),
        "logs": [{"log": s.log, "identity": s.identity} for s in summary.logs],
        "lines": summary.lines,
        "sha256": summary.sha256,
    }


def _import_json(store: str, name: str, report: ImportReport) -> dict[str, object]:
    journal = report.journal_audit
    storage = report.storage_audit
    return {
        "store": redact(store),
        "file": name,
        "events": dict(report.summary.events),
        "logs": [{"log": s.log, "identity": s.identity} for s in report.summary.logs],
        "sha256": report.summary.sha256,
        "renumbered": report.renumbered,
        "journal_audit": None if journal is None else {"events": journal.events, **journal.live},
        "storage_audit": None if storage is None else storage.as_json(),
        "rebuilt": list(report.rebuilt),
    }
