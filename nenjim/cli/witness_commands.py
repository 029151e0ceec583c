"""``nenjim witness``: run a transparency log witness (C2SP tlog-witness) until interrupted.

``nenjim witness --key PATH --log ORIGIN=VKEY ... --state DIR --listen
HOST:PORT``: the witness cosigns, with the witness key in ``PATH`` (``nenjim
keys new NAME --witness``), each checkpoint of a log ``ORIGIN`` signed by its
verifier key ``VKEY`` (the key string) that is consistent with the last one it
cosigned, which it records in ``DIR``. Needs the ``serve`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nenjim.admin.errors import MissingExtraError, TransparencyError
from nenjim.admin.transparency import VerifierKey
from nenjim.admin.witness import Cosigner, WitnessState, WitnessStateError
from nenjim.cli.exit import EXIT_CODES_HELP, EXIT_OK, EXIT_STORE, CommandError
from nenjim.cli.logs import server_level
from nenjim.cli.transparency_commands import secret_key

_SUMMARY = (
    "Run a transparency log witness (C2SP tlog-witness): POST /add-checkpoint cosigns a "
    "log's checkpoint (C2SP tlog-cosignature v1) only with a valid consistency proof from "
    "the last one it cosigned for that log. Needs the serve extra."
)


def add_witness_command(groups: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``nenjim witness``."""
    witness = groups.add_parser(
        "witness",
        help="run a transparency log witness over HTTP",
        description=_SUMMARY,
        parents=parents,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    witness.add_argument(
        "--key",
        metavar="PATH",
        required=True,
        help="the witness key file (nenjim keys new NAME --witness), mode 0600 or 0400",
    )
    witness.add_argument(
        "--allow-unprotected-key",
        action="store_true",
        help="use a key file that group or others can access, with a warning",
    )
    witness.add_argument(
        "--log",
        metavar="ORIGIN=VKEY",
        action="append",
        required=True,
        type=log_argument,
        help="a log to witness: its checkpoints' origin line and its verifier key string; "
        "repeatable (a log with several keys: one --log per key)",
    )
    witness.add_argument(
        "--state",
        metavar="DIR",
        required=True,
        help="where the last checkpoint cosigned for each log is recorded (made if missing)",
    )
    witness.add_argument(
        "--listen",
        metavar="HOST:PORT",
        type=listen_argument,
        default=("127.0.0.1", 8081),
        help="address to listen on (127.0.0.1:8081; port 0: any free port)",
    )
    witness.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="the least severe log records shown, whatever -v or -q say (info by default; "
        "-q: error, -vv: debug)",
    )
    witness.set_defaults(handler=witness_command)


def log_argument(text: str) -> tuple[str, VerifierKey]:
    """``ORIGIN=VKEY``: a log's origin and its verifier key string."""
    origin, equals, vkey = text.partition("=")
    if not equals or not origin:
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not ORIGIN=VKEY")
    try:
        return origin, VerifierKey.parse(vkey)
    except TransparencyError as error:
        raise argparse.ArgumentTypeError(f"the key of log {origin!r}: {error}") from None


def listen_argument(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets)."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (port 0 to 65535)")
    return host, int(port)


def witness_command(args: argparse.Namespace) -> int:
    """Witness until interrupted: the state is opened and the port bound before "witnessing"."""
    try:
        from nenjim.cli.serve_run import listen, run_server, url_of  # noqa: PLC0415
        from nenjim.serve.witness import build_witness_app  # noqa: PLC0415
    except ImportError as error:
        raise MissingExtraError(
            f"this command needs the serve extra: pip install 'nenjim[serve]' ({error})"
        ) from None
    cosigner = secret_key(args, Cosigner.parse)
    logs: dict[str, list[VerifierKey]] = {}
    for origin, key in args.log:
        logs.setdefault(origin, []).append(key)
    try:
        state = WitnessState(Path(args.state))
    except WitnessStateError as error:
        raise CommandError(str(error), EXIT_STORE, "store") from None
    app = build_witness_app(cosigner, logs, state)
    with listen(*args.listen) as listener:
        url = url_of(listener)
        if args.json:
            document = {"witnessing": url, "verifier_key": cosigner.verifier.encode()}
            print(json.dumps(document, sort_keys=True), flush=True)
        else:
            sys.stderr.write(
                f"witness {cosigner.verifier} of {len(logs)} logs on {url}add-checkpoint\n"
            )
        run_server(app, listener, as_json=args.json, level=server_level(args))
    return EXIT_OK
