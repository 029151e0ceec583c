"""Storage declaration of the Workflow domain (catalog row ``workflow.states``).

The one place in :mod:`domain.workflows` that knows the storage layer.
"""

from __future__ import annotations

from infrastructure.storage import Resource

WORKFLOWS = Resource("workflow.states", "records")
"""Workflow states, keyed by ``workflow_instance_id``; no attributes and no guard."""
