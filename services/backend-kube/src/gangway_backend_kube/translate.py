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
``CompositePodGroup``) beside a v1beta1 Workload, a PodGang is one tree (``tree.py``),
placed whole or not at all and packed where Grove asks: when it has two podgroups or more,
or packing above its podgroups (``atomic`` says which). Else the kube-scheduler gangs each
pod group on its own: each podgroup is placed whole, the PodGang not; and required packing
is refused at admission (the gates that bring the tree bring topology-aware placement).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any, Final, Literal

from gangway_backend_kube import tree
from gangway_backendkit.checks import spare_pods_in_shared_gangs, without_topology
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


def workloads(version: WorkloadVersion) -> ApiResource:
    return ApiResource(GROUP, version, "workloads")


def podgroups_of(version: WorkloadVersion) -> ApiResource:
    return ApiResource(GROUP, version, "podgroups")


def composites_of(version: CompositeVersion) -> ApiResource:
    return ApiResource(GROUP, version, "compositepodgroups")


def atomic(podgang: PodGang, composite: CompositeVersion | None) -> bool:
    """The PodGang is one tree: CompositePodGroup is served, the PodGang has two podgroups
    or more or packing above them, and each podgroup needs a pod (one of minReplicas 0
    would count as placed with one pod in a tree: such a PodGang keeps a pod group per
    podgroup, and packing above its podgroups fails its sync)."""
    spec = podgang.spec
    above = tree.required(spec.topology_constraint) or spec.topology_constraint_group_configs
    return (
        composite is not None
        and (len(spec.podgroups) > 1 or bool(above))
        and all(g.min_replicas > 0 for g in spec.podgroups)
    )


def template_name(podgang: PodGang, podgroup: str) -> str:
    """A podgroup's name inside the Workload: relative to the base gang of its PCS replica."""
    base = podgang.metadata.labels.get(labels.BASE_PODGANG, podgang.metadata.name)
    return podgroup.removeprefix(f"{base}-")


def _priority(podgang: PodGang) -> dict[str, Any]:
    """The PodGang's priority class (the PodCliqueSet's), for its pod groups and their pods:
    kube-scheduler refuses a pod whose priority is not its pod group's ("all pods in a single
    pod group should have the same priority")."""
    name = podgang.spec.priority_class_name
    return {"priorityClassName": name} if name else {}


def _checked(podgang: PodGang, composite: CompositeVersion | None) -> list[tree.Leaf]:
    """A leaf per podgroup (its packing only where the tree's gates are on); SyncFailed if
    the Workload API cannot hold them."""
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
        packed = tree.required(group.topology_constraint) if composite else None
        found.append(tree.Leaf(group.name, name, group.min_replicas, packed))
    return found


def _tree(
    podgang: PodGang, leaves: list[tree.Leaf], composite: CompositeVersion | None
) -> tree.Node | None:
    """The PodGang's tree, or None; SyncFailed for packing above its podgroups that no
    tree can hold."""
    if atomic(podgang, composite):
        return tree.tree_of(podgang, leaves, partial(template_name, podgang))
    spec = podgang.spec
    if composite and (tree.required(spec.topology_constraint) or _packed_configs(podgang)):
        raise SyncFailed(
            "PackingNeedsWholeGang",
            "required packing above the podgroups needs the PodGang as one tree, and a "
            "podgroup of minReplicas 0 keeps it from being one",
        )
    return None


def _packed_configs(podgang: PodGang) -> bool:
    configs = podgang.spec.topology_constraint_group_configs
    return any(tree.required(c.topology_constraint) for c in configs)


def _workload(
    podgang: PodGang, version: WorkloadVersion, leaves: list[tree.Leaf], root: tree.Node | None
) -> Manifest:
    if root is not None:
        spec_groups: dict[str, Any] = {
            "compositePodGroupTemplates": [tree.template(root, _priority(podgang))]
        }
    elif version in WITH_PODGROUPS:
        spec_groups = {
            "podGroupTemplates": [tree.leaf_template(leaf, _priority(podgang)) for leaf in leaves]
        }
    else:
        spec_groups = {
            "podGroups": [
                {"name": leaf.template, "policy": tree.policy(leaf.min_replicas)} for leaf in leaves
            ]
        }
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


def _podgroups(
    podgang: PodGang, version: WorkloadVersion, leaves: list[tree.Leaf], root: tree.Node | None
) -> list[Manifest]:
    """The PodGroup objects of v1alpha2 and v1beta1, one per podgroup, named like it; in a
    tree, each the child of its group's CompositePodGroup."""
    workload_name = gang_object_name(podgang, podgang.metadata.name)
    parents = tree.parents(podgang, root) if root is not None else {}
    found = []
    for leaf in leaves:
        parent = parents.get(leaf.podgroup)
        spec = {
            **({"parentCompositePodGroupName": parent} if parent else {}),
            **_template_ref(version, workload_name, leaf.template),
            "schedulingPolicy": tree.policy(leaf.min_replicas),
            **_priority(podgang),
            **tree.constraints(leaf.topology),
        }
        found.append(
            {
                "apiVersion": podgroups_of(version).api_version,
                "kind": "PodGroup",
                "metadata": carried_metadata(podgang, leaf.podgroup),
                "spec": spec,
            }
        )
    return found


def composite_names(podgang: PodGang, composite: CompositeVersion | None) -> list[str]:
    """The CompositePodGroups the PodGang is written as (before its incarnation), root
    first; none when it is no tree."""
    if not atomic(podgang, composite):
        return []
    return [
        node.name
        for node in tree.tree_of(
            podgang, _checked(podgang, composite), partial(template_name, podgang)
        ).walk()
    ]


def resources(
    podgang: PodGang, version: WorkloadVersion, composite: CompositeVersion | None = None
) -> list[Manifest]:
    """Everything for one PodGang, each parent before its children: the Workload, the
    CompositePodGroups of a tree, the PodGroups."""
    if version not in WITH_PODGROUPS:
        return [_workload(podgang, version, _checked(podgang, None), None)]
    leaves = _checked(podgang, composite)
    root = _tree(podgang, leaves, composite)
    found = [_workload(podgang, version, leaves, root)]
    if composite is not None and root is not None:
        found += tree.composites(
            podgang, root, composites_of(composite).api_version, _priority(podgang)
        )
    return found + _podgroups(podgang, version, leaves, root)


def prepare_pod(version: WorkloadVersion | None) -> PreparePod:
    """The pod preparation for a Workload API version (None: gang scheduling off)."""

    def prepare(pod: Manifest, podgang: PodGang, podgroup: str) -> Manifest:
        spec: dict[str, Any] = {"schedulerName": NAME}
        if version in WITH_PODGROUPS:
            # Its priority class is its group's: podgang gives every pod the PodCliqueSet's.
            spec["schedulingGroup"] = {"podGroupName": gang_object_name(podgang, podgroup)}
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
    pcs: PodCliqueSet, gang_scheduling: bool, *, packs: bool = False
) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """Errors (rejected at admission) and unsupported features (admitted, reported).
    ``packs``: CompositePodGroup is served (its gates bring topology-aware placement), so
    required packing is honoured; preferred packing never is."""
    errors, unsupported = without_topology(pcs, NAME, honours_required=gang_scheduling and packs)
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
    return errors, unsupported + _spare_pods_first(pcs)


def _spare_pods_first(pcs: PodCliqueSet) -> list[UnsupportedFeature]:
    """kube-scheduler (1.37) places a gang's pod groups one after another, each with every
    pod that fits: a clique's pods beyond its minAvailable can take the room another
    clique's minimum needs, and then the tree is refused whole (the per-podgroup form
    binds the first group and leaves the other waiting). Seen with `gangway conformance`'s
    podgroup-minimums scenario. Admitted and said."""
    return [
        UnsupportedFeature(
            field=field,
            feature="PerPodGroupMinimum",
            message=f"kube-scheduler places {gang}'s pod groups one after another, each with "
            f"every pod that fits: clique {clique}'s pods beyond its minAvailable can take "
            "the room another clique's minimum needs",
        )
        for field, clique, gang in spare_pods_in_shared_gangs(pcs)
    ]
