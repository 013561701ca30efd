"""default-scheduler (alias kube-scheduler), as the table of built-in backends knows it:
always enabled (GREP-375); with gangScheduling, PodGangs become Workload API objects."""

from __future__ import annotations

from typing import Final

from gangway_contracts.backend_config import BackendConfig
from gangway_contracts.builtin import BuiltinBackend
from gangway_contracts.config import DEFAULT_SCHEDULER
from gangway_contracts.mirrored import MirroredResource, backend_resource


class KubeSchedulerConfig(BackendConfig):
    """default-scheduler: with gangScheduling, PodGangs become Workload API objects."""

    gang_scheduling: bool = False


# Workload API: 1.35 serves v1alpha1 (Workload only), 1.36 v1alpha2 and 1.37 v1beta1
# (Workload + PodGroup).
WORKLOADS: Final = backend_resource(
    DEFAULT_SCHEDULER, "workloads", "scheduling.k8s.io", "v1beta1", "v1alpha2", "v1alpha1"
)
KUBE_PODGROUPS: Final = backend_resource(
    DEFAULT_SCHEDULER, "podgroups", "scheduling.k8s.io", "v1beta1", "v1alpha2"
)
# A PodGang's tree root: 1.37 serves v1alpha3 (gate CompositePodGroup), 1.38 v1beta1.
KUBE_COMPOSITES: Final = backend_resource(
    DEFAULT_SCHEDULER, "compositepodgroups", "scheduling.k8s.io", "v1beta1", "v1alpha3"
)


def mirrored(config: KubeSchedulerConfig) -> tuple[MirroredResource, ...]:
    """The Workload API's objects, when PodGangs become them."""
    return (WORKLOADS, KUBE_PODGROUPS, KUBE_COMPOSITES) if config.gang_scheduling else ()


BACKEND: Final = BuiltinBackend(
    name=DEFAULT_SCHEDULER,
    aliases=("kube-scheduler",),
    config=KubeSchedulerConfig,
    service="gangway_backend_kube",
    factory="gangway_backend_kube.backend:KubeBackend.from_config",
    mirrored=mirrored,
)
