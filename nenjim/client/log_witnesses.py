"""A witness policy: a served checkpoint is trusted only with N valid cosignatures of these
witnesses (C2SP tlog-cosignature v1), as ``verify-log`` and ``monitor`` require with
``--witness VKEY --witnesses-required N``.

Cosignatures by keys the policy does not name are ignored; one by a named
witness that does not verify refuses the checkpoint, as a bad note signature
does.
"""

from __future__ import annotations

from dataclasses import dataclass

from nenjim.client.log_hashing import BadCheckpointError
from nenjim.domain.transparency import (
    CosignerVerifier,
    TransparencyError,
    VerifierKey,
    check_cosignatures,
    open_note,
)


class WitnessPolicyError(BadCheckpointError):
    """The served checkpoint lacks the cosignatures the witness policy requires."""


@dataclass(frozen=True, slots=True)
class WitnessPolicy:
    """``required`` valid cosignatures of ``witnesses`` (distinct witnesses) are needed."""

    witnesses: tuple[CosignerVerifier, ...]
    required: int

    def __str__(self) -> str:
        names = ", ".join(f"{w.name}+{w.key_id:08x}" for w in self.witnesses)
        return f"{self.required} of the witnesses {names}"

    def check(self, note: str, verifier: VerifierKey, where: str) -> int:
        """The number of valid cosignatures on the signed checkpoint ``note`` (served at
        ``where``) by the policy's witnesses; :class:`WitnessPolicyError` if too few."""
        try:
            cosigned = check_cosignatures(open_note(note, [verifier]), self.witnesses)
        except TransparencyError as error:
            raise WitnessPolicyError(f"{where}: {error}") from None
        if len(cosigned) < self.required:
            raise WitnessPolicyError(
                f"{where} has {len(cosigned)} valid cosignatures; the policy requires {self}"
            )
        return len(cosigned)
