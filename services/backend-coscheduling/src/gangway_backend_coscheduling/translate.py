"""PodGang → scheduler-plugins' Coscheduling PodGroup, and what Coscheduling cannot take. Pure.

One PodGroup (``scheduling.x-k8s.io/v1alpha1``) per PodGang, named like it; pods join it by
the label ``scheduling.x-k8s.io/pod-group`` and go to the scheduler whose profile enables
Coscheduling. The plugin counts a group's pods as one: ``minMember`` is the sum of the
PodGang's podgroup minimums, so the gang binds all of its minimum or nothing. What a single
count cannot say — that each podgroup (role) gets its own minimum — is reported, not hidden:
see :func:`shared_minimums`.
"""

from __future__ import annotations

from typing import Final

from gangway_backend_coscheduling.builtin import NAME, CoschedulingConfig
from gangway_backendkit.checks import spare_pods_in_shared_gangs, without_topology
from gangway_backendkit.converge import carried_metadata, gang_object_name
from gangway_backendkit.pods import PreparePod, amend
from gangway_backendkit.protocol import Manifest
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import UnsupportedFeature
from gangway_runtime.kube import ApiResource

PODGROUPS: Final = ApiResource("scheduling.x-k8s.io", "v1alpha1", "podgroups")
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
FEATURE: Final = "PerPodGroupMinimum"


def min_member(podgang: PodGang) -> int:
    """The gang's minimum: every podgroup's, summed. At least 1 (the CRD's minimum): a
    PodGang whose podgroups ask for none is placed pod by pod."""
    return max(1, sum(group.min_replicas for group in podgang.spec.podgroups))


def podgroup(podgang: PodGang, config: CoschedulingConfig) -> Manifest:
    """The Coscheduling PodGroup for a PodGang."""
    spec: dict[str, int] = {"minMember": min_member(podgang)}
    if config.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = config.schedule_timeout_seconds
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": "PodGroup",
        "metadata": carried_metadata(podgang, podgang.metadata.name),
        "spec": spec,
    }


def spare_pods(podgang: PodGang) -> list[str]:
    """The podgroups with pods beyond their minimum in a PodGang of several podgroups: their
    spare pods count towards the shared minMember, so another podgroup may start short."""
    groups = podgang.spec.podgroups
    if len(groups) < 2:
        return []
    return [g.name for g in groups if len(g.pod_references) > g.min_replicas]


def prepare_pod(scheduler_name: str) -> PreparePod:
    """Hand a pod to the Coscheduling scheduler, in its PodGang's PodGroup."""

    def prepare(pod: Manifest, podgang: PodGang, podgroup_name: str) -> Manifest:
        return amend(
            pod,
            labels={POD_GROUP_LABEL: gang_object_name(podgang, podgang.metadata.name)},
            spec={"schedulerName": scheduler_name},
        )

    return prepare


# --- validation -----------------------------------------------------------------------------


def validate(pcs: PodCliqueSet) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """Errors (rejected at admission) and unsupported features (admitted, reported)."""
    errors, unsupported = without_topology(pcs, NAME)
    unsupported += shared_minimums(pcs)
    return errors, unsupported


def shared_minimums(pcs: PodCliqueSet) -> list[UnsupportedFeature]:
    """Each clique with more replicas than its minAvailable whose PodGang holds other
    podgroups too: one PodGroup has one minMember, so its spare pods may stand in for
    another role's missing ones. Admitted (the gang's total still binds all or nothing) and
    said, in the admission warning and the PodCliqueSet's FeaturesSupported condition."""
    return [
        UnsupportedFeature(
            field=field,
            feature=FEATURE,
            message=f"{NAME} keeps one minimum per PodGang ({gang}: the sum of its podgroups'); "
            f"clique {clique}'s pods beyond its minAvailable may count towards another "
            "clique's minimum",
        )
        for field, clique, gang in spare_pods_in_shared_gangs(pcs)
    ]
