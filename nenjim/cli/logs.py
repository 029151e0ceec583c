"""How much of nenjim's logging a command shows, and how: ``-v``/``-q`` and one line per record.

nenjim's code logs through :mod:`logging`, each module under its own name in
the ``nenjim`` hierarchy. Every command takes ``-v/--verbose`` (repeatable)
and ``-q/--quiet``, before the command or after the subcommand: records of
WARNING and up are shown by default, INFO and up with ``-v``, DEBUG and up
with ``-vv``, ERROR and up with ``-q`` (each ``-q`` takes back one ``-v``).
A record is one line on stderr, ``PREFIX: LEVEL: MESSAGE``, or with
``--json`` one JSON object: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
``message`` and the record's extra fields (the access log's ``method``,
``path``, ``status``, ``duration_ms``). An exception logged with a record
adds its type and message, never its traceback. A command's failure is not
logged: it stays the one line (or JSON object) of :mod:`nenjim.cli.exit`.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from nenjim.cli.exit import one_line

LOGGER = "nenjim"
"""The logger whose records (and its children's) a command shows."""

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
"""A log record's own attributes: any other is an extra field, given by ``extra=``."""


def add_verbosity(parser: argparse.ArgumentParser, where: str) -> None:
    """``-v/--verbose`` and ``-q/--quiet`` on ``parser``, counted apart for each ``where``
    (the root parser, a subcommand): a subcommand's parse would overwrite the root's count."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        dest=f"verbose_{where}",
        help="show more of the log on stderr: info (-v), debug (-vv)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        dest=f"quiet_{where}",
        help="show only errors of the log on stderr (warnings too by default)",
    )


def chosen_level(args: argparse.Namespace, default: int = logging.WARNING) -> int:
    """The least severe level shown: ``default`` without ``-v`` or ``-q``, else WARNING
    moved one step down per ``-v`` and one step up per ``-q`` (DEBUG to ERROR)."""
    verbose = sum(value for name, value in vars(args).items() if name.startswith("verbose_"))
    quiet = sum(value for name, value in vars(args).items() if name.startswith("quiet_"))
    if not verbose and not quiet:
        return default
    steps = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
    return steps[max(0, min(len(steps) - 1, 2 - verbose + quiet))]


def server_level(args: argparse.Namespace) -> int:
    """The level of a command that serves (``serve``, ``witness``): ``--log-level`` if given,
    else what ``-v``/``-q`` say, else INFO, which shows the access log."""
    if args.log_level is not None:
        return logging.getLevelNamesMapping()[args.log_level.upper()]
    return chosen_level(args, default=logging.INFO)


class OneLineFormatter(logging.Formatter):
    """A log record as one line, ``PREFIX: LEVEL: MESSAGE[: ERROR: DETAIL]``, or with
    ``as_json`` one JSON object (see the module's documentation)."""

    def __init__(self, *, prefix: str = "nenjim", as_json: bool = False) -> None:
        super().__init__()
        self.prefix = prefix
        self.as_json = as_json

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info is not None and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message = f"{message}: {type(error).__name__}: {error}"
        level = record.levelname.lower()
        if not self.as_json:
            return f"{self.prefix}: {level}: {one_line(message)}"
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        created = datetime.fromtimestamp(record.created, UTC)
        document = {
            **extra,
            "time": created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": level,
            "logger": record.name,
            "message": one_line(message),
        }
        return json.dumps(document, sort_keys=True, default=str)


@contextmanager
def shown(level: int, *, as_json: bool) -> Iterator[None]:
    """nenjim's log records of ``level`` and up shown on stderr while the block runs (see
    :class:`OneLineFormatter`); the ``nenjim`` logger is put back as it was afterwards, so a
    process that runs several commands (tests, an embedding program) keeps its own logging."""
    logger = logging.getLogger(LOGGER)
    before = (logger.level, logger.propagate, list(logger.handlers))
    handler = logging.StreamHandler()  # sys.stderr as it is now
    handler.setFormatter(OneLineFormatter(as_json=as_json))
    logger.handlers = [handler]
    logger.setLevel(level)
    logger.propagate = False
    try:
        yield
    finally:
        level_before, logger.propagate, logger.handlers = before
        logger.setLevel(level_before)  # setLevel also clears the loggers' cached levels
