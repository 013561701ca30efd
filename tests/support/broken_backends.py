"""Two third-party backends, each broken as a backend author might break theirs, for
``gangway conformance`` to catch. Both are the default scheduler's backend (the Workload API,
kube-scheduler places their pods) with one mistake:

- ``drops-minimum`` writes every pod group with a minimum of one pod, so the scheduler
  places whatever fits: all-or-nothing must fail;
- ``keys-by-name`` knows its gangs by name alone: a second gang of that name, in another
  namespace, is taken for the first, and its pods go to the scheduler without a group:
  same-name-two-namespaces must fail.

Run as ``python -m tests.support.broken_backends <name>``, declared ``external: true``
(:func:`operator_config`).
"""

from __future__ import annotations

import sys
from typing import Any, Final

import msgspec

from gangway_backend_kube.backend import KubeBackend
from gangway_backend_kube.translate import NAME as KUBE_SCHEDULER
from gangway_backendkit.pods import amend, prepare_each
from gangway_backendkit.protocol import Manifest
from gangway_backendkit.run import run
from gangway_backendkit.settings import BackendSettings
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import PreparePodsReply, PreparePodsRequest
from gangway_runtime.settings import load_settings

# What the watcher mirrors for them: the Workload API of Kubernetes 1.37.
RESOURCES: Final = (
    "workloads.scheduling.k8s.io/v1beta1",
    "podgroups.scheduling.k8s.io/v1beta1",
    "compositepodgroups.scheduling.k8s.io/v1alpha3",
)


class DropsMinimum(KubeBackend):
    name = "drops-minimum"

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        groups = [msgspec.structs.replace(g, min_replicas=1) for g in podgang.spec.podgroups]
        spec = msgspec.structs.replace(podgang.spec, podgroups=groups)
        return super().resources(msgspec.structs.replace(podgang, spec=spec), podcliqueset)


class KeysByName(KubeBackend):
    name = "keys-by-name"

    def __init__(self, gang_scheduling: bool) -> None:
        super().__init__(gang_scheduling)
        self.namespace_of: dict[str, str] = {}  # gang name → the first namespace seen

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        gang = request.podgang.metadata
        if self.namespace_of.setdefault(gang.name, gang.namespace) == gang.namespace:
            return super().prepare_pods(request)
        # "Already grouped": the pods go to kube-scheduler on their own.
        return prepare_each(
            request, lambda pod, *_: amend(pod, spec={"schedulerName": KUBE_SCHEDULER})
        )


BROKEN: Final = {backend.name: backend for backend in (DropsMinimum, KeysByName)}


def operator_config(name: str) -> dict[str, Any]:
    """An operator configuration where the broken backend ``name`` owns every workload."""
    profile = {"name": name, "external": True, "default": True, "resources": list(RESOURCES)}
    return {"scheduler": {"profiles": [profile]}}


if __name__ == "__main__":
    run(BROKEN[sys.argv[1]](gang_scheduling=True), load_settings(BackendSettings))
