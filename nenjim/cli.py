"""The ``nenjim`` command line: argument parsing and dispatch.

``nenjim journal verify|digest|log|show|release|new|audit`` and ``nenjim
projections rebuild``; see ``--help``. Exit
codes: 0 success, 1 a Journal error or something not found, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from eventsourcing.persistence import PersistenceError

from infrastructure.log import IncompatibleStoreError, UnsupportedStoreError
from journal.exception import InvalidValueError, JournalError
from journal.valuetypes import ArtifactCoordinate, JournalVersion, ReleaseVersion
from nenjim import cli_commands as run
from nenjim.cli_commands import EXIT_FAILURE, EXIT_USAGE, CommandError
from nenjim.cli_storage import add_storage_commands

_V = TypeVar("_V")
Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    """Run ``nenjim`` with ``argv`` (default: the process arguments); return the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # argparse exits for usage errors (2) and --help (0)
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    handler: Handler = args.handler
    try:
        return handler(args)
    except CommandError as error:
        return _fail(str(error), error.exit_code)
    except JournalError as error:
        return _fail(str(error), EXIT_FAILURE)
    except (UnsupportedStoreError, IncompatibleStoreError, PersistenceError) as error:
        return _fail(f"store: {error}", EXIT_FAILURE)


def build_parser() -> argparse.ArgumentParser:
    """The full ``nenjim`` argument parser."""
    parser = argparse.ArgumentParser(prog="nenjim", description="The nenjim command line.")
    groups = parser.add_subparsers(dest="group", metavar="COMMAND", required=True)
    journal = groups.add_parser(
        "journal", help="inspect a Journal root", description="Inspect a Journal root."
    )
    commands = journal.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)

    def add(
        name: str, handler: Handler, summary: str, *parents: argparse.ArgumentParser
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary, parents=list(parents))
        sub.set_defaults(handler=handler)
        return sub

    opens, coordinate, selection = _opening(), _coordinate(), _selection()
    add("verify", run.verify, "Load a Journal root; report its artifacts and heads.", opens)
    digest = add("digest", run.digest, "Print the sha256 digest of a file's exact bytes.")
    digest.add_argument("file", metavar="FILE")
    add("log", run.log, "Show the chain of an artifact.", opens, coordinate)
    add("show", run.show, "Show the latest (or as-of) revision.", opens, coordinate, selection)
    release = add(
        "release",
        run.release,
        "Show one release of the latest (or as-of) revision.",
        opens,
        coordinate,
        selection,
    )
    release.add_argument(
        "version", metavar="VERSION", type=_value(ReleaseVersion), help="release version"
    )
    new = add("new", run.new, "Draft a successor of the head revision.", opens, coordinate)
    new.add_argument("--stdout", action="store_true", help="print the draft, write no file")
    audit = add("audit", run.audit, "Re-check every logged revision of a store.")
    audit.add_argument("--store", metavar="URL", required=True, help="event store URL")
    projections = groups.add_parser(
        "projections", help="maintain read models", description="Maintain read models."
    )
    maintenance = projections.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    rebuild = maintenance.add_parser(
        "rebuild",
        help="Rebuild the Journal chain projection from the log.",
        description="Rebuild the Journal chain projection from the log.",
    )
    rebuild.add_argument("--store", metavar="URL", required=True, help="event store URL")
    rebuild.set_defaults(handler=run.rebuild)
    add_storage_commands(groups)
    return parser


def _opening() -> argparse.ArgumentParser:
    """ROOT and --store, shared by every subcommand that opens a Journal."""
    opens = argparse.ArgumentParser(add_help=False)
    opens.add_argument("root", metavar="ROOT", help="Journal root directory")
    opens.add_argument(
        "--store",
        metavar="URL",
        help="event store URL (default: $NENJIM_STORE_URL, else an SQLite file under var/)",
    )
    return opens


def _coordinate() -> argparse.ArgumentParser:
    """The COORD argument."""
    coordinate = argparse.ArgumentParser(add_help=False)
    coordinate.add_argument(
        "coordinate", metavar="COORD", type=_value(ArtifactCoordinate), help="artifact coordinate"
    )
    return coordinate


def _selection() -> argparse.ArgumentParser:
    """--as-of and --json, shared by ``show`` and ``release``."""
    selection = argparse.ArgumentParser(add_help=False)
    selection.add_argument(
        "--as-of",
        metavar="V",
        type=_value(JournalVersion),
        help="use the newest revision at or before Journal version V (YYYYMMDDTHHMMSSZ)",
    )
    selection.add_argument("--json", action="store_true", help="print stable JSON")
    return selection


def _value(factory: Callable[[str], _V]) -> Callable[[str], _V]:
    """An argparse ``type`` that reports a value type's syntax error as a usage error."""

    def convert(text: str) -> _V:
        try:
            return factory(text)
        except InvalidValueError as error:
            raise argparse.ArgumentTypeError(error.detail) from None

    return convert


def _fail(message: str, exit_code: int) -> int:
    print(f"nenjim: error: {message}", file=sys.stderr)
    return exit_code
