"""``nenjim keys new`` and the transparency commands of ``nenjim journal``.

``keys new NAME --out PATH`` writes a signer key (mode 0600, never over an
existing file; with ``--witness`` a witness's cosigning key) and prints its
verifier key as the last line. ``journal
checkpoint`` signs the stored tree's head; ``journal prove COORD VERSION``
and ``journal prove --from N`` print an inclusion or consistency proof with
the checkpoint it is proven against, as JSON; ``journal check-proof`` verifies
such a document with nothing but the verifier key; ``journal audit
--checkpoint FILE --key VKEY`` proves the stored log consistent with a
checkpoint signed earlier. Key files are read with one trailing newline
stripped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from nenjim.admin.errors import (
    LogDamagedError,
    MissingExtraError,
    ProofCheckError,
    ProofRequestError,
    TransparencyError,
)
from nenjim.admin.stores import JournalLog, journal_identity, open_log
from nenjim.admin.transparency import (
    DEFAULT_CHAIN_CACHE,
    Checkpoint,
    JournalTree,
    SignerKey,
    VerifierKey,
    anchor_problem,
    check_proof,
    open_checkpoint,
)
from nenjim.admin.witness import Cosigner
from nenjim.cli.exit import (
    EXIT_CODES_HELP,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_STORE,
    EXIT_USAGE,
    CommandError,
)
from nenjim.cli.logs import server_level
from nenjim.cli.store_options import add_store_options, required_store
from nenjim.cli.subcommand import value_argument
from nenjim.cli.witness_policy import add_policy_options, add_witness_endpoints, chosen_policy
from nenjim.journal.exception import JournalIntegrityError
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion

_K = TypeVar("_K")
Handler = Callable[[argparse.Namespace], int]
AddCommand = Callable[..., argparse.ArgumentParser]


def add_key_commands(groups: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``nenjim keys new``."""
    keys = groups.add_parser(
        "keys",
        help="make signing keys",
        description="Make signing keys.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = keys.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    new = commands.add_parser(
        "new",
        help="Write a new Ed25519 signer key; print its verifier key.",
        description="Write a new Ed25519 signer key (signed-note format, file mode 0600) "
        "and print its verifier key as the last line.",
        parents=parents,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    new.add_argument("name", metavar="NAME", help="the key's name (no '+', spaces or newlines)")
    new.add_argument("--out", metavar="PATH", required=True, help="the new key file")
    new.add_argument(
        "--witness",
        action="store_true",
        help="a witness's key, for nenjim witness: its cosignatures (C2SP tlog-cosignature v1, "
        "key type 0x04) are not note signatures",
    )
    new.set_defaults(handler=keys_new)


def add_journal_commands(add: AddCommand, reading: Callable[[], argparse.ArgumentParser]) -> None:
    """``nenjim journal checkpoint|prove|check-proof``."""
    checkpoint = add(
        "checkpoint", checkpoint_command, "Sign the head of the store's tree.", reading()
    )
    _signing(checkpoint)
    prove = add(
        "prove",
        prove_command,
        "Prove a revision is in the store's tree, or the tree grew from an older size.",
        reading(),
    )
    prove.add_argument(
        "coordinate",
        metavar="COORD",
        nargs="?",
        type=value_argument(ArtifactCoordinate),
        help="artifact coordinate",
    )
    prove.add_argument(
        "version",
        metavar="VERSION",
        nargs="?",
        type=value_argument(JournalVersion),
        help="its Journal version",
    )
    prove.add_argument(
        "--from", dest="old_size", metavar="N", type=_size, help="consistency from tree size N"
    )
    _signing(prove)
    check = add("check-proof", check_proof_command, "Verify a proof offline with the verifier key.")
    check.add_argument("file", metavar="FILE", help="the proof (JSON of prove); - for stdin")
    check.add_argument("--key", metavar="VKEY", required=True, help="verifier key file")
    check.add_argument(
        "--since", metavar="CHECKPOINT", help="a checkpoint trusted before (consistency proofs)"
    )
    verify_log = add(
        "verify-log",
        verify_log_command,
        "Verify a served log: checkpoint, every tile and entry bundle, the root.",
    )
    verify_log.add_argument("url", metavar="URL", help="the log's base URL (of nenjim serve)")
    verify_log.add_argument("--key", metavar="VKEY", required=True, help="verifier key file")
    verify_log.add_argument(
        "--since", metavar="CHECKPOINT", help="a checkpoint trusted before: the log must extend it"
    )
    verify_log.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds,
        default=30.0,
        help="give up on a request after SECONDS (30): the log is unavailable (exit 3)",
    )
    verify_log.add_argument(
        "--root",
        metavar="ROOT",
        help="a local Journal root: its revision files must be exactly the log's entries",
    )
    add_policy_options(verify_log)
    monitor = add(
        "monitor",
        monitor_command,
        "Follow a served log: verify only what it added since the last run, or find a fork.",
    )
    monitor.add_argument("url", metavar="URL", help="the log's base URL (of nenjim serve)")
    monitor.add_argument("--key", metavar="VKEY", required=True, help="verifier key file")
    monitor.add_argument(
        "--state",
        metavar="DIR",
        required=True,
        help="the monitor's state: the last checkpoint verified and its tiles (made if missing)",
    )
    monitor.add_argument(
        "--watch",
        metavar="SECONDS",
        type=_seconds,
        help="check again every SECONDS, one line per round, until a fork or Ctrl-C",
    )
    add_policy_options(monitor)
    monitor.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds,
        default=30.0,
        help="give up on a request after SECONDS (30): the log is unavailable (exit 3)",
    )


def add_serve_command(groups: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``nenjim serve``."""
    serve = groups.add_parser(
        "serve",
        help="serve a store's transparency log over HTTP, read-only",
        description="Serve the Journal's transparency log of a store over HTTP, read-only: "
        "the C2SP tlog-tiles endpoints, lookups with inclusion proofs, /openapi.json, "
        "Prometheus metrics at /metrics, and one access log line per request on stderr. "
        "Needs the serve extra.",
        parents=parents,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store_options(
        serve,
        store="URL of an existing event store",
        journal="serve this Journal's log, and check that the store holds it",
    )
    _signing(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument(
        "--port", type=_port, default=8080, help="port to listen on (8080; 0: any free port)"
    )
    serve.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="log one line per request (on by default)",
    )
    serve.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="the least severe log records shown, whatever -v or -q say (info by default, "
        "which shows the access log; -q: error, -vv: debug)",
    )
    serve.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browser scripts of ORIGIN (https://example.com, or *) GET from it; "
        "repeatable (none by default: no CORS headers)",
    )
    serve.add_argument(
        "--chain-cache",
        type=_chains,
        default=DEFAULT_CHAIN_CACHE,
        metavar="N",
        help=f"artifacts' chains held in memory at most ({DEFAULT_CHAIN_CACHE:,} by default)",
    )
    add_witness_endpoints(serve)
    serve.set_defaults(handler=serve_command)


def add_audit_options(audit: argparse.ArgumentParser) -> None:
    """``--checkpoint FILE --key VKEY`` of ``nenjim journal audit``, around its handler."""
    audit.add_argument(
        "--checkpoint", metavar="FILE", help="a checkpoint signed earlier: the log must extend it"
    )
    audit.add_argument("--key", metavar="VKEY", help="the verifier key of --checkpoint")
    audit.set_defaults(handler=_anchored(audit.get_default("handler")))


def _signing(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key",
        metavar="PATH",
        required=True,
        help="signer key file, which only its owner may read or write (mode 0600 or 0400)",
    )
    parser.add_argument(
        "--allow-unprotected-key",
        action="store_true",
        help="use a signer key file that group or others can access, with a warning",
    )
    parser.add_argument("--origin", metavar="O", help="checkpoint origin (default: the key name)")


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return seconds


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return int(text)


def _chains(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of chains (1 or more)")
    return int(text)


def _size(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a tree size (a decimal number)")
    return int(text)


def keys_new(args: argparse.Namespace) -> int:
    """Write a new signer key to ``--out``; print the verifier key last."""
    try:
        key: SignerKey | Cosigner = (Cosigner if args.witness else SignerKey).generate(args.name)
    except TransparencyError as error:
        raise CommandError(f"argument NAME: {error}", EXIT_USAGE, "usage") from None
    path = Path(args.out)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CommandError(f"{path} exists: a key file is never overwritten") from None
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(key.encode() + "\n")
    verifier = key.verifier.encode()
    if args.json:
        print(_dumps({"name": key.name, "signer_key_file": str(path), "verifier_key": verifier}))
    else:
        print(f"wrote the signer key {key.name} to {path} (keep it secret); its verifier key:")
        print(verifier)
    return EXIT_OK


def checkpoint_command(args: argparse.Namespace) -> int:
    """Print a signed checkpoint of the store's tree."""
    with _tree(args) as tree:
        signed = tree.sign()
    if args.json:
        print(_dumps({"checkpoint": signed.note, "tree_size": signed.checkpoint.size}))
    else:
        sys.stdout.write(signed.note)
    return EXIT_OK


def prove_command(args: argparse.Namespace) -> int:
    """Print an inclusion or a consistency proof as JSON."""
    revision = args.coordinate is not None
    if revision == (args.old_size is not None) or revision != (args.version is not None):
        raise CommandError(
            "give either COORD VERSION (inclusion) or --from N (consistency)", EXIT_USAGE, "usage"
        )
    with _tree(args) as tree:
        try:
            if revision:
                document = tree.prove_inclusion(str(args.coordinate), str(args.version))
            else:
                document = tree.prove_consistency(args.old_size)
        except ProofRequestError as error:
            raise CommandError(str(error)) from None
    print(_dumps(document))
    return EXIT_OK


def check_proof_command(args: argparse.Namespace) -> int:
    """Verify a proof document offline; exit 1 unless it holds."""
    verifier = _verifier(args.key)
    text = sys.stdin.read() if args.file == "-" else _read(args.file, "proof")[0]
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CommandError(f"proof {args.file}: not JSON ({error})") from None
    if not isinstance(document, dict):
        raise CommandError(f"proof {args.file}: not a JSON object")
    since = None if args.since is None else _checkpoint(args.since, verifier)
    try:
        checked = check_proof(document, verifier, since=since)
    except ProofCheckError as error:
        raise CommandError(f"proof {args.file} does not hold: {error}") from None
    if args.json:
        print(_dumps({"ok": True, "kind": checked.kind, "tree_size": checked.checkpoint.size}))
    else:
        print(f"proof OK: {checked.summary}")
    return EXIT_OK


def serve_command(args: argparse.Namespace) -> int:
    """Serve until interrupted: the store is opened and the port bound before "serving"."""
    try:
        from nenjim.cli.serve_run import listen, run_server, url_of  # noqa: PLC0415
        from nenjim.serve.app import build_app  # noqa: PLC0415
        from nenjim.serve.cosigning import Witness  # noqa: PLC0415
    except ImportError as error:
        raise _needs_serve(error) from None
    signer = _signer(args)
    witnesses = [Witness(key, url) for key, url in args.witness]
    with _opened(args) as log:
        app = build_app(
            log,
            signer,
            args.origin,
            access_log=args.access_log,
            cors_origins=args.cors,
            witnesses=witnesses,
            chain_cache=args.chain_cache,
        )
        with listen(args.host, args.port) as listener:
            url = url_of(listener)
            if args.json:
                print(_dumps({"serving": url}))
                sys.stdout.flush()
            else:
                sys.stderr.write(f"serving the transparency log on {url}\n")
            run_server(app, listener, as_json=args.json, level=server_level(args))
    return EXIT_OK


def verify_log_command(args: argparse.Namespace) -> int:
    """Verify a served log end to end; exit 1 unless it holds."""
    try:
        from nenjim.client.log_client import (  # noqa: PLC0415
            LogCheckError,
            LogUnavailableError,
            verify_log,
        )
        from nenjim.client.log_witnesses import WitnessPolicy, WitnessPolicyError  # noqa: PLC0415
    except ImportError as error:
        raise _needs_serve(error) from None
    verifier = _verifier(args.key)
    chosen = chosen_policy(args)
    policy = None if chosen is None else WitnessPolicy(*chosen)
    since = None if args.since is None else _checkpoint(args.since, verifier)
    root = None if args.root is None else Path(args.root)
    try:
        verified = verify_log(
            args.url, verifier, since=since, root=root, timeout=args.timeout, policy=policy
        )
    except LogUnavailableError as error:
        raise CommandError(
            f"verify-log could not read the log: {error}", EXIT_STORE, "unavailable"
        ) from None
    except WitnessPolicyError as error:
        raise CommandError(f"verify-log failed: {error}", EXIT_FAILURE, "bad-signature") from None
    except LogCheckError as error:
        raise CommandError(f"verify-log failed: {error}", EXIT_FAILURE, "integrity") from None
    size = verified.checkpoint.size
    if args.json:
        print(_dumps({"ok": True, "tree_size": size, "tiles": verified.tiles}))
    else:
        extends = "" if since is None else f", extending the trusted tree of {since.size}"
        if args.root is not None:
            extends += f"; every file under {args.root} is in it"
        print(
            f"log OK: {verified.checkpoint.origin} at tree size {size}: {verified.tiles} "
            f"tiles and every entry verified{extends}"
        )
    return EXIT_OK


def monitor_command(args: argparse.Namespace) -> int:
    """Verify what a served log added since the last run; exit 1 on a fork."""
    try:
        from nenjim.client.log_client import (  # noqa: PLC0415
            BadCheckpointError,
            LogCheckError,
            LogUnavailableError,
        )
        from nenjim.client.log_monitor import (  # noqa: PLC0415
            LogForkedError,
            LogRewrittenError,
            MonitorStateError,
            monitor_log,
        )
        from nenjim.client.log_witnesses import WitnessPolicy  # noqa: PLC0415
    except ImportError as error:
        raise _needs_serve(error) from None
    verifier = _verifier(args.key)
    chosen = chosen_policy(args)
    policy = None if chosen is None else WitnessPolicy(*chosen)
    state = Path(args.state)
    while True:
        try:
            result = monitor_log(args.url, verifier, state, timeout=args.timeout, policy=policy)
        except LogUnavailableError as error:
            failure = CommandError(
                f"monitor could not read the log: {error}", EXIT_STORE, "unavailable"
            )
            if args.watch is None:
                raise failure from None
            _monitor_line(args, failure)
        except MonitorStateError as error:
            raise CommandError(f"monitor: {error}", EXIT_USAGE, "usage") from None
        except LogRewrittenError as error:
            raise CommandError(f"monitor failed: {error}", EXIT_FAILURE, "rewritten") from None
        except LogForkedError as error:
            raise CommandError(f"monitor failed: {error}", EXIT_FAILURE, "forked") from None
        except BadCheckpointError as error:
            raise CommandError(f"monitor failed: {error}", EXIT_FAILURE, "bad-signature") from None
        except LogCheckError as error:
            raise CommandError(f"monitor failed: {error}", EXIT_FAILURE, "integrity") from None
        else:
            if args.json:
                document = {
                    "ok": True,
                    "size": result.checkpoint.size,
                    "previous_size": result.previous_size,
                    "new_entries": result.new_entries,
                    "fetched_tiles": result.fetched_tiles,
                    "fetched_bundles": result.fetched_bundles,
                    "requests": result.requests,
                }
                print(_dumps(document), flush=True)
            else:
                was = "none" if result.previous_size is None else result.previous_size
                print(
                    f"monitor OK: {args.url}: size {result.checkpoint.size} (was {was}), "
                    f"{result.new_entries} new entries checked",
                    flush=True,
                )
        if args.watch is None:
            return EXIT_OK
        time.sleep(args.watch)


def _monitor_line(args: argparse.Namespace, failure: CommandError) -> None:
    """One round's outage, reported on stdout as a line of the watch (and retried)."""
    message = str(failure)
    if args.json:
        document = {"ok": False, "error": message, "kind": failure.kind}
        print(_dumps({**document, "exit_code": failure.exit_code}), flush=True)
    else:
        print(f"monitor UNAVAILABLE: {message}", flush=True)


def _needs_serve(error: ImportError) -> MissingExtraError:
    return MissingExtraError(
        f"this command needs the serve extra: pip install 'nenjim[serve]' ({error})"
    )


def _anchored(audit: Handler) -> Handler:
    """The audit, first proving the log consistent with ``--checkpoint`` when given."""

    def run(args: argparse.Namespace) -> int:
        if (args.checkpoint is None) != (args.key is None):
            raise CommandError(
                "--checkpoint and --key go together (the checkpoint and its verifier key)",
                EXIT_USAGE,
                "usage",
            )
        if args.checkpoint is not None:
            checkpoint = _checkpoint(args.checkpoint, _verifier(args.key))
            with _opened(args) as log:
                try:
                    problem = anchor_problem(log, checkpoint)
                except (JournalIntegrityError, LogDamagedError) as error:
                    raise CommandError(f"audit failed: {error}", EXIT_FAILURE, "audit") from None
            if problem is not None:
                raise CommandError(
                    f"audit failed: the log does not extend checkpoint {args.checkpoint}: "
                    f"{problem}",
                    EXIT_FAILURE,
                    "audit",
                )
            if not args.json:
                print(
                    f"checkpoint OK: the log extends {checkpoint.origin} at tree size "
                    f"{checkpoint.size}"
                )
        return audit(args)

    return run


def _opened(args: argparse.Namespace) -> AbstractContextManager[JournalLog]:
    return open_log(required_store(args), journal_identity(args.journal))


@contextmanager
def _tree(args: argparse.Namespace) -> Iterator[JournalTree]:
    signer = _signer(args)
    with _opened(args) as log:
        try:
            yield JournalTree(log, signer, args.origin)
        except TransparencyError as error:
            raise CommandError(str(error)) from None


def _read(path: str, what: str) -> tuple[str, int]:
    """The text of a file and its permission bits, read from one open file."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(), stat.S_IMODE(os.fstat(file.fileno()).st_mode)
    except (OSError, UnicodeDecodeError) as error:
        detail = error.strerror if isinstance(error, OSError) else "not UTF-8"
        raise CommandError(f"cannot read the {what} {path}: {detail}") from None


def _key(parse: Callable[[str], _K], path: str, text: str) -> _K:
    """The key in a key file's ``text`` (one trailing newline stripped); bad usage if none."""
    try:
        return parse(text.removesuffix("\n"))
    except TransparencyError as error:
        raise CommandError(f"argument --key: {path}: {error}", EXIT_USAGE, "usage") from None


def _signer(args: argparse.Namespace) -> SignerKey:
    """The signer key of ``--key`` (see :func:`secret_key`)."""
    return secret_key(args, SignerKey.parse)


def secret_key(args: argparse.Namespace, parse: Callable[[str], _K]) -> _K:
    """The secret key of ``--key``, read by ``parse``: refused, as ssh refuses a private key,
    when group or others can access its file, unless ``--allow-unprotected-key`` (then a
    warning)."""
    path = args.key
    text, mode = _read(path, "key file")
    if os.name == "posix" and mode & 0o077:
        exposed = f"signer key {path} is accessible by group or others (mode {mode:04o})"
        if not args.allow_unprotected_key:
            raise CommandError(
                f"{exposed}: chmod 600 {path}, or give --allow-unprotected-key",
                EXIT_STORE,
                "key",
            )
        warning = f"{exposed}; used anyway (--allow-unprotected-key)"
        if args.json:
            sys.stderr.write(_dumps({"warning": warning, "kind": "key"}) + "\n")
        else:
            sys.stderr.write(f"nenjim: warning: {warning}\n")
    return _key(parse, path, text)


def _verifier(path: str) -> VerifierKey:
    return _key(VerifierKey.parse, path, _read(path, "key file")[0])


def _checkpoint(path: str, verifier: VerifierKey) -> Checkpoint:
    try:
        return open_checkpoint(_read(path, "checkpoint")[0], [verifier])
    except TransparencyError as error:
        raise CommandError(f"checkpoint {path}: {error}") from None


def _dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, sort_keys=True)
