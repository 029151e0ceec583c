"""The domain's persistence contract: the repositories it needs and the errors they raise.

- :mod:`nenjim.domain.persistence.repositories`: the repository interfaces of
  Agents, Teams, Workflows and content (``typing.Protocol`` classes), and
  :class:`~nenjim.domain.persistence.repositories.Revision`, one stored revision of
  a value;
- :mod:`nenjim.domain.persistence.errors`: the errors every implementation raises.

Nothing here does I/O or knows a database. The implementation over the
Storage SPI, ``nenjim.infrastructure.persistence.Persistence`` (``Persistence.open(url)``),
lives outside the domain.
"""
