"""A transparency log witness (C2SP tlog-witness): its keys, its checks and its state.

:class:`WitnessState` is the last checkpoint the witness cosigned for each
log, in one JSON file under a state directory. :meth:`WitnessState.cosign`
reads it, checks an ``add-checkpoint`` request against it
(:func:`witness_checkpoint`), records the new tree head and only then
returns the cosignature, all under an exclusive lock of the directory: a
compare-and-swap on the recorded size, so that of two requests from the
same old size only one can advance it, whether they race in one process or
in two. The file is replaced atomically (a temporary file, fsync, rename):
a crash leaves the old record or the new one, never half of one.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from nenjim.domain.transparency import (
    REFUSAL_STATUS,
    SIZE_MEDIA_TYPE,
    AddCheckpoint,
    Cosignature,
    Cosigner,
    CosignerVerifier,
    Note,
    NoteSignature,
    OldSizeMismatchError,
    TreeHead,
    VerifierKey,
    WitnessRefusalError,
    check_cosignatures,
    open_note,
    parse_size_answer,
    size_answer,
    witness_checkpoint,
)

__all__ = [
    "REFUSAL_STATUS",
    "SIZE_MEDIA_TYPE",
    "AddCheckpoint",
    "Cosignature",
    "Cosigner",
    "CosignerVerifier",
    "Note",
    "NoteSignature",
    "OldSizeMismatchError",
    "WitnessRefusalError",
    "WitnessState",
    "WitnessStateError",
    "check_cosignatures",
    "open_note",
    "parse_size_answer",
    "size_answer",
]

STATE_FILE = "witness-state.json"
_LOCK_FILE = ".lock"


class WitnessStateError(Exception):
    """The state directory cannot be used, or its file is damaged (names the path)."""


class WitnessState:
    """The tree head a witness last cosigned for each origin, under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._path = directory / STATE_FILE
        # flock excludes other processes; this lock, the other threads of this one
        # (which may share a lock file description when descriptors are inherited).
        self._thread_lock = threading.Lock()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._read()
        except OSError as error:
            raise WitnessStateError(
                f"cannot use the witness state directory {directory}: {error.strerror}"
            ) from None

    def latest(self) -> dict[str, TreeHead]:
        """Every origin's last cosigned tree head."""
        with self._locked():
            return self._read()

    def cosign(
        self,
        request: AddCheckpoint,
        logs: Mapping[str, Sequence[VerifierKey]],
        cosigner: Cosigner,
    ) -> NoteSignature:
        """Check ``request``, record its tree head, and return the cosignature line.

        Raises a :class:`WitnessRefusalError` (nothing recorded) if it may not be cosigned.
        """
        with self._locked():
            latest = self._read()
            checkpoint = witness_checkpoint(request, logs, latest)
            latest[checkpoint.origin] = TreeHead(checkpoint.size, checkpoint.root_hash)
            self._write(latest)
            return cosigner.cosign(checkpoint.body(), int(time.time()))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock, open(self.directory / _LOCK_FILE, "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _read(self) -> dict[str, TreeHead]:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            document = json.loads(text)
            return {
                origin: TreeHead(int(head["size"]), _hash(head["root_hash"]))
                for origin, head in document.items()
            }
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise WitnessStateError(f"{self._path} is damaged: {error}") from None

    def _write(self, latest: Mapping[str, TreeHead]) -> None:
        document = {
            origin: {"size": head.size, "root_hash": base64.b64encode(head.root_hash).decode()}
            for origin, head in sorted(latest.items())
        }
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(json.dumps(document, sort_keys=True, indent=1) + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self._path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _hash(text: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as error:
        raise ValueError(f"root hash {text!r} is not base64") from error
    if len(raw) != 32:
        raise ValueError(f"root hash {text!r} is not 32 bytes")
    return raw
