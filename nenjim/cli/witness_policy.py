"""``--witness VKEY`` and ``--witnesses-required N`` of ``verify-log`` and ``monitor``: the
witnesses whose cosignatures a served checkpoint needs, and how many; ``--witness
VKEY@URL`` of ``serve``: the witnesses it asks."""

from __future__ import annotations

import argparse

from nenjim.admin.errors import TransparencyError
from nenjim.admin.witness import CosignerVerifier
from nenjim.cli.exit import EXIT_USAGE, CommandError


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """The witness policy's options."""
    parser.add_argument(
        "--witness",
        metavar="VKEY",
        action="append",
        default=[],
        type=_witness_key,
        help="a witness's verifier key string (nenjim keys new NAME --witness); repeatable",
    )
    parser.add_argument(
        "--witnesses-required",
        metavar="N",
        type=int,
        help="refuse a checkpoint without valid cosignatures of N of the --witness keys "
        "(default: all of them)",
    )


def chosen_policy(args: argparse.Namespace) -> tuple[tuple[CosignerVerifier, ...], int] | None:
    """The witnesses and the number required, or ``None`` when no policy is asked for."""
    witnesses: tuple[CosignerVerifier, ...] = tuple(dict.fromkeys(args.witness))
    required = args.witnesses_required
    if not witnesses:
        if required is not None:
            raise CommandError(
                "--witnesses-required needs at least one --witness", EXIT_USAGE, "usage"
            )
        return None
    required = len(witnesses) if required is None else required
    if not 1 <= required <= len(witnesses):
        raise CommandError(
            f"--witnesses-required {required} is not between 1 and the {len(witnesses)} "
            "--witness keys given",
            EXIT_USAGE,
            "usage",
        )
    return witnesses, required


def _witness_key(text: str) -> CosignerVerifier:
    try:
        return CosignerVerifier.parse(text)
    except TransparencyError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_witness_endpoints(parser: argparse.ArgumentParser) -> None:
    """``serve --witness VKEY@URL``."""
    parser.add_argument(
        "--witness",
        metavar="VKEY@URL",
        action="append",
        default=[],
        type=_witness_endpoint,
        help="serve the checkpoint with the cosignature of this witness (its verifier key "
        "string, then @ and the base URL of nenjim witness or any C2SP tlog-witness); "
        "repeatable",
    )


def _witness_endpoint(text: str) -> tuple[CosignerVerifier, str]:
    # A key's base64 never holds "@", and its name is before the first "+": the first
    # "@" after it ends the key.
    name, plus, rest = text.partition("+")
    key, at, url = rest.partition("@")
    if not plus or not at or not url.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"{text[:120]!r} is not VKEY@http(s)://HOST[:PORT]/PATH")
    return _witness_key(f"{name}+{key}"), url
