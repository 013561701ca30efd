"""PodCliqueSet → the PodGangs and pods it should have. Pure: no I/O, same input, same plan.

Per PodCliqueSet replica ``r`` (Grove's names, GREP-375's gang layout):

- base PodGang ``<pcs>-<r>``: every standalone clique, plus the cliques of every scaling-group
  replica below the group's minAvailable — the smallest unit that can run at all;
- one scaled PodGang ``<pcs>-<r>-<group>-<i>`` per scaling-group replica ``minAvailable + i``:
  extra capacity, scheduled only after the base gang;
- podgroup = one clique instance, named by its full name: ``<pcs>-<r>-<clique>`` standalone,
  ``<pcs>-<r>-<group>-<g>-<clique>`` in scaling-group replica ``g``; minReplicas is the
  clique's minAvailable (default: replicas); pods ``<podgroup>-<index>``;
- how many pods a clique instance has, and how many replicas a scaling group: the
  template's, or what its PodClique's or scaling group's ``/scale`` set (``scaling.py``).

Topology pack levels (``rack``) become node-label keys through the ClusterTopologyBinding
the PodCliqueSet names; a constraint that cannot be resolved is left out and reported.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

import msgspec

from gangway_contracts.grove import (
    ClusterTopologyBinding,
    PackConstraint,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    PodGangTopologyConstraint,
    TopologyConstraint,
)
from gangway_podgang.startup import Waits, minimums, starts_after, waits_on


@dataclass(frozen=True, slots=True)
class PlannedPodGroup:
    name: str  # the clique instance's full name
    clique: PodCliqueTemplateSpec
    min_replicas: int
    pods: tuple[str, ...]
    topology: PodGangTopologyConstraint | None
    scaling_group: str | None = None  # the scaling group's full name, <pcs>-<r>-<group>
    scaling_group_replica: int | None = None
    # The pods one replica of its scaling group is made of (Grove's GROVE_PCSG_TEMPLATE_NUM_PODS).
    scaling_group_pods: int = 0
    template_hash: str = ""  # of what its pods are made from: a change replaces them
    # The PodCliques (and ready pods of each) its pods wait on before they start (startup.py).
    waits_on: Waits = ()


def template_hash(clique: PodCliqueTemplateSpec, priority_class: str | None = None) -> str:
    """A short digest of what a clique's pods are made of (podSpec, labels, annotations,
    the PodCliqueSet's priority class), independent of how the JSON was written: pods carry
    it in Grove's pod-template-hash label, and a pod whose label differs was made from an
    older template. A pod's priority cannot change, so a new priority class makes new pods,
    as Grove's hash holds it too."""
    made_of: dict[str, object] = {
        "podSpec": msgspec.json.decode(clique.spec.pod_spec),
        "labels": clique.labels,
        "annotations": clique.annotations,
    }
    if priority_class:  # only when named: the pods of a PodCliqueSet without one keep theirs
        made_of["priorityClassName"] = priority_class
    return hashlib.sha256(msgspec.json.encode(made_of, order="sorted")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """One scaling-group replica's cliques packed together (topologyConstraintGroupConfigs)."""

    name: str
    podgroups: tuple[str, ...]
    topology: PodGangTopologyConstraint


@dataclass(frozen=True, slots=True)
class PlannedGang:
    name: str
    pcs_replica: int
    base: str  # the base gang's name; equal to name for the base gang itself
    podgroups: tuple[PlannedPodGroup, ...]
    topology: PodGangTopologyConstraint | None
    group_configs: tuple[GroupConfig, ...]
    scaling_group: str | None = None  # for scaled gangs: the scaling group's full name
    # Every pod of the gang with its podgroup and index (made once: each decision reads it
    # for every gang).
    pods: tuple[tuple[PlannedPodGroup, int, str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        pods = tuple(
            (group, index, pod) for group in self.podgroups for index, pod in enumerate(group.pods)
        )
        object.__setattr__(self, "pods", pods)

    @property
    def is_base(self) -> bool:
        return self.name == self.base


@dataclass(frozen=True)
class UnresolvedTopology:
    """A pack constraint left out of the plan: the reason becomes a PodCliqueSet condition."""

    field: str
    reason: str


@dataclass(frozen=True)
class Plan:
    gangs: tuple[PlannedGang, ...]
    unresolved_topology: tuple[UnresolvedTopology, ...] = ()
    scales: Mapping[str, int] = field(default_factory=dict)  # the /scale honoured


class _Topology:
    """Resolves pack levels to node-label keys, collecting what it cannot resolve."""

    def __init__(self, pcs: PodCliqueSet, binding: ClusterTopologyBinding | None) -> None:
        self.name = pcs.topology_name
        self.binding = binding
        self.unresolved: dict[str, UnresolvedTopology] = {}

    def resolve(
        self, constraint: TopologyConstraint | None, field: str
    ) -> PodGangTopologyConstraint | None:
        if constraint is None:
            return None
        required, preferred = constraint.required, constraint.preferred
        if not required and not preferred:
            return None
        keys = {"required": required, "preferred": preferred}
        for which, level in list(keys.items()):
            if level is None:
                continue
            key = self.binding.key_for(level) if self.binding else None
            if key is None:
                where = f"{field}.pack.{which}"
                self.unresolved[where] = UnresolvedTopology(where, self._why(level))
            keys[which] = key
        if not keys["required"] and not keys["preferred"]:
            return None
        return PodGangTopologyConstraint(
            pack_constraint=PackConstraint(required=keys["required"], preferred=keys["preferred"])
        )

    def _why(self, level: str) -> str:
        if self.binding is None:
            name = f' "{self.name}"' if self.name else ""
            return f'level "{level}" cannot be resolved: no ClusterTopologyBinding{name} is known'
        known = ", ".join(level.domain for level in self.binding.spec.levels)
        return (
            f'level "{level}" is not defined by ClusterTopologyBinding '
            f'"{self.binding.metadata.name}" (levels: {known})'
        )


def _clique_instance(
    fqn: str,
    clique: PodCliqueTemplateSpec,
    topology: PodGangTopologyConstraint | None,
    digest: str,
    *,
    group: str | None = None,
    group_replica: int | None = None,
    group_pods: int = 0,
    waits: Waits = (),
    replicas: int | None = None,
) -> PlannedPodGroup:
    spec = clique.spec
    count = spec.replicas if replicas is None else replicas
    min_replicas = spec.replicas if spec.min_available is None else spec.min_available
    return PlannedPodGroup(
        name=sys.intern(fqn),  # the PodGang's podgroup holds the same
        clique=clique,
        min_replicas=min_replicas,
        # Interned: the read model's pods and PodGangs then hold these same strings.
        pods=tuple(sys.intern(f"{fqn}-{i}") for i in range(count)),
        topology=topology,
        scaling_group=group,
        scaling_group_replica=group_replica,
        scaling_group_pods=group_pods,
        template_hash=digest,
        waits_on=waits,
    )


def plan_podgangs(
    pcs: PodCliqueSet,
    binding: ClusterTopologyBinding | None = None,
    scales: Mapping[str, int] | None = None,
) -> Plan:
    """``scales``: replicas set through the PodCliques' and scaling groups' ``/scale``, by
    full name, instead of the template's (``scaling.py``)."""
    template = pcs.spec.template
    scaled_to = scales or {}
    cliques = {c.name: (i, c) for i, c in enumerate(template.cliques)}
    grouped = {name for g in template.pod_clique_scaling_groups for name in g.clique_names}
    digests = {c.name: template_hash(c, template.priority_class_name) for c in template.cliques}
    # What one replica of each scaling group is made of (Grove's GROVE_PCSG_TEMPLATE_NUM_PODS).
    group_pods = {
        g.name: sum(cliques[n][1].spec.replicas for n in g.clique_names if n in cliques)
        for g in template.pod_clique_scaling_groups
    }
    topology = _Topology(pcs, binding)
    parents, minimum = starts_after(template), minimums(template)
    group_of = {n: g for g in template.pod_clique_scaling_groups for n in g.clique_names}
    clique_topology = {
        name: topology.resolve(
            c.topology_constraint, f"spec.template.cliques[{i}].topologyConstraint"
        )
        for name, (i, c) in cliques.items()
    }
    gang_topology = topology.resolve(
        template.topology_constraint, "spec.template.topologyConstraint"
    )
    group_topology = {
        g.name: topology.resolve(
            g.topology_constraint, f"spec.template.podCliqueScalingGroups[{i}].topologyConstraint"
        )
        for i, g in enumerate(template.pod_clique_scaling_groups)
    }

    def group_replica(
        group: PodCliqueScalingGroupConfig, prefix: str, g: int
    ) -> tuple[list[PlannedPodGroup], list[GroupConfig]]:
        group_fqn = f"{prefix}-{group.name}"
        scaled = (group_fqn, g, group) if g >= group.min_available else None
        members = [
            _clique_instance(
                fqn := f"{group_fqn}-{g}-{name}",
                cliques[name][1],
                clique_topology[name],
                digests[name],
                group=group_fqn,
                group_replica=g,
                group_pods=group_pods[group.name],
                waits=waits_on(prefix, parents[name], minimum, group_of, scaled),
                replicas=scaled_to.get(fqn),
            )
            for name in group.clique_names
            if name in cliques  # a dangling name is admission's error to report
        ]
        constraint = group_topology[group.name]
        configs = (
            [GroupConfig(f"{group_fqn}-{g}", tuple(m.name for m in members), constraint)]
            if constraint is not None
            else []
        )
        return members, configs

    gangs: list[PlannedGang] = []
    for r in range(pcs.spec.replicas):
        prefix = sys.intern(f"{pcs.metadata.name}-{r}")  # the base gang's: as the model's
        base_groups = [
            _clique_instance(
                f"{prefix}-{c.name}",
                c,
                clique_topology[c.name],
                digests[c.name],
                waits=waits_on(prefix, parents[c.name], minimum, group_of),
                replicas=scaled_to.get(f"{prefix}-{c.name}"),
            )
            for c in template.cliques
            if c.name not in grouped
        ]
        base_configs: list[GroupConfig] = []
        scaled: list[PlannedGang] = []
        for group in template.pod_clique_scaling_groups:
            group_fqn = f"{prefix}-{group.name}"
            for g in range(scaled_to.get(group_fqn, group.replicas)):
                members, configs = group_replica(group, prefix, g)
                if g < group.min_available:
                    base_groups.extend(members)
                    base_configs.extend(configs)
                else:
                    scaled.append(
                        PlannedGang(
                            name=sys.intern(f"{group_fqn}-{g - group.min_available}"),
                            pcs_replica=r,
                            base=prefix,
                            podgroups=tuple(members),
                            topology=gang_topology,
                            group_configs=tuple(configs),
                            scaling_group=group_fqn,
                        )
                    )
        gangs.append(
            PlannedGang(
                name=prefix,
                pcs_replica=r,
                base=prefix,
                podgroups=tuple(base_groups),
                topology=gang_topology,
                group_configs=tuple(base_configs),
            )
        )
        gangs.extend(scaled)
    return Plan(
        gangs=tuple(gangs),
        unresolved_topology=tuple(topology.unresolved.values()),
        scales=dict(scaled_to),
    )
