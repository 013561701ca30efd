"""PodGang → the Workload API of the Kubernetes default scheduler, and what it cannot take.
Pure.

One pod group per PodGang podgroup, each gang-scheduled with minCount = minReplicas (basic
when that is 0). Its name in the Workload is the podgroup's name relative to the base gang
(``leader``, ``workers-0-worker``), readable and a DNS label as the API wants.

- ``v1beta1`` (Kubernetes 1.37): a Workload of podGroupTemplates, plus one PodGroup object
  per podgroup named like it, pointing back with ``spec.workloadRef``; pods carry
  ``spec.schedulingGroup.podGroupName``.
- ``v1alpha2`` (1.36): the same shape, the PodGroup pointing back with
  ``spec.podGroupTemplateRef.workload``.
- ``v1alpha1`` (1.35): a Workload of podGroups; pods carry ``spec.workloadRef``.

Where the API server serves CompositePodGroup (1.37 ``v1alpha3``, 1.38 ``v1beta1``; gate
``CompositePodGroup``) beside a v1beta1 Workload, a PodGang of two podgroups or more is one
tree, placed whole or not at all: the Workload's one compositePodGroupTemplate (its name
``ROOT``, gang with minGroupCount = its podgroups) holds the podgroups' templates, and a
CompositePodGroup named like the Workload is the parent of every PodGroup. Else the
kube-scheduler gangs each pod group on its own: each podgroup is placed whole, the PodGang
not (``atomic`` says which).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, Literal

from gangway_backendkit.checks import without_topology
from gangway_backendkit.converge import carried_metadata, gang_object_name
from gangway_backendkit.pods import PreparePod, amend
from gangway_backendkit.protocol import Manifest, SyncFailed
from gangway_contracts import labels
from gangway_contracts.config import DEFAULT_SCHEDULER
from gangway_contracts.errors import FieldError, not_dns_labels
from gangway_contracts.grove import (
    SCHEDULER_GROUP,
    PodCliqueSet,
    PodGang,
    longest_instance_names,
)
from gangway_contracts.k8s import is_dns_label
from gangway_contracts.podspec import priority_class_of
from gangway_contracts.rpc import UnsupportedFeature
from gangway_runtime.kube import ApiResource

NAME: Final = DEFAULT_SCHEDULER
GROUP: Final = "scheduling.k8s.io"
WorkloadVersion = Literal["v1beta1", "v1alpha2", "v1alpha1"]
# Newest first: the order a backend looks for what the API server serves.
WORKLOAD_VERSIONS: Final[tuple[WorkloadVersion, ...]] = ("v1beta1", "v1alpha2", "v1alpha1")
# The versions with PodGroup objects beside the Workload (and pods in a schedulingGroup).
WITH_PODGROUPS: Final[frozenset[WorkloadVersion]] = frozenset({"v1beta1", "v1alpha2"})
MAX_POD_GROUPS: Final = 8  # per Workload, in every version
CompositeVersion = Literal["v1beta1", "v1alpha3"]
COMPOSITE_VERSIONS: Final[tuple[CompositeVersion, ...]] = ("v1beta1", "v1alpha3")
# The root template's name in a Workload of one tree. A podgroup's template may not take it
# (a base gang clique named "podgang"): that PodGang is refused (SyncFailed), by name.
ROOT: Final = "podgang"


def workloads(version: WorkloadVersion) -> ApiResource:
    return ApiResource(GROUP, version, "workloads")


def podgroups_of(version: WorkloadVersion) -> ApiResource:
    return ApiResource(GROUP, version, "podgroups")


def composites_of(version: CompositeVersion) -> ApiResource:
    return ApiResource(GROUP, version, "compositepodgroups")


def atomic(podgang: PodGang, composite: CompositeVersion | None) -> bool:
    """The PodGang is one tree (placed whole): CompositePodGroup is served and the PodGang
    has two podgroups or more, each needing a pod (a podgroup of minReplicas 0 would count
    as placed with one pod in a tree: such a PodGang keeps one pod group per podgroup)."""
    groups = podgang.spec.podgroups
    return composite is not None and len(groups) > 1 and all(g.min_replicas > 0 for g in groups)


def template_name(podgang: PodGang, podgroup: str) -> str:
    """A podgroup's name inside the Workload: relative to the base gang of its PCS replica."""
    base = podgang.metadata.labels.get(labels.BASE_PODGANG, podgang.metadata.name)
    return podgroup.removeprefix(f"{base}-")


def _policy(min_replicas: int) -> dict[str, Any]:
    return {"gang": {"minCount": min_replicas}} if min_replicas > 0 else {"basic": {}}


def _priority(podgang: PodGang) -> dict[str, Any]:
    """The PodGang's priority class (the PodCliqueSet's), for its pod groups and their pods:
    kube-scheduler refuses a pod whose priority is not its pod group's ("all pods in a single
    pod group should have the same priority")."""
    name = podgang.spec.priority_class_name
    return {"priorityClassName": name} if name else {}


def _checked(podgang: PodGang) -> list[tuple[str, str, int]]:
    """(podgroup, template name, minReplicas) per podgroup; SyncFailed if the Workload API
    cannot hold them."""
    groups = podgang.spec.podgroups
    if len(groups) > MAX_POD_GROUPS:
        raise SyncFailed(
            "TooManyPodGroups",
            f"a Workload holds at most {MAX_POD_GROUPS} pod groups; "
            f"PodGang {podgang.metadata.name} has {len(groups)}",
        )
    found = []
    for i, group in enumerate(groups):
        name = template_name(podgang, group.name)
        if not is_dns_label(name):
            raise SyncFailed(
                "InvalidPodGroupName", f'spec.podgroups[{i}]: "{name}" is not a DNS label'
            )
        found.append((group.name, name, group.min_replicas))
    return found


def _tree_checked(podgang: PodGang) -> list[tuple[str, str, int]]:
    groups = _checked(podgang)
    if any(name == ROOT for _, name, _ in groups):
        raise SyncFailed(
            "InvalidPodGroupName",
            f"a podgroup's template is named \"{ROOT}\", the name of the PodGang's own "
            "template in its Workload: rename the clique",
        )
    return groups


def workload(
    podgang: PodGang, version: WorkloadVersion, composite: CompositeVersion | None = None
) -> Manifest:
    groups = _checked(podgang)
    templates = [
        {"name": name, "schedulingPolicy": _policy(n), **_priority(podgang)}
        for _, name, n in groups
    ]
    if version in WITH_PODGROUPS and atomic(podgang, composite):
        root = {
            "name": ROOT,
            "schedulingPolicy": {"gang": {"minGroupCount": len(_tree_checked(podgang))}},
            **_priority(podgang),
            "podGroupTemplates": templates,
        }
        spec_groups: dict[str, Any] = {"compositePodGroupTemplates": [root]}
    elif version in WITH_PODGROUPS:
        spec_groups = {"podGroupTemplates": templates}
    else:
        spec_groups = {"podGroups": [{"name": name, "policy": _policy(n)} for _, name, n in groups]}
    return {
        "apiVersion": workloads(version).api_version,
        "kind": "Workload",
        "metadata": carried_metadata(podgang, podgang.metadata.name),
        "spec": {
            "controllerRef": {
                "apiGroup": SCHEDULER_GROUP,
                "kind": "PodGang",
                "name": podgang.metadata.name,
            },
            **spec_groups,
        },
    }


def _template_ref(version: WorkloadVersion, workload: str, template: str) -> dict[str, Any]:
    """How a PodGroup names the Workload template it was made from."""
    if version == "v1beta1":
        return {"workloadRef": {"workloadName": workload, "templateName": template}}
    return {
        "podGroupTemplateRef": {
            "workload": {"workloadName": workload, "podGroupTemplateName": template}
        }
    }


def podgroups(
    podgang: PodGang, version: WorkloadVersion, composite: CompositeVersion | None = None
) -> list[Manifest]:
    """The PodGroup objects of v1alpha2 and v1beta1, one per podgroup, named like it; in a
    tree, each the child of the PodGang's CompositePodGroup."""
    workload_name = gang_object_name(podgang, podgang.metadata.name)
    parent = {"parentCompositePodGroupName": workload_name} if atomic(podgang, composite) else {}
    return [
        {
            "apiVersion": podgroups_of(version).api_version,
            "kind": "PodGroup",
            "metadata": carried_metadata(podgang, group),
            "spec": {
                **parent,
                **_template_ref(version, workload_name, name),
                "schedulingPolicy": _policy(n),
                **_priority(podgang),
            },
        }
        for group, name, n in _checked(podgang)
    ]


def composite_podgroup(podgang: PodGang, composite: CompositeVersion) -> Manifest:
    """The root of a PodGang's tree: every podgroup placed, or none. Named like the
    Workload, made from its one composite template."""
    name = gang_object_name(podgang, podgang.metadata.name)
    return {
        "apiVersion": composites_of(composite).api_version,
        "kind": "CompositePodGroup",
        "metadata": carried_metadata(podgang, podgang.metadata.name),
        "spec": {
            "workloadRef": {"workloadName": name, "templateName": ROOT},
            "schedulingPolicy": {"gang": {"minGroupCount": len(_tree_checked(podgang))}},
            **_priority(podgang),
        },
    }


def resources(
    podgang: PodGang, version: WorkloadVersion, composite: CompositeVersion | None = None
) -> list[Manifest]:
    """Everything for one PodGang, each parent before its children: the Workload, the
    CompositePodGroup of a tree, the PodGroups."""
    if version not in WITH_PODGROUPS:
        return [workload(podgang, version)]
    found = [workload(podgang, version, composite)]
    if composite is not None and atomic(podgang, composite):
        found.append(composite_podgroup(podgang, composite))
    return found + podgroups(podgang, version, composite)


def prepare_pod(version: WorkloadVersion | None) -> PreparePod:
    """The pod preparation for a Workload API version (None: gang scheduling off)."""

    def prepare(pod: Manifest, podgang: PodGang, podgroup: str) -> Manifest:
        spec: dict[str, Any] = {"schedulerName": NAME}
        if version in WITH_PODGROUPS:
            spec["schedulingGroup"] = {"podGroupName": gang_object_name(podgang, podgroup)}
            # At its pod group's priority, or kube-scheduler refuses it (Grove gives every
            # pod the PodCliqueSet's priority class too).
            spec |= _priority(podgang)
        elif version == "v1alpha1":
            spec["workloadRef"] = {
                "name": gang_object_name(podgang, podgang.metadata.name),
                "podGroup": template_name(podgang, podgroup),
            }
        return amend(pod, spec=spec)

    return prepare


# --- validation -----------------------------------------------------------------------------


def _gang_sizes(pcs: PodCliqueSet) -> Iterator[tuple[str, str, int]]:
    """(field, gang, podgroups in it) for the base gang and each scaling group's gangs."""
    template = pcs.spec.template
    grouped = {name for g in template.pod_clique_scaling_groups for name in g.clique_names}
    base = sum(1 for c in template.cliques if c.name not in grouped)
    base += sum(
        min(g.min_available, g.replicas) * len(g.clique_names)
        for g in template.pod_clique_scaling_groups
    )
    yield "spec.template", "the base gang", base
    for i, group in enumerate(template.pod_clique_scaling_groups):
        field = f"spec.template.podCliqueScalingGroups[{i}].cliqueNames"
        yield field, f"each scaled gang of {group.name}", len(group.clique_names)


def validate(
    pcs: PodCliqueSet, gang_scheduling: bool
) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """Errors (rejected at admission) and unsupported features (admitted, reported)."""
    errors, unsupported = without_topology(pcs, NAME)
    if not gang_scheduling:
        return errors, unsupported
    errors.extend(
        FieldError(
            field=field,
            reason=f"{gang} would have {count} pod groups; the Workload API holds at most "
            f"{MAX_POD_GROUPS}",
        )
        for field, gang, count in _gang_sizes(pcs)
        if count > MAX_POD_GROUPS
    )
    errors += not_dns_labels("Workload pod group name", longest_instance_names(pcs))
    errors += _priorities_apart(pcs)
    return errors, unsupported


def _priorities_apart(pcs: PodCliqueSet) -> list[FieldError]:
    """A clique's own priority class where the PodCliqueSet names none: its pods would not be
    at their pod group's priority, and kube-scheduler refuses every one of them."""
    if pcs.spec.template.priority_class_name:
        return []  # every pod gets the PodCliqueSet's (as Grove gives it)
    return [
        FieldError(
            field=f"spec.template.cliques[{i}].spec.podSpec.priorityClassName",
            reason=f'"{name}": the default scheduler places a pod group at one priority, '
            "its own; set spec.template.priorityClassName instead (every pod gets it)",
        )
        for i, clique in enumerate(pcs.spec.template.cliques)
        if (name := priority_class_of(clique.spec.pod_spec))
    ]
