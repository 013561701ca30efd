"""volcano (Volcano's vc-scheduler), as the table of built-in backends knows it."""

from __future__ import annotations

from typing import Final

from pydantic import field_validator

from gangway_contracts.backend_config import NamedSchedulerConfig
from gangway_contracts.builtin import BuiltinBackend, always
from gangway_contracts.k8s import is_dns_subdomain
from gangway_contracts.mirrored import MirroredResource, backend_resource

NAME: Final = "volcano"  # its profile name: the table's key


class VolcanoConfig(NamedSchedulerConfig):
    """volcano: Volcano's vc-scheduler; one PodGroup per PodGang, in a queue. It holds no
    placed pod waiting (a gang binds whole in one session), so there is no timeout."""

    scheduler_name: str = "volcano"
    # The queue of a PodCliqueSet that names none: Volcano's own default, which its scheduler
    # creates at start.
    default_queue: str = "default"

    @field_validator("default_queue")
    @classmethod
    def _queue_name(cls, value: str) -> str:
        if not is_dns_subdomain(value):
            raise ValueError("must be a DNS-1123 subdomain: the name of a Volcano Queue")
        return value


VOLCANO_PODGROUPS: Final = backend_resource(NAME, "podgroups", "scheduling.volcano.sh", "v1beta1")
# Every Queue (cluster-scoped, few, Volcano's or the platform team's own): whether a gang's
# queue has a capability tells a gang over its quota from one with no room (view.py). The
# backend's consumer sees a Queue change too, finds no PodGang of its name and does nothing.
VOLCANO_QUEUES: Final = MirroredResource(
    kind="queues.scheduling.volcano.sh",
    group="scheduling.volcano.sh",
    versions=("v1beta1",),
    plural="queues",
    namespaced=False,
    backend=NAME,
)


BACKEND: Final = BuiltinBackend(
    name=NAME,
    config=VolcanoConfig,
    service="gangway_backend_volcano",
    factory="gangway_backend_volcano.backend:VolcanoBackend.from_config",
    mirrored=always(VOLCANO_PODGROUPS, VOLCANO_QUEUES),
)
