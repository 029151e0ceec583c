"""Exit codes of ``nenjim`` and the one line (or JSON object) that reports a failure.

Every exception that reaches the command line ends here: known ones become
their own code and message; anything else is an internal error, still one
line. No traceback reaches the user.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from dataclasses import dataclass
from typing import TextIO

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_STORE = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process ended by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports `yes | head`

KINDS = (
    "usage",
    "journal",
    "failure",
    "audit",
    "integrity",
    "store",
    "extra",
    "key",
    "unavailable",
    "forked",
    "rewritten",
    "bad-signature",
    "interrupted",
    "internal",
)
"""Every KIND of an error reported with ``--json``, as the help and README.md list them."""

EXIT_CODES_HELP = f"""exit codes:
  {EXIT_OK}    success
  {EXIT_FAILURE}    the Journal was rejected (root, file layout, format, chain rules), an
       audit or start-up check found the log inconsistent, an import was
       refused (a damaged file, a log that does not audit), a served log does
       not verify (verify-log), a monitored log forked, was rewritten or is
       not signed by the key (monitor), a served checkpoint lacks the
       cosignatures the witness policy requires (verify-log, monitor:
       --witnesses-required), or the artifact, release or revision asked for
       does not exist
  {EXIT_USAGE}    bad usage: unknown option, malformed value or store URL
  {EXIT_STORE}    the store cannot be used: missing (audit, projections, export,
       move-root, append), in memory or holding no Journal yet (append
       without --journal), not empty (import), unreachable, unwritable, holding
       another Journal (move-root: another root's, a named one, none yet, or
       still its old root's), of another schema version; or something else
       the command needs cannot be: an extra that is not installed, a signer key file that group or
       others can access, a served log that cannot be read (verify-log, monitor), an
       address that cannot be listened on (serve)
  {EXIT_INTERNAL}    an internal error (a bug: please report it with the command)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_BROKEN_PIPE}  standard output was closed early (as by `| head`); nothing is printed

Errors are one line on stderr, "nenjim: error: ..." (bad usage: the usage,
then "PROG: error: ..."); with --json, one JSON object
{{"error": MESSAGE, "kind": KIND, "exit_code": CODE}} instead, where KIND is
usage, journal, failure, audit, integrity, store, extra, key, unavailable,
forked, rewritten, bad-signature, interrupted or internal."""


class CommandError(Exception):
    """A failure to report as one line on stderr, with the exit code to end with."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE, kind: str = "failure") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.kind = kind


class UsageError(CommandError):
    """Bad arguments, refused by ``prog`` (``nenjim journal show``, ...) with its ``usage``."""

    def __init__(self, message: str, *, prog: str = "nenjim", usage: str = "") -> None:
        super().__init__(f"{prog}: {message}", EXIT_USAGE, "usage")
        self.prog = prog
        self.detail = message
        self.usage = usage

    def text(self) -> str:
        """The report in argparse's own form: the usage, then ``PROG: error: MESSAGE``."""
        return f"{self.usage}{self.prog}: error: {one_line(self.detail)}\n"


@dataclass(frozen=True, slots=True)
class Failure:
    """How one failure is reported: a message, a kind and an exit code."""

    message: str
    kind: str
    exit_code: int


def report(failure: Failure, *, as_json: bool, stream: TextIO | None = None) -> int:
    """Write ``failure`` as one line (or one JSON object) on stderr; return its exit code."""
    out = stream or sys.stderr
    message = one_line(failure.message)
    if as_json:
        document = {"error": message, "kind": failure.kind, "exit_code": failure.exit_code}
        out.write(json.dumps(document, sort_keys=True) + "\n")
    else:
        out.write(f"nenjim: error: {message}\n")
    out.flush()
    return failure.exit_code


def one_line(text: str) -> str:
    """``text`` with line breaks, tabs and other control characters shown escaped."""
    if text.isprintable():  # holds no control character (nor any other unprintable one)
        return text
    return "".join(
        char.encode("unicode_escape").decode("ascii")
        if unicodedata.category(char) == "Cc"
        else char
        for char in text
    )
