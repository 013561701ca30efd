"""Views of Grove's PodCliqueSet (grove.io/v1alpha1) and PodGang (scheduler.grove.io/v1alpha1).

Field names, required fields and defaults follow Grove's CRDs: a field the CRD requires has
no default here, and a field the CRD defaults carries the same default, so a manifest read
offline (``gangway plan``) means what the API server would store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Final

import msgspec

from gangway_contracts import labels
from gangway_contracts.crdtypes import Int32, Int64, Timestamp, crd
from gangway_contracts.k8s import Condition, NamespacedName, ObjectMeta, Wire, find_condition

GROVE_GROUP: Final = "grove.io"
GROVE_VERSION: Final = "v1alpha1"
PODCLIQUESET_API_VERSION: Final = f"{GROVE_GROUP}/{GROVE_VERSION}"
PODCLIQUESET_PLURAL: Final = "podcliquesets"

SCHEDULER_GROUP: Final = "scheduler.grove.io"
SCHEDULER_VERSION: Final = "v1alpha1"
PODGANG_API_VERSION: Final = f"{SCHEDULER_GROUP}/{SCHEDULER_VERSION}"
PODGANG_PLURAL: Final = "podgangs"

ANY_ORDER: Final = "CliqueStartupTypeAnyOrder"  # the default: no clique waits
IN_ORDER: Final = "CliqueStartupTypeInOrder"
EXPLICIT: Final = "CliqueStartupTypeExplicit"
ROLLING_RECREATE: Final = "RollingRecreate"  # Grove's update strategies
ON_DELETE: Final = "OnDelete"
COHERENT: Final = "Coherent"  # in Grove's API; its behaviour is still a draft there
UPDATE_STRATEGIES: Final = (COHERENT, ROLLING_RECREATE, ON_DELETE)
GANG_PHASES: Final = ("Pending", "Starting", "Running", "Failed", "Succeeded")
SHARING_SCOPES: Final = ("AllReplicas", "PerReplica")

# Kubernetes types a PodCliqueSet embeds, by their name in the API server's OpenAPI.
POD_SPEC: Final = "io.k8s.api.core.v1.PodSpec"
INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
METRIC_SPEC: Final = "io.k8s.api.autoscaling.v2.MetricSpec"
RESOURCE_CLAIM_TEMPLATE_SPEC: Final = "io.k8s.api.resource.v1.ResourceClaimTemplateSpec"

# podSpec is passed through untouched: Gangway copies it into pods but never interprets it,
# and decoding a full PodSpec for every event would cost time for nothing.
EMPTY_OBJECT: Final = msgspec.Raw(b"{}")

# A topology level name, as a ClusterTopologyBinding's levels spell them.
LevelName = Annotated[str, crd(min_length=1, max_length=63, pattern="^[a-z][a-z0-9-]*$")]


# --- PodCliqueSet ---------------------------------------------------------------------------


class PackLevels(Wire, frozen=True, kw_only=True):
    """Topology levels (names such as ``rack``) a group must, or should, be packed into."""

    required: LevelName | None = None
    """The level every pod of the group must share one domain of (all in one rack), or the
    group is not placed."""
    preferred: LevelName | None = None
    """The level the scheduler tries to keep the group within, placing it anyway when it
    cannot."""


class TopologyConstraint(Wire, frozen=True, kw_only=True):
    """PodCliqueSet-side topology constraint: level names, resolved to node-label keys later."""

    pack: PackLevels | None = None
    """How tightly the pods are packed, by topology level name."""
    pack_domain: LevelName | None = None  # deprecated by Grove in favour of pack.required
    """Deprecated: the level the pods must share; use pack.required."""
    topology_name: str | None = None
    """The ClusterTopologyBinding whose levels the names refer to. Set on one constraint,
    the others of the PodCliqueSet inherit it."""

    @property
    def required(self) -> str | None:
        return (self.pack.required if self.pack else None) or self.pack_domain

    @property
    def preferred(self) -> str | None:
        return self.pack.preferred if self.pack else None


class AutoScalingConfig(Wire, frozen=True, kw_only=True):
    """Horizontal autoscaling of a clique or scaling group, as Grove defines it: podgang makes
    a HorizontalPodAutoscaler of it that scales the PodClique or scaling group."""

    max_replicas: Int32
    """The most replicas the autoscaler may set."""
    min_replicas: Int32 | None = None
    """The fewest replicas the autoscaler may set; the configured replicas when unset."""
    metrics: Annotated[
        list[Annotated[msgspec.Raw, crd(kubernetes=METRIC_SPEC)]], crd(list_type="atomic")
    ] = []
    """What the autoscaler measures (autoscaling/v2 MetricSpec, as a HorizontalPodAutoscaler
    takes it)."""


class PodCliqueSpec(Wire, frozen=True, kw_only=True):
    """The pods of one clique: how many, what they run, and what a gang needs of them."""

    replicas: Int32
    """Pods of this clique in each PodCliqueSet replica (in each scaling-group replica when
    the clique belongs to a scaling group)."""
    role_name: Annotated[str, crd(required=True)] = ""
    """The clique's role in the workload (prefill, decode, router…), for people and tools."""
    min_available: Int32 | None = None  # Grove: defaults to replicas
    """Pods of this clique a gang cannot run without: the scheduler places at least this
    many together or none. All of them when unset."""
    starts_after: list[str] = []
    """Cliques whose minimum of pods must be ready, in the same gang, before this clique's
    containers start (with cliqueStartupType CliqueStartupTypeExplicit)."""
    pod_spec: Annotated[msgspec.Raw, crd(kubernetes=POD_SPEC, required=True)] = msgspec.field(
        default_factory=lambda: EMPTY_OBJECT
    )
    """The spec of every pod of the clique: a core/v1 PodSpec, checked against the schema of
    the Kubernetes version Gangway is built with. `kubectl explain pod.spec` describes its
    fields."""
    auto_scaling_config: AutoScalingConfig | None = None
    """Autoscaling of the clique's pods (a standalone clique's; a scaling group's members
    scale with the group)."""


class ResourceSharing(Wire, frozen=True, kw_only=True):
    """A resource claim shared by pods (Grove's resource sharing: refused by Gangway)."""

    name: str
    """The ResourceClaimTemplate (of resourceClaimTemplates, or in the namespace) shared."""
    scope: Annotated[str, crd(enum=SHARING_SCOPES)]
    """Who shares one claim: every replica (AllReplicas) or the pods of each replica
    (PerReplica)."""
    namespace: str | None = None
    """The namespace of the ResourceClaimTemplate, when it is not the PodCliqueSet's."""


class GroupSharingFilter(Wire, frozen=True, kw_only=True):
    """Which members of a scaling group share the claim."""

    child_clique_names: list[str] = []
    """The cliques of the group that share it; all of them when empty."""


class GroupResourceSharing(ResourceSharing, frozen=True, kw_only=True):
    """A resource claim shared by the pods of a scaling group."""

    filter: GroupSharingFilter | None = None
    """Which of the group's cliques share the claim; all when unset."""


class SetSharingFilter(GroupSharingFilter, frozen=True, kw_only=True):
    """Which cliques and scaling groups of a PodCliqueSet share the claim."""

    child_scaling_group_names: list[str] = []
    """The scaling groups that share it; all of them when empty."""


class SetResourceSharing(ResourceSharing, frozen=True, kw_only=True):
    """A resource claim shared across a PodCliqueSet."""

    filter: SetSharingFilter | None = None
    """Which cliques and scaling groups share the claim; all when unset."""


class RollingUpdateConfiguration(Wire, frozen=True, kw_only=True):
    """How one standalone clique, or one scaling group, is rolled when its template changes
    (Grove's per-component settings; RollingRecreate only)."""

    max_unavailable: Annotated[int | str | None, crd(kubernetes=INT_OR_STRING)] = None
    """How many of its units may be down at once during a roll: pods of a standalone
    clique, replicas of a scaling group; a count (at least 1) or a percentage of the desired
    count (rounded down, at least 1). 1 when unset, as Grove."""
    progress_deadline: str | None = None
    """How long its roll may go without progress (a replacement made or become ready)
    before the PodCliqueSet's UpdateInProgress condition says ProgressDeadlineExceeded (a
    duration); no deadline when unset."""

    def allowed_down(self, desired: int) -> int:
        """maxUnavailable as a count of units, for a component of ``desired`` units (a
        percentage rounded down, as Kubernetes rounds a Deployment's); at least 1, so a
        roll always moves. Admission refuses what does not read (``max_unavailable_error``);
        read anyway, it counts as 1."""
        value = self.max_unavailable
        if isinstance(value, int):
            return max(1, value)
        if value is None or max_unavailable_error(value) is not None:
            return 1
        return max(1, desired * int(value[:-1]) // 100)


def max_unavailable_error(value: int | str) -> str | None:
    """Why a maxUnavailable is not one (a count of at least 1, or a percentage from 1% to
    100%), or None."""
    if isinstance(value, int):
        return None if value >= 1 else f"must be at least 1, is {value}"
    percent = value[:-1]
    if not value.endswith("%") or not percent.isdigit():
        return f'"{value}" is neither a count nor a percentage (such as 2 or "25%")'
    if not 1 <= int(percent) <= 100:
        return f'must be a percentage from 1% to 100%, is "{value}"'
    return None


class PodCliqueTemplateSpec(Wire, frozen=True, kw_only=True):
    """One clique: a named set of identical pods with one role."""

    name: str
    """The clique's name, unique in the PodCliqueSet; pod names are made from it."""
    spec: PodCliqueSpec
    """The clique's pods."""
    labels: dict[str, str] = {}
    """Labels added to every pod of the clique."""
    annotations: dict[str, str] = {}
    """Annotations added to every pod of the clique."""
    topology_constraint: TopologyConstraint | None = None
    """How the clique's pods are packed onto the topology."""
    resource_sharing: list[ResourceSharing] = []
    """Resource claims the clique's pods share (not provided by Gangway: refused)."""
    rolling_update: RollingUpdateConfiguration | None = None
    """How the clique is rolled, when it is standalone (a scaling group's cliques are
    rolled as the group says)."""


class PodCliqueScalingGroupConfig(Wire, frozen=True, kw_only=True):
    """Cliques that scale together: each replica of the group is one more gang of them."""

    name: str
    """The group's name, unique in the PodCliqueSet; its replicas are named from it."""
    clique_names: list[str]
    """The cliques (by name) that belong to the group."""
    replicas: Int32 = 1
    """Replicas of the group in each PodCliqueSet replica."""
    min_available: Int32 = 1
    """Replicas of the group the workload cannot run without: these are scheduled in the
    PodCliqueSet replica's base gang, the rest each as a gang of its own."""
    annotations: dict[str, str] = {}
    """Annotations added to every pod of the group."""
    topology_constraint: TopologyConstraint | None = None
    """How each replica of the group is packed onto the topology."""
    scale_config: AutoScalingConfig | None = None
    """Autoscaling of the group's replicas."""
    resource_sharing: list[GroupResourceSharing] = []
    """Resource claims the group's pods share (not provided by Gangway: refused)."""
    rolling_update: RollingUpdateConfiguration | None = None
    """How the group's replicas are rolled."""


class HeadlessServiceConfig(Wire, frozen=True, kw_only=True):
    """The headless Service made for each PodCliqueSet replica."""

    publish_not_ready_addresses: bool = True
    """Whether the service lists pods before they are ready."""


class ResourceClaimTemplateConfig(Wire, frozen=True, kw_only=True):
    """A ResourceClaimTemplate defined in the PodCliqueSet, for resourceSharing to name."""

    name: str
    """The name resourceSharing entries refer to it by."""
    template_spec: Annotated[msgspec.Raw, crd(kubernetes=RESOURCE_CLAIM_TEMPLATE_SPEC)]
    """The claim template (resource.k8s.io/v1 ResourceClaimTemplateSpec)."""


class PodCliqueSetTemplateSpec(Wire, frozen=True, kw_only=True):
    """What one replica of the PodCliqueSet is made of."""

    cliques: Annotated[list[PodCliqueTemplateSpec], crd(list_map_keys=["name"])]
    """The cliques of each replica; names are unique."""
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] = []
    """Cliques that scale together, as extra gangs beyond each replica's base gang."""
    priority_class_name: str | None = None
    """The PriorityClass of every pod and gang."""
    topology_constraint: TopologyConstraint | None = None
    """How each replica is packed onto the topology."""
    termination_delay: str | None = None
    """How long a gang may stay below a clique's minAvailable (scheduled, ready or starting)
    after it ran, before it is recycled whole (a duration; 4h when unset, as Grove)."""
    clique_startup_type: Annotated[str, crd(enum=[ANY_ORDER, IN_ORDER, EXPLICIT])] = ANY_ORDER
    """The order cliques start in: any order (CliqueStartupTypeAnyOrder), as listed
    (CliqueStartupTypeInOrder), or by startsAfter (CliqueStartupTypeExplicit); the gang is
    placed whole either way."""
    headless_service_config: HeadlessServiceConfig | None = None
    """The headless Service of each replica, through which pods find each other by name."""
    resource_claim_templates: list[ResourceClaimTemplateConfig] = []
    """Claim templates resourceSharing names (not provided by Gangway: refused)."""
    resource_sharing: list[SetResourceSharing] = []
    """Resource claims shared across the PodCliqueSet (not provided by Gangway: refused)."""


class UpdateStrategy(Wire, frozen=True, kw_only=True):
    """How a change to a clique's pod template reaches running pods."""

    type: Annotated[str, crd(enum=UPDATE_STRATEGIES)] = ROLLING_RECREATE
    """RollingRecreate: one PodCliqueSet replica at a time, its outdated gangs replaced
    whole, as many at once as each component's rollingUpdate.maxUnavailable allows. OnDelete:
    a pod is made from the new template only once it is deleted. Coherent: stored, refused
    by Gangway's admission until Grove settles its behaviour, and never rolled."""


class PodCliqueSetSpec(Wire, frozen=True, kw_only=True):
    """The desired workload."""

    template: PodCliqueSetTemplateSpec
    """What each replica is made of."""
    replicas: Int32 = 0
    """Identical copies of the workload, each scheduled as gangs of its own."""
    update_strategy: UpdateStrategy | None = None  # None: Grove's default, RollingRecreate
    """How template changes reach running pods; RollingRecreate when unset."""

    @property
    def rolls_updates(self) -> bool:
        """Whether a template change replaces running gangs (RollingRecreate) or waits for
        their pods to be deleted (OnDelete; Coherent, which Gangway does not roll as
        anything else)."""
        return self.update_strategy is None or self.update_strategy.type == ROLLING_RECREATE


class PodGangStatusSummary(Wire, frozen=True, kw_only=True):
    """One gang of the PodCliqueSet."""

    name: str
    """The PodGang's name."""
    phase: Annotated[str, crd(enum=GANG_PHASES)]
    """The PodGang's phase (Pending until it has one)."""
    conditions: list[Condition] = []
    """The PodGang's conditions."""


class LastError(Wire, frozen=True, kw_only=True):
    """An error Grove's operator met reconciling the PodCliqueSet."""

    code: str
    """The error's code."""
    description: str
    """What went wrong."""
    observed_at: Timestamp
    """When it happened."""


class ReplicaUpdateProgress(Wire, frozen=True, kw_only=True):
    """The update of one PodCliqueSet replica."""

    replica_index: Int32
    """Which replica."""
    update_started_at: Timestamp | None = None
    """When its gangs began to be replaced."""
    update_ended_at: Timestamp | None = None
    """When every gang of it was current and scheduled again."""


class UpdateProgress(Wire, frozen=True, kw_only=True):
    """How far a template change has reached (Grove's cliques and scaling groups counted)."""

    total_pod_cliques_count: Int32 = 0
    """Clique instances of the workload (one per clique, scaling-group replica and
    PodCliqueSet replica)."""
    updated_pod_cliques_count: Int32 = 0
    """Clique instances whose every pod is made from the current template."""
    total_pod_clique_scaling_groups_count: Int32 = 0
    """Scaling groups of the workload (one per group and PodCliqueSet replica)."""
    updated_pod_clique_scaling_groups_count: Int32 = 0
    """Scaling groups whose every pod is made from the current template."""
    update_started_at: Timestamp | None = None
    """When the current update began."""
    update_ended_at: Timestamp | None = None
    """When the current update finished."""
    currently_updating: list[ReplicaUpdateProgress] = []
    """The replicas being replaced now."""


class PodCliqueSetStatus(Wire, frozen=True, kw_only=True):
    """What the workload is, as Gangway last observed it."""

    observed_generation: Int64 | None = None
    """The spec generation this status describes."""
    replicas: Int32 | None = None
    """Replicas the workload has (the scale subresource reads it)."""
    available_replicas: Int32 = 0
    """Replicas whose base gang is scheduled."""
    updated_replicas: Int32 = 0
    """Replicas whose every gang is prepared and made from the current template."""
    hpa_pod_selector: str | None = None
    """The label selector of the workload's pods (the scale subresource's selector, for a
    HorizontalPodAutoscaler)."""
    update_progress: UpdateProgress | None = None
    """How far the latest template change has reached."""
    current_generation_hash: str | None = None
    """Grove's operator's hash of the spec it last acted on (Gangway does not set it)."""
    last_errors: list[LastError] = []
    """Errors Grove's operator met (Gangway reports through conditions instead)."""
    conditions: list[Condition] = []
    """Conditions of the workload (gangs scheduled, topology resolved, admission…)."""
    pod_gang_statuses: list[PodGangStatusSummary] = []
    """Every gang of the workload and its phase."""


class PodCliqueSet(Wire, frozen=True, kw_only=True):
    """A multi-role AI workload: replicas of a set of cliques, each replica scheduled as one
    or more gangs (all of a gang's pods or none)."""

    metadata: ObjectMeta
    spec: PodCliqueSetSpec
    """The desired workload."""
    api_version: str = PODCLIQUESET_API_VERSION
    kind: str = "PodCliqueSet"
    status: PodCliqueSetStatus | None = None
    """What the workload is (written by Gangway's podgang service)."""

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
    """The node label whose value every pod of the group must share, or the group is not
    placed."""
    preferred: str | None = None
    """The node label whose value the scheduler tries to keep the group within."""


class PodGangTopologyConstraint(Wire, frozen=True, kw_only=True):
    """How a gang, or part of it, is packed onto nodes."""

    pack_constraint: PackConstraint | None = None
    """The node labels its pods must, or should, share."""


class PodGroup(Wire, frozen=True, kw_only=True):
    """One clique of a gang: the pods that belong to it and how many must be placed together."""

    name: str
    """The group's name, unique in the gang."""
    pod_references: list[NamespacedName]
    """The pods of the group."""
    min_replicas: Int32
    """Pods of the group the gang cannot be placed without."""
    topology_constraint: PodGangTopologyConstraint | None = None
    """How the group's pods are packed."""


class TopologyConstraintGroupConfig(Wire, frozen=True, kw_only=True):
    """Pod groups of a gang that are packed together (a scaling-group replica)."""

    name: str
    """The set's name."""
    pod_group_names: list[str]
    """The pod groups it holds."""
    topology_constraint: PodGangTopologyConstraint | None = None
    """How their pods are packed together."""


class PodGangSpec(Wire, frozen=True, kw_only=True):
    """The pods a scheduler places all together or not at all."""

    podgroups: list[PodGroup]
    """The gang's groups of pods, one per clique instance."""
    topology_constraint: PodGangTopologyConstraint | None = None
    """How the whole gang is packed."""
    topology_constraint_group_configs: list[TopologyConstraintGroupConfig] = []
    """Sets of pod groups packed together."""
    priority_class_name: str | None = None
    """The PriorityClass of the gang."""
    reuse_reservation_ref: NamespacedName | None = None
    """A gang whose reserved placement this one may take over."""


class PodGangStatus(Wire, frozen=True, kw_only=True):
    """Where the gang is, as the backends last saw it."""

    phase: str
    """Pending, Starting, Running, Failed or Succeeded."""
    conditions: list[Condition] = []
    """The gang's conditions (Initialized once the scheduler's resources exist, Scheduled…)."""
    placement_score: float | None = None
    """How well the placement met the preferred topology, when the scheduler says."""
    last_scheduled: Timestamp | None = None
    """When the Scheduled condition last became True (never unset once set)."""
    last_ready: Timestamp | None = None
    """When the Ready condition last became True (never unset once set)."""


class PodGang(Wire, frozen=True, kw_only=True):
    """A gang of pods, for a scheduler to place all together or not at all. Gangway's podgang
    service makes one per gang of a PodCliqueSet; each backend translates it into its
    scheduler's own resource."""

    metadata: ObjectMeta
    spec: PodGangSpec
    """Which pods, and how they are packed."""
    api_version: str = PODGANG_API_VERSION
    kind: str = "PodGang"
    status: PodGangStatus | None = None
    """Where the gang is (written by Gangway's backends)."""

    def condition(self, type_: str) -> Condition | None:
        """The condition of that type at whatever generation: for what the spec does not
        decide (the scheduler's view of the gang)."""
        return find_condition(self.status.conditions if self.status else [], type_)

    def current_condition(self, type_: str) -> Condition | None:
        """The condition of that type if it describes the PodGang as it is now (observed at
        its current generation); None when unset or stale."""
        found = find_condition(self.status.conditions if self.status else [], type_)
        if found is None or found.observed_generation != self.metadata.generation:
            return None
        return found

    def holds_now(self, type_: str) -> bool:
        """The condition of that type is True for the PodGang as it is now (observed at its
        current generation)."""
        return self.current_status(type_) is True

    def current_status(self, type_: str) -> bool | None:
        """The condition of that type's status at the current generation; None if unset or
        stale."""
        found = self.current_condition(type_)
        return None if found is None else found.status == "True"


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


def clique_of(podgang: PodGang, pcs: PodCliqueSet, podgroup_name: str) -> PodCliqueTemplateSpec:
    """The clique template a podgroup's pods are made from, by Grove's names:
    ``<pcs>-<replica>-<clique>``, or ``<pcs>-<replica>-<group>-<index>-<clique>`` in a
    scaling group. KeyError for a podgroup of no clique (a PodGang not Gangway's own)."""
    replica = podgang.metadata.labels.get(labels.PCS_REPLICA_INDEX, "")
    rest = podgroup_name.removeprefix(f"{pcs.metadata.name}-{replica}-")
    template = pcs.spec.template
    grouped = {c: g.name for g in template.pod_clique_scaling_groups for c in g.clique_names}
    for clique in template.cliques:
        group = grouped.get(clique.name)
        if group is None and rest == clique.name:
            return clique
        if group is not None and re.fullmatch(
            rf"{re.escape(group)}-\d+-{re.escape(clique.name)}", rest
        ):
            return clique
    raise KeyError(podgroup_name)
