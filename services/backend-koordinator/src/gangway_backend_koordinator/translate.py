"""PodGang → Koordinator gangs, and what koord-scheduler cannot take. Pure.

GREP-375's PodGang is a set of podgroups, each with its own minimum, placed all or nothing
together. Koordinator says the same with one gang per podgroup and a GangGroup binding them:
each podgroup becomes a PodGroup (``scheduling.sigs.k8s.io/v1alpha1``, named like the
podgroup) with ``minMember`` = its minReplicas and ``total-number`` = its pods, and every
PodGroup of the PodGang lists all of them in ``gang.scheduling.koordinator.sh/groups``: no
gang of the group binds until every one has its minimum. Pods join their podgroup's gang by
the label ``pod-group.scheduling.sigs.k8s.io`` and go to koord-scheduler.
"""

from __future__ import annotations

import json
from typing import Final

from gangway_backend_koordinator.builtin import NAME, KoordinatorConfig
from gangway_backendkit.checks import spare_pods_in_shared_gangs, without_topology
from gangway_backendkit.converge import carried_metadata, gang_object_name
from gangway_backendkit.pods import PreparePod, amend
from gangway_backendkit.protocol import Manifest
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import UnsupportedFeature
from gangway_runtime.kube import ApiResource

PODGROUPS: Final = ApiResource("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")
# The whole string is the label key (no slash): Koordinator's and scheduler-plugins' old form.
POD_GROUP_LABEL: Final = "pod-group.scheduling.sigs.k8s.io"
_GANG: Final = "gang.scheduling.koordinator.sh"
TOTAL_NUMBER: Final = f"{_GANG}/total-number"
MODE: Final = f"{_GANG}/mode"
GROUPS: Final = f"{_GANG}/groups"
MATCH_POLICY: Final = f"{_GANG}/match-policy"
FEATURE: Final = "ElasticGangGroup"


def gang_group(podgang: PodGang) -> list[str]:
    """Every gang of the PodGang as ``namespace/name``, in the PodGang's order (Koordinator
    sorts them into the group's id; each member lists the same set)."""
    namespace = podgang.metadata.namespace
    return [
        f"{namespace}/{gang_object_name(podgang, group.name)}" for group in podgang.spec.podgroups
    ]


def podgroups(podgang: PodGang, config: KoordinatorConfig) -> list[Manifest]:
    """One Koordinator gang (PodGroup) per podgroup of the PodGang, all in one GangGroup."""
    group = json.dumps(gang_group(podgang))
    found = []
    for podgroup in podgang.spec.podgroups:
        metadata = carried_metadata(podgang, podgroup.name)
        metadata["annotations"].update(
            {
                # Before the pods exist the PodGang lists none; Koordinator raises the
                # total to the minimum anyway.
                TOTAL_NUMBER: str(max(len(podgroup.pod_references), podgroup.min_replicas)),
                MODE: config.mode,
                GROUPS: group,
            }
        )
        if config.match_policy:
            metadata["annotations"][MATCH_POLICY] = config.match_policy
        spec = {"minMember": podgroup.min_replicas}
        if config.schedule_timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = config.schedule_timeout_seconds
        found.append(
            {
                "apiVersion": PODGROUPS.api_version,
                "kind": "PodGroup",
                "metadata": metadata,
                "spec": spec,
            }
        )
    return found


def prepare_pod(scheduler_name: str) -> PreparePod:
    """Hand a pod to koord-scheduler, in its podgroup's gang."""

    def prepare(pod: Manifest, podgang: PodGang, podgroup_name: str) -> Manifest:
        return amend(
            pod,
            labels={POD_GROUP_LABEL: gang_object_name(podgang, podgroup_name)},
            spec={"schedulerName": scheduler_name},
        )

    return prepare


def validate(pcs: PodCliqueSet) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """Errors (rejected at admission) and unsupported features (admitted, reported).
    Koordinator's own network-topology gang placement (ClusterNetworkTopology, gather
    strategies per layer) is not mapped from Grove's pack constraints yet."""
    errors, unsupported = without_topology(pcs, NAME)
    unsupported += spare_pods_held(pcs)
    return errors, unsupported


def spare_pods_held(pcs: PodCliqueSet) -> list[UnsupportedFeature]:
    """Each clique with more replicas than its minAvailable whose PodGang holds other
    podgroups too. koord-scheduler v1.8.0 tries a GangGroup's pods in an order that does not
    put each gang's minimum first: when the room is short of every pod, spare pods of one role
    can take what another role's minimum needs, and the group is rejected and tried again the
    same way (seen in tests/e2e/test_koordinator.py). Admitted — no gang ever binds below its
    minimum — and said: such a PodGang is placed once all its pods fit."""
    return [
        UnsupportedFeature(
            field=field,
            feature=FEATURE,
            message=f"koord-scheduler places {gang} once every pod of its GangGroup fits: "
            f"clique {clique}'s pods beyond its minAvailable can hold the other roles back",
        )
        for field, clique, gang in spare_pods_in_shared_gangs(pcs)
    ]
