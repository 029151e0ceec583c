"""The component model the Journal plugs into (the Hub's registry contracts)."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["NenjimComponent", "NenjimProcess"]


class NenjimComponent(ABC):  # noqa: B024 - a marker: registrable, nothing to implement
    """A registrable, application-facing component."""


class NenjimProcess(NenjimComponent):
    """A component with a lifecycle: ``start()`` once, then ``stop()``."""

    @abstractmethod
    def start(self) -> None:
        """Start; single use: a second call raises ``LifecycleError``."""

    @abstractmethod
    def stop(self) -> None:
        """Stop; queries fail afterwards."""


def __dir__() -> list[str]:
    # The API only: names imported for the definitions are attributes too, not API.
    return sorted(__all__)
