"""One subcommand of a command group, as every group of the command line declares it, and
the arguments that are values of the Journal's value types."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

from nenjim.cli.exit import EXIT_CODES_HELP
from nenjim.cli.logs import add_verbosity
from nenjim.journal.exception import InvalidValueError

_V = TypeVar("_V")


def add_subcommand(
    commands: Any, name: str, handler: Callable[[argparse.Namespace], int], summary: str
) -> argparse.ArgumentParser:
    """Register ``name`` on the subparsers ``commands``: ``summary`` as its help and
    description, the exit codes as its epilog, ``-v``/``-q`` as every command's, ``handler``
    to run it."""
    sub: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_verbosity(sub, "after")
    sub.set_defaults(handler=handler)
    return sub


def value_argument(factory: Callable[[str], _V]) -> Callable[[str], _V]:
    """An argparse ``type`` that reports a value type's syntax error as a usage error."""

    def convert(text: str) -> _V:
        try:
            return factory(text)
        except InvalidValueError as error:
            raise argparse.ArgumentTypeError(error.detail) from None

    return convert
