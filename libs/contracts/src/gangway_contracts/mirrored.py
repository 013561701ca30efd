"""A Kubernetes resource the watcher mirrors onto the bus, and which backend owns it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gangway_contracts import labels

MANAGED_BY_GANGWAY_SELECTOR: Final = f"{labels.MANAGED_BY}={labels.MANAGED_BY_GANGWAY}"


@dataclass(frozen=True)
class MirroredResource:
    kind: str  # the subject token: a Kind, or "<plural>.<group>" for backend resources
    group: str  # "" for the core API
    versions: tuple[str, ...]  # candidates, preferred first: the first one served is used
    plural: str
    namespaced: bool = True
    label_selector: str = ""
    # The backend owning every object of this resource; "" when ownership is per object
    # (PodGangs say it in a label) or nobody's.
    backend: str = ""


def backend_resource(backend: str, plural: str, group: str, *versions: str) -> MirroredResource:
    """A backend's own resource: only the objects Gangway made, all of them the backend's."""
    return MirroredResource(
        kind=f"{plural}.{group}",
        group=group,
        versions=versions,
        plural=plural,
        label_selector=MANAGED_BY_GANGWAY_SELECTOR,
        backend=backend,
    )
