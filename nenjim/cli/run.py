"""The ``nenjim`` commands: argument parsing, dispatch and the last safety net.

``nenjim journal verify|digest|log|show|release|new|append|audit|move-root|repair``, ``nenjim
projections status|rebuild``, ``nenjim storage audit|repair`` and ``nenjim log
export|import``; see ``--help``. Every command takes ``--json``, and ``-v``/``-q``
for more or less of the log on stderr (:mod:`nenjim.cli.logs`). Exit
codes are in :mod:`nenjim.cli.exit` and in ``nenjim --help``: whatever goes
wrong ends as one line on stderr (one JSON object with ``--json``) and a
documented code, never as a traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, NoReturn

from nenjim.admin.stores import STORE_URL_VARIABLE, redact
from nenjim.cli import journal_commands
from nenjim.cli.classify import classify
from nenjim.cli.exit import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES_HELP,
    EXIT_USAGE,
    Failure,
    UsageError,
    report,
)
from nenjim.cli.log_commands import add_log_commands
from nenjim.cli.logs import add_verbosity, chosen_level, shown
from nenjim.cli.projection_commands import add_projection_commands
from nenjim.cli.storage_commands import add_storage_commands
from nenjim.cli.store_options import add_store_options, chosen_store
from nenjim.cli.subcommand import value_argument
from nenjim.cli.transparency_commands import (
    add_audit_options,
    add_journal_commands,
    add_key_commands,
    add_serve_command,
)
from nenjim.cli.witness_commands import add_witness_command
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion, ReleaseVersion

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

Handler = Callable[[argparse.Namespace], int]

STORE_HELP = f"""stores:
  Every command that takes a store takes --store URL, else ${STORE_URL_VARIABLE}.
  Without either, verify, log, show, release and new work in memory: they
  create no store and no file (new writes only its draft); every other
  command needs one. A store is always one you name:
    memory:                        in this process only
    sqlite:///abs/path.db          an SQLite file (sqlite:relative.db: from the
                                   working directory)
    postgresql://user:pw@host:port/db?schema=S&pool_size=N&max_overflow=M
                                   plus any libpq parameter (sslmode=...,
                                   connect_timeout=..., application_name=...);
                                   needs the postgres extra
  A store belongs to one Journal: the first root whose start succeeds on it
  (its resolved path), or the name given by --journal NAME to every root that
  shares it on purpose. Another Journal is refused; a root that moved gets
  its store back with journal move-root --from OLD --to NEW, refused while
  OLD still holds Journal files. On PostgreSQL a named
  Journal lives in schema journal_NAME unless ?schema= says otherwise.
  --journal NAME selects that Journal's store on every command that takes
  it (all but log import), and the store must hold it."""


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises its usage errors instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, prog=self.prog, usage=self.format_usage())

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse drops a failed write of --help or --version; a closed pipe must
        # show, as for every other command (exit 141, nothing printed).
        if message:
            (file or sys.stderr).write(message)


def run(arguments: Sequence[str]) -> int:
    """Parse ``arguments``, run the command, return its exit code (:func:`nenjim.cli.main`)."""
    as_json = "--json" in arguments
    store: str | None = None
    try:
        try:
            args = _parser().parse_args(arguments)
        except SystemExit as stop:  # --help and --version
            code = stop.code if isinstance(stop.code, int) else EXIT_USAGE
        else:
            store = chosen_store(args)
            handler: Handler = args.handler
            with shown(chosen_level(args), as_json=as_json):
                code = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the safety net
    except BrokenPipeError:
        return _broken_pipe()
    except UsageError as error:
        if as_json:
            return report(Failure(str(error), error.kind, error.exit_code), as_json=True)
        sys.stderr.write(error.text())
        return error.exit_code
    except BaseException as error:  # the last safety net: one line, a documented code
        return report(classify(error, None if store is None else redact(store)), as_json=as_json)
    return code


def _broken_pipe() -> int:
    # The reader left (`| head`): say nothing, and keep the interpreter's
    # final flush of stdout from raising again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


@functools.cache
def _parser() -> _Parser:
    """The parser, built once per process: building it takes ~20 ms (some 5,000 argparse
    objects), and a process that runs several commands (a program calling ``main``, the
    test suite) parses each with the same one. Parsing changes nothing in it."""
    return build_parser()


def build_parser() -> _Parser:
    """The full ``nenjim`` argument parser."""
    parser = _Parser(
        prog="nenjim",
        description="The nenjim command line: inspect Journal roots and their stores.",
        epilog=f"{STORE_HELP}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"nenjim {_version()}")
    add_verbosity(parser, "before")
    groups = parser.add_subparsers(dest="group", metavar="COMMAND", required=True)
    journal = groups.add_parser(
        "journal",
        help="inspect a Journal root",
        description="Inspect a Journal root.",
        epilog=f"{STORE_HELP}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = journal.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)

    def add(name: str, handler: Handler, summary: str, *parents: _Parser) -> _Parser:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary,
            parents=[*parents, output],
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(handler=handler)
        return sub

    output = _output()
    opens, coordinate, selection = _opening(), _coordinate(), _selection()
    add(
        "verify",
        journal_commands.verify,
        "Load a Journal root; report its artifacts and heads.",
        opens,
    )
    digest = add(
        "digest", journal_commands.digest, "Print the sha256 digest of a file's exact bytes."
    )
    digest.add_argument("file", metavar="FILE")
    add("log", journal_commands.log, "Show the chain of an artifact.", opens, coordinate)
    add(
        "show",
        journal_commands.show,
        "Show the latest (or as-of) revision.",
        opens,
        coordinate,
        selection,
    )
    release = add(
        "release",
        journal_commands.release,
        "Show one release of the latest (or as-of) revision.",
        opens,
        coordinate,
        selection,
    )
    release.add_argument(
        "version", metavar="VERSION", type=value_argument(ReleaseVersion), help="release version"
    )
    new = add(
        "new", journal_commands.new, "Draft a successor of the head revision.", opens, coordinate
    )
    new.add_argument("--stdout", action="store_true", help="print the draft, write no file")
    audit = add(
        "audit",
        journal_commands.audit,
        "Re-check every logged revision of an existing store.",
        _reading(),
    )
    add_audit_options(audit)
    move = add(
        "move-root",
        journal_commands.move_root,
        "Give a store to the new path of the root that owns it.",
        _reading(),
    )
    move.add_argument(
        "--from",
        dest="old_root",
        metavar="OLD",
        required=True,
        help="the root path the store records (it need not exist any more)",
    )
    move.add_argument(
        "--to",
        dest="new_root",
        metavar="NEW",
        required=True,
        help="the directory the root is now",
    )
    add(
        "repair",
        journal_commands.repair,
        "Rebuild the transparency tree and chain projection from the log, if only they are "
        "damaged.",
        _reading(),
    )
    appending = add(
        "append",
        journal_commands.append,
        "Append revision files to a durable Journal's store, without a root.",
        _appending(),
    )
    appending.add_argument(
        "files", metavar="FILE", nargs="*", help="revision files, judged as a root's files are"
    )
    appending.add_argument(
        "--stdin", action="store_true", help="also append the one text read from standard input"
    )
    add_journal_commands(add, _reading)
    add_projection_commands(groups)
    add_storage_commands(groups)
    add_log_commands(groups)
    add_key_commands(groups, [output])
    add_serve_command(groups, [output])
    add_witness_command(groups, [output])
    return parser


def _version() -> str:
    try:
        return version("nenjim")
    except PackageNotFoundError:
        return "(not installed: version unknown)"


def _output() -> _Parser:
    """--json, -v and -q, shared by every subcommand."""
    output = _Parser(add_help=False)
    add_verbosity(output, "after")
    output.add_argument(
        "--json",
        action="store_true",
        help="print stable JSON on stdout; errors as one JSON object on stderr",
    )
    return output


def _opening() -> _Parser:
    """ROOT, --store and --journal, shared by every subcommand that loads a Journal."""
    opens = _Parser(add_help=False)
    opens.add_argument("root", metavar="ROOT", help="Journal root directory")
    add_store_options(
        opens,
        store="event store URL",
        journal="load the root as the Journal of this name, which several roots may share",
        in_memory=True,
    )
    return opens


def _reading() -> _Parser:
    """--store (which must exist) and --journal, for commands that only read a store."""
    reads = _Parser(add_help=False)
    add_store_options(
        reads,
        store="URL of an existing event store",
        journal="read the store of this Journal, and check that it holds it",
    )
    return reads


def _appending() -> _Parser:
    """--store (which must exist, unless --journal names a Journal) and --journal."""
    appends = _Parser(add_help=False)
    add_store_options(
        appends,
        store="URL of the Journal's event store",
        journal="append to the Journal of this name (a new store becomes its store)",
    )
    return appends


def _coordinate() -> _Parser:
    """The COORD argument."""
    coordinate = _Parser(add_help=False)
    coordinate.add_argument(
        "coordinate",
        metavar="COORD",
        type=value_argument(ArtifactCoordinate),
        help="artifact coordinate",
    )
    return coordinate


def _selection() -> _Parser:
    """--as-of, shared by ``show`` and ``release``."""
    selection = _Parser(add_help=False)
    selection.add_argument(
        "--as-of",
        metavar="V",
        type=value_argument(JournalVersion),
        help="use the newest revision at or before Journal version V (YYYYMMDDTHHMMSSZ)",
    )
    return selection
