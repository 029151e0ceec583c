"""What an audit reports: one :class:`Finding` per disagreement, in an :class:`AuditReport`.

Both logs' audits (the Journal's and the Storage SPI's) report in this one
shape. A finding has a ``source``:

- ``"log"``: the log breaks its own rules (a missing version, a state that
  does not decode, a replace that skips a revision, a broken chain link, a
  digest claim that disagrees, ...). The log cannot be trusted to rebuild
  from, so a repair refuses.
- ``"table"``: something derived from the log (an inline table such as
  ``storage_records``, a persisted projection, the transparency tree)
  disagrees with what the log implies. A repair rebuilds it from the log.
- ``"schema"``: a generated index the catalog needs is missing. A repair
  creates it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nenjim.immutable import immutable

Source = Literal["log", "table", "schema"]

_SHOWN = 160  # characters of a value shown in a line; the JSON report has them whole


@immutable
@dataclass(frozen=True, slots=True)
class Finding:
    """One disagreement, printable as one line.

    ``table`` is where it was found, ``resource`` and ``key`` (record key,
    stream name or blob key) what it concerns, ``field`` which part (empty
    when ``log`` says it all); ``log`` is what the log says (for a ``log``
    finding: what is wrong with it) and ``stored`` what the table holds
    (``None`` when the finding is not a comparison of two values).
    """

    source: Source
    table: str
    resource: str | None
    key: str | None
    field: str
    log: str
    stored: str | None = None

    def line(self) -> str:
        """The finding as one line (keys are JSON-quoted, so a newline in one stays escaped)."""
        where = self.table
        if self.resource is not None:
            where += f" {self.resource}"
        if self.key is not None:
            where += f"[{json.dumps(self.key, ensure_ascii=False)}]"
        if self.stored is not None:
            return f"{where} {self.field}: log says {_short(self.log)}; table says " + _short(
                self.stored or ""
            )
        return f"{where} {self.field}: {_short(self.log)}" if self.field else f"{where}: {self.log}"

    def as_json(self) -> dict[str, Any]:
        """The finding as a JSON object (values whole)."""
        return {
            "source": self.source,
            "table": self.table,
            "resource": self.resource,
            "key": self.key,
            "field": self.field,
            "log": self.log,
            "stored": self.stored,
            "line": self.line(),
        }


@immutable
@dataclass(frozen=True, slots=True)
class AuditReport:
    """The findings of one audit, and what the log held."""

    store: str
    events: int
    """Events read from the log."""
    live: Mapping[str, int]
    """What the log implies is live, by kind: ``records``, ``streams`` and ``blobs`` for the
    Storage log, ``artifacts`` and ``revisions`` for the Journal's."""
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """True if every table agrees with the log and the log with its rules."""
        return not self.findings

    @property
    def log_findings(self) -> tuple[Finding, ...]:
        """The findings in the log itself (a repair refuses while there are any)."""
        return tuple(finding for finding in self.findings if finding.source == "log")

    @property
    def repairable(self) -> bool:
        """True if a repair can make the store clean: every finding is in a table or index."""
        return not self.log_findings

    def lines(self) -> list[str]:
        """One line per finding."""
        return [finding.line() for finding in self.findings]

    def summary(self) -> str:
        """One line: what was read and how many findings."""
        live = ", ".join(f"{count} {kind}" for kind, count in self.live.items())
        return f"{self.store}: {self.events} events, live {live}; {len(self.findings)} findings"

    def as_json(self) -> dict[str, Any]:
        """The report as a JSON object."""
        return {
            "store": self.store,
            "ok": self.ok,
            "repairable": self.repairable,
            "events": self.events,
            "live": dict(self.live),
            "findings": [finding.as_json() for finding in self.findings],
        }


def _short(text: str) -> str:
    one_line = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(one_line) <= _SHOWN:
        return one_line
    return f"{one_line[:_SHOWN]}… ({len(one_line)} characters)"
