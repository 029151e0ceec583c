"""The ``nenjim`` entry point: Ctrl-C and standard output first, then the commands.

``entry`` is the console script and ``python -m nenjim``; ``main`` runs one
command line in this process. This module imports only ``io``, ``os``,
``signal`` and ``sys``, which cost next to nothing, so a Ctrl-C is nenjim's
from its first line on: the commands, and all they import, load afterwards
(:mod:`nenjim.cli.run`). Exit codes are in :mod:`nenjim.cli.exit` and in
``nenjim --help``.
"""

from __future__ import annotations

import io
import os
import signal
import sys

# typing and collections.abc cost milliseconds to import, which would let an early
# Ctrl-C land before the handler is in place: they are for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import FrameType
    from typing import NoReturn

    from _typeshed import ReadableBuffer


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nenjim`` with ``argv`` (default: the process arguments); return the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    # eventsourcing resolves this variable when it is imported, and a value it cannot
    # resolve would stop every command; nenjim stamps its events in UTC whatever it says.
    os.environ.pop("TZINFO_TOPIC", None)
    try:
        from nenjim.cli.run import run  # noqa: PLC0415 - after the Ctrl-C handler, in entry
    except KeyboardInterrupt:
        return _interrupted(arguments)
    except Exception as error:  # a broken installation: still one line
        return _internal(error, arguments)
    return run(arguments)


def entry() -> NoReturn:
    """The ``nenjim`` console script and ``python -m nenjim``: :func:`main`, then exit.

    The Ctrl-C handler goes in before anything else is imported. A Ctrl-C can
    also land where Python cannot raise it: in a destructor (a database
    connection closing) or while the interpreter shuts down after the work (a
    connection pool's threads ending). Either would print "Exception ignored
    ... KeyboardInterrupt" with a traceback. The first is dropped silently
    (the command goes on; a second Ctrl-C stops it), and once :func:`main` has
    returned, Ctrl-C is ignored: the work is done and its exit code stands. A
    Ctrl-C that stops the command also ignores the ones after it, which would
    otherwise land in the reporting of the first.
    """
    try:
        signal.signal(signal.SIGINT, _interrupt_once)
        sys.unraisablehook = _drop_interrupts
        _write_stdout_completely()
        code = main()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:  # before main's own safety net was in place
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        code = _interrupted(sys.argv[1:])
    # CPython remembers a KeyboardInterrupt raised in code run from a string (dataclasses
    # and namedtuple build their methods so) even once it was caught, and under
    # `python -m` then ends the process by SIGINT instead of with this exit code. Running
    # code from a string clears that memory.
    exec("")
    sys.exit(code)


def _interrupt_once(signum: int, frame: FrameType | None) -> None:
    # Further Ctrl-Cs would land in the reporting of this one: ignore them from now on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _drop_interrupts(unraisable: sys.UnraisableHookArgs) -> None:
    import threading  # noqa: PLC0415 - only when a destructor raised

    if not issubclass(unraisable.exc_type, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)
    elif threading.current_thread() is threading.main_thread():
        # The interrupt was dropped, the command goes on: the next Ctrl-C must stop it.
        signal.signal(signal.SIGINT, _interrupt_once)


def _interrupted(arguments: Sequence[str]) -> int:
    from nenjim.cli.exit import EXIT_INTERRUPTED, Failure, report  # noqa: PLC0415

    failure = Failure("interrupted", "interrupted", EXIT_INTERRUPTED)
    return report(failure, as_json="--json" in arguments)


def _internal(error: Exception, arguments: Sequence[str]) -> int:
    from nenjim.cli.exit import EXIT_INTERNAL, Failure, report  # noqa: PLC0415

    message = f"internal error: {type(error).__name__}: {error} (is nenjim installed whole?)"
    return report(Failure(message, "internal", EXIT_INTERNAL), as_json="--json" in arguments)


def _write_stdout_completely() -> None:
    """Standard output through a writer that never drops a write's tail.

    The interpreter's own buffered stdout can take a write that the pipe cut
    short (its reader left while it was being written) as done, and let the
    command end with exit 0 while its output was lost; this one writes every
    byte or raises ``BrokenPipeError`` (exit 141).
    """
    stream = sys.stdout
    if not isinstance(stream, io.TextIOWrapper):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_CompleteWrites(stream.fileno())),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
    )


class _CompleteWrites(io.RawIOBase):
    """A raw writer of one file descriptor: writes all it is given, or raises."""

    def __init__(self, descriptor: int) -> None:
        super().__init__()
        self._descriptor = descriptor

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._descriptor

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._descriptor, view[done:])
        return done
