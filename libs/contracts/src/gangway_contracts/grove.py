"""Views of Grove's PodCliqueSet (grove.io/v1alpha1) and PodGang (scheduler.grove.io/v1alpha1).

Field names, required fields and defaults follow Grove's CRDs: a field the CRD requires has
no default here, and a field the CRD defaults carries the same default, so a manifest read
offline (``gangway plan``) means what the API server would store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

from gangway_contracts import labels
from gangway_contracts.k8s import Condition, NamespacedName, ObjectMeta, Wire, find_condition

GROVE_GROUP: Final = "grove.io"
GROVE_VERSION: Final = "v1alpha1"
PODCLIQUESET_API_VERSION: Final = f"{GROVE_GROUP}/{GROVE_VERSION}"
PODCLIQUESET_PLURAL: Final = "podcliquesets"

SCHEDULER_GROUP: Final = "scheduler.grove.io"
SCHEDULER_VERSION: Final = "v1alpha1"
PODGANG_API_VERSION: Final = f"{SCHEDULER_GROUP}/{SCHEDULER_VERSION}"
PODGANG_PLURAL: Final = "podgangs"

ANY_ORDER: Final = "CliqueStartupTypeAnyOrder"  # the clique startup type Gangway supports
ROLLING_RECREATE: Final = "RollingRecreate"  # Grove's update strategies
ON_DELETE: Final = "OnDelete"

# podSpec is passed through untouched: Gangway copies it into pods but never interprets it,
# and decoding a full PodSpec for every event would cost time for nothing.
EMPTY_OBJECT: Final = msgspec.Raw(b"{}")


# --- PodCliqueSet ---------------------------------------------------------------------------


class PackLevels(Wire, frozen=True, kw_only=True):
    """Topology levels (names such as ``rack``) a group must, or should, be packed into."""

    required: str | None = None
    preferred: str | None = None


class TopologyConstraint(Wire, frozen=True, kw_only=True):
    """PodCliqueSet-side topology constraint: level names, resolved to node-label keys later."""

    pack: PackLevels | None = None
    pack_domain: str | None = None  # deprecated by Grove in favour of pack.required
    topology_name: str | None = None

    @property
    def required(self) -> str | None:
        return (self.pack.required if self.pack else None) or self.pack_domain

    @property
    def preferred(self) -> str | None:
        return self.pack.preferred if self.pack else None


class PodCliqueSpec(Wire, frozen=True, kw_only=True):
    replicas: int
    role_name: str = ""
    min_available: int | None = None  # Grove: defaults to replicas
    starts_after: list[str] = []
    pod_spec: msgspec.Raw = msgspec.field(default_factory=lambda: EMPTY_OBJECT)
    auto_scaling_config: dict[str, Any] | None = None  # a Grove feature Gangway refuses


class PodCliqueTemplateSpec(Wire, frozen=True, kw_only=True):
    name: str
    spec: PodCliqueSpec
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    topology_constraint: TopologyConstraint | None = None
    resource_sharing: list[msgspec.Raw] = []  # a Grove feature Gangway refuses


class PodCliqueScalingGroupConfig(Wire, frozen=True, kw_only=True):
    name: str
    clique_names: list[str]
    replicas: int = 1
    min_available: int = 1
    annotations: dict[str, str] = {}
    topology_constraint: TopologyConstraint | None = None
    scale_config: dict[str, Any] | None = None  # Grove features Gangway refuses
    resource_sharing: list[msgspec.Raw] = []


class PodCliqueSetTemplateSpec(Wire, frozen=True, kw_only=True):
    cliques: list[PodCliqueTemplateSpec]
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] = []
    priority_class_name: str | None = None
    topology_constraint: TopologyConstraint | None = None
    termination_delay: str | None = None
    clique_startup_type: str = ANY_ORDER
    headless_service_config: dict[str, Any] | None = None  # Grove features Gangway does not
    resource_claim_templates: list[msgspec.Raw] = []  # provide: admission says so
    resource_sharing: list[msgspec.Raw] = []


class UpdateStrategy(Wire, frozen=True, kw_only=True):
    type: str = ROLLING_RECREATE


class PodCliqueSetSpec(Wire, frozen=True, kw_only=True):
    template: PodCliqueSetTemplateSpec
    replicas: int = 0
    update_strategy: UpdateStrategy | None = None  # None: Grove's default, RollingRecreate

    @property
    def rolls_updates(self) -> bool:
        """Whether a template change replaces running gangs (RollingRecreate) or waits for
        their pods to be deleted (OnDelete)."""
        return self.update_strategy is None or self.update_strategy.type != ON_DELETE


class PodGangStatusSummary(Wire, frozen=True, kw_only=True):
    name: str
    phase: str
    conditions: list[Condition] = []


class PodCliqueSetStatus(Wire, frozen=True, kw_only=True):
    observed_generation: int | None = None
    replicas: int | None = None
    available_replicas: int = 0
    updated_replicas: int = 0
    conditions: list[Condition] = []
    pod_gang_statuses: list[PodGangStatusSummary] = []


class PodCliqueSet(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta
    spec: PodCliqueSetSpec
    api_version: str = PODCLIQUESET_API_VERSION
    kind: str = "PodCliqueSet"
    status: PodCliqueSetStatus | None = None

    @property
    def topology_name(self) -> str | None:
        """The ClusterTopologyBinding (and KAI Topology) its pack levels refer to, if named.
        Grove lets any constraint name it and the rest inherit it; one PodCliqueSet uses one
        topology (admission refuses two names), so the first named is the one."""
        return next((name for _, name in topology_names(self)), None)


def topology_constraints(pcs: PodCliqueSet) -> Iterator[tuple[str, TopologyConstraint]]:
    """Every topology constraint a PodCliqueSet sets, with its field path."""
    template = pcs.spec.template
    if template.topology_constraint:
        yield "spec.template.topologyConstraint", template.topology_constraint
    for i, clique in enumerate(template.cliques):
        if clique.topology_constraint:
            yield f"spec.template.cliques[{i}].topologyConstraint", clique.topology_constraint
    for i, group in enumerate(template.pod_clique_scaling_groups):
        if group.topology_constraint:
            field = f"spec.template.podCliqueScalingGroups[{i}].topologyConstraint"
            yield field, group.topology_constraint


def topology_names(pcs: PodCliqueSet) -> Iterator[tuple[str, str]]:
    """(field, name) of every topologyName a PodCliqueSet's constraints set."""
    for field, constraint in topology_constraints(pcs):
        if constraint.topology_name:
            yield f"{field}.topologyName", constraint.topology_name


def longest_instance_names(pcs: PodCliqueSet) -> Iterator[tuple[str, str]]:
    """(field, name within a PodCliqueSet replica) of every clique instance and
    scaling-group replica at the highest scaling-group replica index: ``<clique>``,
    ``<group>-<g>`` and ``<group>-<g>-<clique>``. Names only grow with the index, so checking
    these checks every name a scheduler derives from them."""
    template = pcs.spec.template
    grouped = {name for g in template.pod_clique_scaling_groups for name in g.clique_names}
    for i, clique in enumerate(template.cliques):
        if clique.name not in grouped:
            yield f"spec.template.cliques[{i}].name", clique.name
    for i, group in enumerate(template.pod_clique_scaling_groups):
        field = f"spec.template.podCliqueScalingGroups[{i}]"
        replica = f"{group.name}-{max(group.replicas - 1, 0)}"
        yield f"{field}.name", replica
        for member in group.clique_names:
            yield f"{field}.cliqueNames", f"{replica}-{member}"


def podcliqueset_of(meta: ObjectMeta) -> str:
    """The name of the PodCliqueSet an object (a PodGang) belongs to: its controller owner
    reference of that kind, as Grove's operator and Gangway both set it; else Grove's part-of
    label (a hint); "" when it has neither."""
    owner = next(
        (
            ref.name
            for ref in meta.owner_references
            if ref.controller
            and ref.kind == "PodCliqueSet"
            and ref.api_version.startswith(f"{GROVE_GROUP}/")
        ),
        None,
    )
    return owner if owner is not None else meta.labels.get(labels.PART_OF, "")


# --- PodGang --------------------------------------------------------------------------------


class PackConstraint(Wire, frozen=True, kw_only=True):
    """PodGang-side constraint: node-label keys, as the scheduler sees them."""

    required: str | None = None
    preferred: str | None = None


class PodGangTopologyConstraint(Wire, frozen=True, kw_only=True):
    pack_constraint: PackConstraint | None = None


class PodGroup(Wire, frozen=True, kw_only=True):
    """One clique of a gang: the pods that belong to it and how many must be placed together."""

    name: str
    pod_references: list[NamespacedName]
    min_replicas: int
    topology_constraint: PodGangTopologyConstraint | None = None


class TopologyConstraintGroupConfig(Wire, frozen=True, kw_only=True):
    name: str
    pod_group_names: list[str]
    topology_constraint: PodGangTopologyConstraint | None = None


class PodGangSpec(Wire, frozen=True, kw_only=True):
    podgroups: list[PodGroup]
    topology_constraint: PodGangTopologyConstraint | None = None
    topology_constraint_group_configs: list[TopologyConstraintGroupConfig] = []
    priority_class_name: str | None = None
    reuse_reservation_ref: NamespacedName | None = None


class PodGangStatus(Wire, frozen=True, kw_only=True):
    phase: str
    conditions: list[Condition] = []
    placement_score: float | None = None


class PodGang(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta
    spec: PodGangSpec
    api_version: str = PODGANG_API_VERSION
    kind: str = "PodGang"
    status: PodGangStatus | None = None

    def current_condition(self, type_: str) -> Condition | None:
        """The condition of that type if it describes the PodGang as it is now (observed at
        its current generation); None when unset or stale."""
        found = find_condition(self.status.conditions if self.status else [], type_)
        if found is None or found.observed_generation != self.metadata.generation:
            return None
        return found


# --- ClusterTopologyBinding (cluster-scoped): topology level names → node-label keys --------


class TopologyLevel(Wire, frozen=True, kw_only=True):
    domain: str  # the level name workloads use, e.g. "rack"
    key: str  # the node label that identifies it, e.g. "example.com/rack"


class ClusterTopologyBindingSpec(Wire, frozen=True, kw_only=True):
    levels: list[TopologyLevel]


class ClusterTopologyBinding(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta
    spec: ClusterTopologyBindingSpec
    api_version: str = PODCLIQUESET_API_VERSION
    kind: str = "ClusterTopologyBinding"

    def key_for(self, domain: str) -> str | None:
        return next((level.key for level in self.spec.levels if level.domain == domain), None)
