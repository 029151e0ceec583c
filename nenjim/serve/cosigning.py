"""Cosignatures for ``nenjim serve``: the checkpoint, cosigned by the configured witnesses.

When the tree has grown (or at the first request), :class:`Cosigning` signs
the new checkpoint and asks every witness for its cosignature (C2SP
tlog-witness ``add-checkpoint``), with a consistency proof from the size that
witness last cosigned (0 at first; a 409 answer says the size it holds, and
the request is made again once from there). Only a cosignature line that
verifies with the witness's key on this very checkpoint is kept. The
checkpoint is served with the cosignatures gathered; a witness that refused or
could not be reached is logged (a warning, logger ``nenjim.serve.cosigning``)
and asked again at a request at least :data:`RETRY_SECONDS` later, never more
often, so that clients polling the checkpoint do not hammer the witnesses.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from nenjim.admin.errors import TransparencyError
from nenjim.admin.transparency import JournalTree, VerifierKey
from nenjim.admin.witness import (
    AddCheckpoint,
    CosignerVerifier,
    check_cosignatures,
    open_note,
    parse_size_answer,
)

RETRY_SECONDS = 30.0
TIMEOUT_SECONDS = 10.0
WARNINGS = logging.getLogger("nenjim.serve.cosigning")


class NotCosignedError(Exception):
    """Why a witness's cosignature was not had this time (logged, never raised to a client)."""


@dataclass(frozen=True, slots=True)
class Witness:
    """A witness to ask: its verifier key and its submission prefix (base URL)."""

    verifier: CosignerVerifier
    url: str

    def __str__(self) -> str:
        return f"witness {self.verifier.name} at {self.url}"


class Cosigning:
    """The served checkpoint note of ``tree`` (signed by the key ``log_key`` checks), with
    the cosignatures of ``witnesses`` appended in their order."""

    def __init__(
        self, tree: JournalTree, log_key: VerifierKey, witnesses: Sequence[Witness]
    ) -> None:
        self._tree = tree
        self._log_key = log_key
        self._witnesses = tuple(witnesses)
        self._lock = threading.Lock()
        self._cosigned_sizes: dict[Witness, int] = {}
        self._note = ""
        self._lines: dict[Witness, str] = {}
        self._asked = -RETRY_SECONDS

    def note(self) -> str:
        """The checkpoint of the tree as it is now, with the cosignatures gathered for it."""
        signed = self._tree.sign()
        if not self._witnesses:
            return signed.note
        with self._lock:
            if signed.note != self._note:
                self._note, self._lines, self._asked = signed.note, {}, -RETRY_SECONDS
            missing = [w for w in self._witnesses if w not in self._lines]
            if missing and time.monotonic() - self._asked >= RETRY_SECONDS:
                self._asked = time.monotonic()
                with httpx.Client(timeout=TIMEOUT_SECONDS) as client:
                    for witness in missing:
                        line = self._ask(client, witness, signed.checkpoint.size)
                        if line is not None:
                            self._lines[witness] = line
            lines = [self._lines[w] for w in self._witnesses if w in self._lines]
            return self._note + "".join(lines)

    def _ask(self, client: httpx.Client, witness: Witness, size: int) -> str | None:
        """The witness's cosignature line on the current note, or ``None`` (logged)."""
        old = self._cosigned_sizes.get(witness, 0)
        try:
            for _ in range(2):  # once more from the size a 409 names
                if old > size:
                    raise NotCosignedError(f"it cosigned tree size {old}, above {size}")
                url = f"{witness.url.rstrip('/')}/add-checkpoint"
                answer = client.post(url, content=self._body(old))
                if answer.status_code != httpx.codes.CONFLICT:
                    break
                old = parse_size_answer(answer.text)
            if answer.status_code != httpx.codes.OK:
                detail = answer.text[:160].strip()
                raise NotCosignedError(f"HTTP {answer.status_code}: {detail}")
            note = open_note(self._note + answer.text, [self._log_key])
            if not check_cosignatures(note, [witness.verifier]):
                raise NotCosignedError("its answer holds no cosignature by its key")
        except (httpx.HTTPError, TransparencyError, NotCosignedError) as error:
            WARNINGS.warning("%s did not cosign tree size %d: %s", witness, size, error)
            return None
        self._cosigned_sizes[witness] = size
        mine = (witness.verifier.name, witness.verifier.key_id)
        return next(s.line() for s in note.unverified if (s.name, s.key_id) == mine)

    def _body(self, old: int) -> bytes:
        """The add-checkpoint request for the current note, proven from ``old``."""
        proof = self._tree.prove_consistency(old)
        if proof["checkpoint"] != self._note:
            raise NotCosignedError("the log grew while asking: asked again at the next request")
        nodes = tuple(base64.b64decode(node) for node in proof["consistency_proof"])
        return AddCheckpoint(old, nodes, self._note).encode()
