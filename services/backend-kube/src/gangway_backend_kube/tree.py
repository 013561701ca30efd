"""A PodGang as one tree of the Workload API, where CompositePodGroup is served: placed whole
or not at all, packed where Grove asks. Pure.

- The root (template ``ROOT``, a CompositePodGroup named like the Workload) gangs its
  children: each ``topologyConstraintGroupConfigs`` entry (a middle CompositePodGroup named
  like the config, its template named as translate names a podgroup's: relative to the base
  gang) and each podgroup in no config. A middle group gangs its podgroups.
- Each podgroup is a PodGroup (as without a tree) whose parent is its group's
  CompositePodGroup.
- Required packing (``pack.required``, a node-label key once the PodGang is written) is each
  node's ``schedulingConstraints.topology``: the PodGang's on the root, a config's on its
  middle group, a podgroup's on its PodGroup. kube-scheduler knows no preferred packing.

Limits of the API (said when the sync fails, by field): template names are DNS labels,
unique in the Workload; at most 8 templates in a list; a tree is at most 4 deep (this one is
3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from gangway_backendkit.converge import carried_metadata, gang_object_name
from gangway_backendkit.protocol import Manifest, SyncFailed
from gangway_contracts.grove import PodGang, PodGangTopologyConstraint
from gangway_contracts.k8s import is_dns_label

ROOT: Final = "podgang"  # the root's template name; no podgroup's or config's may take it
MAX_TEMPLATES: Final = 8  # per list of templates


@dataclass(frozen=True)
class Leaf:
    """One podgroup: its PodGroup's name, its template's, its minimum and packing."""

    podgroup: str
    template: str
    min_replicas: int
    topology: str | None


@dataclass(frozen=True)
class Node:
    """A composite group: its template's name, its CompositePodGroup's (before the gang's
    incarnation: ``gang_object_name``), its packing, and its children."""

    template: str
    name: str
    topology: str | None
    leaves: list[Leaf] = field(default_factory=list)
    groups: list[Node] = field(default_factory=list)

    @property
    def children(self) -> int:
        return len(self.leaves) + len(self.groups)

    def walk(self) -> list[Node]:
        """This node and every node below it, parents first."""
        return [self, *(node for group in self.groups for node in group.walk())]


def required(constraint: PodGangTopologyConstraint | None) -> str | None:
    pack = constraint.pack_constraint if constraint else None
    return pack.required if pack else None


def tree_of(podgang: PodGang, leaves: list[Leaf], template_of: Callable[[str], str]) -> Node:
    """The PodGang's tree over its podgroups' ``leaves``, a group config's template named
    by ``template_of`` (as a podgroup's); SyncFailed when the API cannot hold it."""
    spec, gang = podgang.spec, podgang.metadata.name
    by_podgroup = {leaf.podgroup: leaf for leaf in leaves}
    grouped: set[str] = set()
    groups = []
    for i, config in enumerate(spec.topology_constraint_group_configs):
        members = [by_podgroup[n] for n in config.pod_group_names if n in by_podgroup]
        if not members:
            continue  # a group of none of the gang's podgroups: nothing to hold together
        grouped.update(leaf.podgroup for leaf in members)
        groups.append(
            Node(
                template=_checked(
                    template_of(config.name), f"spec.topologyConstraintGroupConfigs[{i}].name"
                ),
                name=config.name,
                topology=required(config.topology_constraint),
                leaves=members,
            )
        )
    root = Node(
        template=ROOT,
        name=gang,
        topology=required(spec.topology_constraint),
        leaves=[leaf for leaf in leaves if leaf.podgroup not in grouped],
        groups=groups,
    )
    _fits(root, leaves)
    return root


def _checked(name: str, field_: str) -> str:
    if not is_dns_label(name):
        raise SyncFailed("InvalidPodGroupName", f'{field_}: "{name}" is not a DNS label')
    return name


def _fits(root: Node, leaves: list[Leaf]) -> None:
    names = [node.template for node in root.walk()] + [leaf.template for leaf in leaves]
    taken = sorted({n for n in names if names.count(n) > 1})
    if taken:
        raise SyncFailed(
            "InvalidPodGroupName",
            f"template names must be unique in the Workload: {', '.join(taken)} taken twice "
            f'(the PodGang\'s own is "{ROOT}"): rename the clique or the group config',
        )
    for node in root.walk():
        if len(node.leaves) > MAX_TEMPLATES or len(node.groups) > MAX_TEMPLATES:
            raise SyncFailed(
                "TooManyPodGroups",
                f'group "{node.template}" has {node.children} children; a list of the '
                f"Workload's templates holds at most {MAX_TEMPLATES}",
            )


def constraints(topology: str | None) -> dict[str, Any]:
    """A node's or PodGroup's required packing, in the API's words."""
    return {"schedulingConstraints": {"topology": [{"key": topology}]}} if topology else {}


def policy(min_replicas: int) -> dict[str, Any]:
    """A pod group's policy: gang of its minimum (basic when it needs none)."""
    return {"gang": {"minCount": min_replicas}} if min_replicas > 0 else {"basic": {}}


def _gang(node: Node) -> dict[str, Any]:
    return {"gang": {"minGroupCount": node.children}}


def leaf_template(leaf: Leaf, priority: dict[str, Any]) -> dict[str, Any]:
    """A podgroup's podGroupTemplate."""
    return {
        "name": leaf.template,
        "schedulingPolicy": policy(leaf.min_replicas),
        **priority,
        **constraints(leaf.topology),
    }


def template(node: Node, priority: dict[str, Any]) -> dict[str, Any]:
    """The node's compositePodGroupTemplate, with its children's templates."""
    found: dict[str, Any] = {
        "name": node.template,
        "schedulingPolicy": _gang(node),
        **priority,
        **constraints(node.topology),
    }
    if node.leaves:
        found["podGroupTemplates"] = [leaf_template(leaf, priority) for leaf in node.leaves]
    if node.groups:
        found["compositePodGroupTemplates"] = [template(g, priority) for g in node.groups]
    return found


def composites(
    podgang: PodGang, root: Node, api_version: str, priority: dict[str, Any]
) -> list[Manifest]:
    """A CompositePodGroup per node, parents first."""
    workload = gang_object_name(podgang, podgang.metadata.name)
    parent = {"parentCompositePodGroupName": workload}  # of every middle group
    return [
        {
            "apiVersion": api_version,
            "kind": "CompositePodGroup",
            "metadata": carried_metadata(podgang, node.name),
            "spec": {
                **(parent if node is not root else {}),
                "workloadRef": {"workloadName": workload, "templateName": node.template},
                "schedulingPolicy": _gang(node),
                **priority,
                **constraints(node.topology),
            },
        }
        for node in root.walk()
    ]


def parents(podgang: PodGang, root: Node) -> dict[str, str]:
    """Each podgroup's parent CompositePodGroup."""
    return {
        leaf.podgroup: gang_object_name(podgang, node.name)
        for node in root.walk()
        for leaf in node.leaves
    }
