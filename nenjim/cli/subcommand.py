"""One subcommand of a command group, as every group of the command line declares it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from nenjim.cli.exit import EXIT_CODES_HELP


def add_subcommand(
    commands: Any, name: str, handler: Callable[[argparse.Namespace], int], summary: str
) -> argparse.ArgumentParser:
    """Register ``name`` on the subparsers ``commands``: ``summary`` as its help and
    description, the exit codes as its epilog, ``handler`` to run it."""
    sub: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.set_defaults(handler=handler)
    return sub
